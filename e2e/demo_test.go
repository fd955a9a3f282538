package e2e

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
)

// benchReport is the part of rpcrdma-bench's JSON report the tests read.
type benchReport struct {
	Results []struct {
		Client, Server, Workload string
		Size                     int     `json:"size"`
		Inline                   int     `json:"inline"`
		Ops                      uint64  `json:"ops"`
		Rounds                   int     `json:"rounds"`
		RPCsPerOp                float64 `json:"rpcs_per_op"`
		Sends                    float64 `json:"sends_per_rpc"`
		RDMAReads                float64 `json:"rdma_reads_per_rpc"`
		RDMAWrites               float64 `json:"rdma_writes_per_rpc"`
		RemoteInv                float64 `json:"remote_inv_per_rpc"`
		LocalInv                 float64 `json:"local_inv_per_rpc"`
		ServerAllocs             float64 `json:"server_allocs_per_rpc"`
		Err                      string  `json:"error"`
	} `json:"results"`
}

// buildBench builds cmd/rpcrdma-bench for the host into a temporary
// directory.
func buildBench(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rpcrdma-bench")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/rpcrdma-bench")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/rpcrdma-bench: %v\n%s", err, out)
	}
	return bin
}

// runBench runs the built command from the module root and returns its
// standard output; its standard error is logged.
func runBench(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = ".."
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	t.Logf("rpcrdma-bench %s (%.0f s):\n%s\nstderr:\n%s", strings.Join(args, " "), time.Since(t0).Seconds(),
		stdout.String(), lastN(stderr.String(), 30))
	return stdout.String(), err
}

func lastN(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// TestDemo runs make demo's path (rpcrdma-bench demo) so that it cannot
// rot: rdma-nfsd over rxe mounted by the kernel client, a tree copied in
// and out and compared, the negotiated settings printed, and the short
// benchmark, whose counted RDMA operations per RPC must be the minimum of
// each size class: two Sends per RPC; a 2 KiB WRITE one RDMA Read at
// inline 1024 and none at 4096; a 2 KiB READ one RDMA Write at 1024 and
// none at 4096; a 64 KiB READ one RDMA Write at both; a 64 KiB WRITE one
// RDMA Read at both; remote invalidation of every chunk (no local one);
// NULL two Sends.
func TestDemo(t *testing.T) {
	vmtest.Require(t)
	bin := buildBench(t)
	report := filepath.Join(t.TempDir(), "demo.json")
	out, err := runBench(t, bin, "demo", "-json", report,
		"-console", filepath.Join(os.TempDir(), "rxevm-TestDemo-console.log"))
	if err != nil {
		t.Fatalf("rpcrdma-bench demo: %v", err)
	}
	for _, want := range []string{"identical (the copy and rdma-nfsd's disk)", "send_inline=4096 recv_inline=4096 send_with_invalidate=true",
		"neg send/recv=4096/4096", "xprt:\trdma ", "demo done in",
		"boot ", "copy-out ", "10-cells ", "qemu+power-off "} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep benchReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 10 {
		t.Fatalf("%d results, want 10 (NULL, READ and WRITE of 2 and 64 KiB, at 1024 and 4096)", len(rep.Results))
	}
	// A stray RPC of the kernel client (a GETATTR) may fall inside a
	// cell; 2% leaves room for it and none for a missed chunk.
	const tol = 0.02
	near := func(got, want float64) bool { return math.Abs(got-want) <= tol }
	for _, r := range rep.Results {
		name := r.Client + "/" + r.Workload + "/" + strconv.Itoa(r.Size) + "@" + strconv.Itoa(r.Inline)
		if r.Err != "" || r.Ops == 0 || r.Rounds != 1 {
			t.Errorf("%s: %d ops in %d rounds, error %q", name, r.Ops, r.Rounds, r.Err)
			continue
		}
		var reads, writes float64
		chunk := r.Size > r.Inline-512 // the NFS header does not fit beside it
		switch {
		case r.Workload == "write" && chunk:
			reads = 1
		case r.Workload == "read" && chunk:
			writes = 1
		}
		if !near(r.RPCsPerOp, 1) || !near(r.Sends, 2) || !near(r.RDMAReads, reads) || !near(r.RDMAWrites, writes) ||
			!near(r.RemoteInv, reads+writes) || !near(r.LocalInv, 0) {
			t.Errorf("%s: per RPC: %.3f RPCs/op, %.3f Sends, %.3f RDMA Reads, %.3f RDMA Writes, %.3f remote and %.3f local invalidations; want 1, 2, %v, %v, %v, 0",
				name, r.RPCsPerOp, r.Sends, r.RDMAReads, r.RDMAWrites, r.RemoteInv, r.LocalInv, reads, writes, reads+writes)
		}
		if r.ServerAllocs <= 0 {
			t.Errorf("%s: rdma-nfsd's allocations per RPC not measured (%v)", name, r.ServerAllocs)
		}
	}
}
