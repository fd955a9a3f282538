package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/bench"
)

// TestInteropMatrix runs the interoperability matrix (bench.Matrix, as
// rpcrdma-bench matrix) in one boot: {Linux kernel client, Go NFS client (package
// nfs/client)} × {rdma-nfsd, knfsd} × inline {1024, 4096, 65536} × {R on, off}. Each
// cell mounts and checks the thresholds both sides negotiated (the
// kernel's xprtrdma_inline_thresh tracepoint and rdma-nfsd's connection
// line; the Go client's transport.Stats and its R bit), writes and reads
// back seven files (kernel: O_DIRECT; Go: client.File's UNSTABLE WRITEs and
// COMMIT, then direct READs and client.File's read-ahead) and compares them
// with the server's disk, checks from the client's counters (mountstats;
// transport.Stats) that a 2 KiB WRITE and READ use a chunk at 1024 only
// and an 8 KiB READ below 65536 only, and that a 128 KiB READ's Write
// chunk is invalidated by the server (R on) or by the client (R off).
// kernel × knfsd × R off is n/a (knfsd has no such setting; the Go client
// can refuse remote invalidation, so go-nfs × knfsd × R off runs). The
// Go client's cells run twice, the second time offering RPC-over-RDMA
// version 2 (docs/v2.md): rdma-nfsd, restarted with -rpcrdma-v2, must run
// it, knfsd must refuse it (version 1 on the same connection). The table
// is logged.
func TestInteropMatrix(t *testing.T) {
	vmtest.Require(t)
	l := newBenchLog(t, "bench.Matrix")
	rep, err := bench.Matrix(t.Context(), bench.MatrixSpec([]int{1024, 4096, 65536}), bench.MatrixOptions{Log: &l.log,
		Console: l.console})
	if err != nil {
		t.Fatalf("the matrix: %v", err)
	}
	bench.WriteMatrix(&l.out, rep.Matrix)
	if err := bench.CheckMatrix(rep); err != nil {
		t.Error(err)
	}
	count := map[string]int{}
	for _, m := range rep.Matrix {
		count[m.Status]++
		na := m.Client == "kernel" && m.Server == "knfsd" && !m.R
		if na != (m.Status == "n/a") {
			t.Errorf("%s × %s × %d × R=%v: status %q", m.Client, m.Server, m.Inline, m.R, m.Status)
		}
		count[m.Client]++
		if m.Client != "kernel" && m.Client != "go-nfs" {
			t.Errorf("%s × %s × %d × R=%v: client %q, want kernel or go-nfs (the Go NFS client)", m.Client, m.Server, m.Inline, m.R, m.Client)
		}
		if m.Status == "ok" && !strings.Contains(m.Checks, "negotiated, 7 files, chunks, invalidation") {
			t.Errorf("%s × %s × %d × R=%v: checks %q", m.Client, m.Server, m.Inline, m.R, m.Checks)
		}
		if want := fmt.Sprintf("send/recv %d/%d R=%v ", m.Inline, m.Inline, m.R); m.Client == "go-nfs" && !strings.HasPrefix(m.Ours, want) {
			t.Errorf("go-nfs × %s × %d × R=%v: the Go client reports %q, want %q...", m.Server, m.Inline, m.R, m.Ours, want)
		}
		// The version axis: rdma-nfsd -rpcrdma-v2 takes version 2,
		// knfsd refuses it; without the offer, version 1.
		want := " version 1"
		if m.V2 && m.Server == "rdma-nfsd" {
			want = " version 2"
		}
		if m.Client == "go-nfs" && !strings.HasSuffix(m.Ours, want) {
			t.Errorf("go-nfs × %s × %d × R=%v (v2 offered: %v): the Go client reports %q, want ...%q", m.Server, m.Inline, m.R, m.V2, m.Ours, want)
		}
		if m.V2 {
			count["v2"]++
		}
	}
	if len(rep.Matrix) != 36 || count["ok"] != 33 || count["n/a"] != 3 || count["go-nfs"] != 24 || count["v2"] != 12 {
		t.Errorf("%d cells: %v; want 36: 33 ok, 3 n/a, 24 of the Go NFS client, 12 of them offering version 2", len(rep.Matrix), count)
	}
}
