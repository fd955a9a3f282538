package e2e

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// knfsdSetup starts knfsd (NFSv3, /export on TCP 2049 and RDMA 20049) and
// fills 10.0.0.1's neighbour cache, so that the first RDMA-CM connect from
// 10.0.0.2 is answered at once instead of after the IB CM's retry (~5 s).
const knfsdSetup = `
rxevm-nfsd-start
ping -c 1 -W 2 -I 10.0.0.1 10.0.0.2 > /dev/null || true
`

// knfsdGuestTests are the tests of e2e/internal/knfsdclient; each must pass
// in the guest (a -run that matched nothing would otherwise pass silently).
var knfsdGuestTests = []string{
	"TestKnfsdNullGetattr",
	"TestKnfsdRead",
	"TestKnfsdReadMax",
	"TestKnfsdWrite",
	"TestKnfsdNoRemoteInvalidate",
	"TestKnfsdPipelined",
	"TestKnfsdDDP",
	"TestKnfsdSymlinkDDP",
	"TestKnfsdErrChunk",
	"TestKnfsdVersionTwo",
}

// knfsdV2Golden holds knfsd's answers to the version 2 messages of
// TestKnfsdVersionTwo, one hex line each (rpcrdma2's
// TestKnfsdAnswersToVersion2 reads them); RPCRDMA_UPDATE_GOLDEN=1
// rewrites it from the run.
const knfsdV2Golden = "../rpcrdma2/testdata/knfsd-v2-answers.hex"

// TestKnfsd runs our requester against the Linux kernel's NFS server in the
// VM, in one boot: transport.Dial with the rdma-core provider from rxe1 to
// knfsd on rxe0 port 20049; NFSv3 NULL, GETATTR, LOOKUP, FSINFO, CREATE,
// READ, WRITE, SYMLINK, READLINK and REMOVE, each answer checked against the guest's own view
// of the export; every form of call and reply RPC-over-RDMA has (inline,
// Reply chunk, Long Call, Read chunk, Write chunk, RDMA_ERROR ERR_CHUNK),
// with and without remote invalidation; 100 calls in flight against
// knfsd's 64 credits. knfsd's svcrdma tracepoints are the server's side of
// each check (what it decoded, pulled, pushed and invalidated, and that it
// reported no error). The private data knfsd sends (f6 ab 0e 18 01 00 03
// 03) is checked byte for byte and logged decoded. knfsd's answers to
// version 2 messages (TestKnfsdVersionTwo) must be those of knfsdV2Golden.
func TestKnfsd(t *testing.T) {
	r := vmtest.RunGuestTests(t, vmtest.GuestTests{
		Pkg:     "./internal/knfsdclient",
		CGO:     true,
		Setup:   knfsdSetup,
		Args:    []string{"-test.timeout=18m"},
		Options: vm.Options{Timeout: 20 * time.Minute},
	})
	requireGuestPassed(t, r, knfsdGuestTests)
	var answers []string
	for _, l := range r.Lines() {
		if strings.Contains(l, "knfsd's CM private data") || strings.Contains(l, "negotiated with knfsd") {
			t.Log(strings.TrimSpace(l))
		}
		if _, rest, ok := strings.Cut(l, "KNFSDV2 answer "); ok {
			t.Log(strings.TrimSpace(l))
			f := strings.Fields(rest)
			answers = append(answers, f[len(f)-1])
		}
	}
	checkV2Golden(t, answers)
}

// checkV2Golden compares knfsd's answers to version 2 messages with
// knfsdV2Golden, or rewrites it.
func checkV2Golden(t *testing.T, answers []string) {
	t.Helper()
	if len(answers) != 2 {
		t.Fatalf("%d KNFSDV2 answers in the guest's output, want 2", len(answers))
	}
	if os.Getenv("RPCRDMA_UPDATE_GOLDEN") == "1" {
		text := "# knfsd's answers (Linux 6.1, svcrdma) to a version 2 RDMA2_CONNPROP and RDMA2_MSG:\n" +
			"# version 1's RDMA_ERROR ERR_VERS 1-1 with rdma_vers echoed. Written by e2e.TestKnfsd\n" +
			"# with RPCRDMA_UPDATE_GOLDEN=1 (TestKnfsdVersionTwo).\n" + strings.Join(answers, "\n") + "\n"
		if err := os.WriteFile(knfsdV2Golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(knfsdV2Golden)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.Split(string(b), "\n") {
		if l, _, _ = strings.Cut(l, "#"); strings.TrimSpace(l) != "" {
			want = append(want, strings.TrimSpace(l))
		}
	}
	if !slices.Equal(answers, want) {
		t.Errorf("knfsd's answers to version 2 changed:\n got %v\nwant %v (%s)", answers, want, knfsdV2Golden)
	}
}

// requireGuestPassed fails t unless each named guest test reported
// "--- PASS".
func requireGuestPassed(t *testing.T, r *vmtest.Result, tests []string) {
	t.Helper()
	passed := map[string]bool{}
	for _, l := range r.Lines() {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "---" && f[1] == "PASS:" {
			passed[f[2]] = true
		}
	}
	for _, name := range tests {
		if !passed[name] {
			t.Errorf("guest test %s did not pass (or did not run)", name)
		}
	}
}
