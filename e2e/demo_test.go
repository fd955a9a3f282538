package e2e

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/bench"
)

// benchLog collects a bench run's output (out) and its progress lines
// (log) and logs them when the test ends; console is the file the run
// saves the VM console to.
type benchLog struct {
	out, log bytes.Buffer
	console  string
}

// newBenchLog returns the benchLog of the calling test. If the test fails,
// the tail of what the guest printed (vmtest.Result.GuestTail: the
// console without the kernel's messages) is logged as well.
func newBenchLog(t *testing.T, name string) *benchLog {
	t.Helper()
	l := &benchLog{console: filepath.Join(os.TempDir(), "rxevm-"+t.Name()+"-console.log")}
	t0 := time.Now()
	t.Cleanup(func() {
		t.Logf("%s (%.0f s):\n%s\nlog:\n%s", name, time.Since(t0).Seconds(), l.out.String(), guesttest.Tail(l.log.String(), 30))
		if !t.Failed() {
			return
		}
		if b, err := os.ReadFile(l.console); err == nil {
			t.Logf("VM console saved to %s; the guest's output, last 60 lines:\n%s", l.console, (&vmtest.Result{Console: b}).GuestTail(60))
		}
	})
	return l
}

// TestDemo runs make demo's path (bench.Demo, as rpcrdma-demo) so that it cannot
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
	l := newBenchLog(t, "bench.Demo")
	rep, err := bench.Demo(t.Context(), bench.DemoOptions{Out: &l.out, Log: &l.log,
		Console: l.console})
	if err != nil {
		t.Fatalf("the demo: %v", err)
	}
	out := l.out.String()
	for _, want := range []string{"identical (the copy and rdma-nfsd's disk)", "send_inline=4096 recv_inline=4096 send_with_invalidate=true",
		"neg send/recv=4096/4096", "xprt:\trdma ", "demo done in",
		"boot ", "copy-out ", "10-cells ", "qemu+power-off "} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	if len(rep.Results) != 10 {
		t.Fatalf("%d results, want 10 (NULL, READ and WRITE of 2 and 64 KiB, at 1024 and 4096)", len(rep.Results))
	}
	// A stray RPC of the kernel client (a GETATTR: two Sends) may fall
	// inside a cell: 2%, or more when a busy host leaves the 1 s cell so
	// few operations that the stray's share is larger (2.5 / operations).
	// A chunk missed by every operation is off by 1 either way.
	for _, r := range rep.Results {
		tol := max(0.02, 2.5/float64(max(r.Ops, 1)))
		near := func(got, want float64) bool { return math.Abs(got-want) <= tol }
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
