package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
)

// compareGuestTests are the guest tests of TestRdmaNfsdVsKnfsd, in the
// order they run in the one boot.
var compareGuestTests = []string{
	"TestNoMountport",
	"TestNoMountport/portmap",
	"TestNoMountport/rpcbind",
	"TestVsKnfsd",
}

// TestRdmaNfsdVsKnfsd compares cmd/rdma-nfsd with knfsd in one boot
// (e2e/internal/nfsdguest, compare_guest_test.go). First the mount with
// no mountport=, through rdma-nfsd's own portmapper and through the
// system's rpcbind (before knfsd's rpc.mountd registers MOUNT); then
// knfsd (rxevm-nfsd-start) and rdma-nfsd, each exporting a tmpfs and
// mounted by the kernel client over RDMA with the same options, run the
// same workloads in interleaved repetitions: the guest's RDMANFSD lines,
// logged here, give the medians and ratios (sequential write and read,
// small-file create, directory listing), the per-procedure call counts
// (checked in the guest: at most 1.2x knfsd's) and the xprt counters
// (local_inv_needed and fixup_copy_count at most knfsd's). The CPU
// profiles of rdma-nfsd, one per workload, are summarized with go tool
// pprof -top and, with $RPCRDMA_NFSD_PROFILE_DIR set, copied there.
func TestRdmaNfsdVsKnfsd(t *testing.T) {
	root := filepath.Dir(t.TempDir()) // the share is a sibling: vmtest.ShareDir
	r := vmtest.RunGuestTests(t, nfsdGuestTests(22*time.Minute,
		append([]string{"-test.timeout=20m", "-test.run=^(TestNoMountport|TestVsKnfsd)$"}, guestRunArgs()...)...))
	if os.Getenv("RPCRDMA_GUEST_RUN") == "" {
		requireGuestPassed(t, r, compareGuestTests)
	}
	report := r.Tagged("RDMANFSD")
	t.Logf("rdma-nfsd against knfsd, the kernel's NFSv3 client over RDMA, one boot (VM run %.0f s):\n  %s",
		r.Elapsed.Seconds(), strings.Join(report, "\n  "))

	profiles, _ := filepath.Glob(filepath.Join(root, "*", "rdma-nfsd-*.pprof"))
	keep := os.Getenv("RPCRDMA_NFSD_PROFILE_DIR")
	for _, p := range profiles {
		bin := filepath.Join(filepath.Dir(p), "rdma-nfsd")
		out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=30", bin, p).CombinedOutput()
		if err != nil {
			t.Errorf("go tool pprof %s: %v\n%s", p, err, out)
			continue
		}
		t.Logf("%s:\n%s", filepath.Base(p), out)
		if keep != "" {
			for _, f := range []string{p, bin} {
				b, err := os.ReadFile(f)
				if err == nil {
					err = os.WriteFile(filepath.Join(keep, filepath.Base(f)), b, 0o644)
				}
				if err != nil {
					t.Errorf("keeping %s: %v", f, err)
				}
			}
		}
	}
}
