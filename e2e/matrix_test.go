package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
)

// TestInteropMatrix runs the interoperability matrix (rpcrdma-bench
// matrix) in one boot: {Linux kernel client, our requester} × {rdma-nfsd,
// knfsd} × inline {1024, 4096, 65536} × {R on, off}. Each kernel cell
// mounts, checks the thresholds both sides negotiated (the kernel's
// xprtrdma_inline_thresh tracepoint and rdma-nfsd's connection line),
// writes and reads back seven files with O_DIRECT and compares them with
// the server's disk, checks from mountstats that a 2 KiB WRITE and READ
// use a chunk at 1024 only and an 8 KiB READ below 65536 only, and that a
// 128 KiB READ's Write chunk is invalidated by the server (R on) or by the
// client (R off). kernel × knfsd × R off is n/a (knfsd has no such
// setting). The Go rows check our requester's negotiation and 100 NULLs;
// the Go NFS client (issue 11) adds its rows through goClientCells in
// cmd/rpcrdma-bench. The table is logged.
func TestInteropMatrix(t *testing.T) {
	vmtest.Require(t)
	bin := buildBench(t)
	report := filepath.Join(t.TempDir(), "matrix.json")
	out, err := runBench(t, bin, "matrix", "-json", report,
		"-console", filepath.Join(os.TempDir(), "rxevm-TestInteropMatrix-console.log"))
	if err != nil {
		t.Fatalf("rpcrdma-bench matrix: %v", err)
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Matrix []struct {
			Client, Server, Status, Checks string
			Inline                         int
			R                              bool
		} `json:"matrix"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, m := range rep.Matrix {
		count[m.Status]++
		na := m.Client == "kernel" && m.Server == "knfsd" && !m.R
		if na != (m.Status == "n/a") {
			t.Errorf("%s × %s × %d × R=%v: status %q", m.Client, m.Server, m.Inline, m.R, m.Status)
		}
		if m.Client == "kernel" && m.Status == "ok" && !strings.Contains(m.Checks, "7 files, chunks, invalidation") {
			t.Errorf("%s × %s × %d: checks %q", m.Client, m.Server, m.Inline, m.Checks)
		}
	}
	if len(rep.Matrix) != 24 || count["ok"] != 21 || count["n/a"] != 3 {
		t.Errorf("%d cells: %v; want 24: 21 ok, 3 n/a", len(rep.Matrix), count)
	}
	if !strings.Contains(out, "interoperability matrix") {
		t.Error("no table printed")
	}
}
