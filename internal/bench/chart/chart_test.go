package chart

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/bench"
)

// TestChartPeers checks the chart's columns: every client → server pair
// with READ or WRITE results, ours first, knfsd over TCP last, each at
// its deepest depth; NULL-only pairs and failed cells draw nothing.
func TestChartPeers(t *testing.T) {
	var rep bench.Report
	add := func(client, server, work string, depth, inline int, ops float64, err string) {
		rep.Results = append(rep.Results, bench.Result{Cell: bench.Cell{Client: client, Server: server, Workload: work, Size: 4096,
			InFlight: depth, Inline: inline}, OpsPerS: ops, Sends: 2, RDMAReads: 0, RDMAWrites: 1, LocalInv: 0, Err: err})
	}
	add(bench.ClientKernel, bench.ServerKnfsdTCP, bench.WorkRead, 8, 0, 900, "")
	add(bench.ClientGo, bench.ServerKnfsd, bench.WorkWrite, 1, 1024, 300, "")
	add(bench.ClientKernel, bench.ServerKnfsd, bench.WorkRead, 32, 1024, 500, "")
	add(bench.ClientKernel, bench.ServerGo, bench.WorkRead, 8, 1024, 100, "")
	add(bench.ClientKernel, bench.ServerGo, bench.WorkRead, 32, 4096, 200, "")
	add(bench.ClientGo, bench.ServerGo, bench.WorkRead, 8, 1024, 150, "")
	add(bench.ClientGo, bench.ServerGo, bench.WorkRead, 64, 1024, 150, "failed") // a failed cell sets no depth
	add(bench.ClientGo, bench.ServerGo, bench.WorkNull, 128, 1024, 4000, "")     // nor does NULL
	add(bench.ClientGo, "other", bench.WorkNull, 1, 1024, 4000, "")              // a NULL-only pair is no column
	var got []string
	for _, p := range chartPeers(rep) {
		got = append(got, p.String()+" "+strconv.Itoa(p.depth))
	}
	want := []string{"kernel client → rdma-nfsd 32", "go client → rdma-nfsd 8", "kernel client → knfsd 32",
		"go client → knfsd 1", "kernel client → knfsd-tcp 8"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("columns:\n got %q\nwant %q", got, want)
	}

	file := filepath.Join(t.TempDir(), "chart.svg")
	if err := Draw(file, rep); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range append(want, "RDMA operations per RPC", "TCP (no inline setting)", "inline 4 KiB") {
		w = strings.TrimSuffix(strings.TrimSuffix(w, " 32"), " 8")
		w = strings.TrimSuffix(w, " 1")
		if !strings.Contains(string(svg), w) {
			t.Errorf("the chart lacks %q", w)
		}
	}
	if err := Draw(file, bench.Report{Results: rep.Results[7:]}); err == nil {
		t.Error("a report of NULL only drew a chart")
	}
}
