package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// TestSoftNull runs the bench's NULL cells on the soft provider: rdma-nfsd
// (built from this checkout) as a child process, our requester here, each
// inline setting negotiated, and the counted RDMA operations exact: a NULL
// is one Send each way, nothing else.
func TestSoftNull(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/rdma-nfsd")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rdma-nfsd")
	cmd := exec.Command("go", "build", "-o", bin, "../rdma-nfsd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv := newRdmaNfsd(bin, "soft", "127.0.0.1", filepath.Join(dir, "export"))
	srv.logPath = filepath.Join(dir, "rdma-nfsd.log")
	srv.metrics, srv.rdmaPort, srv.tcpPort = "127.0.0.1:0", 0, 0
	spec := Spec{Provider: "soft", Duration: 200 * time.Millisecond, Rounds: 2, Inlines: []int{1024, 4096},
		InFlight: []int{1, 4}, Workloads: []string{WorkNull}, Servers: []string{ServerGo}, Clients: []string{ClientGo}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	var results []Result
	var seen []int
	r := &runner{spec: spec, label: "soft", provider: &soft.Provider{}, servers: map[string]server{ServerGo: srv},
		emit:     func(res Result) { results = append(results, res) },
		progress: func(done, total int, c Cell) { seen = append(seen, done) },
	}
	if err := r.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(results) != 8 || len(seen) != 8 || seen[7] != 8 || r.total != 8 {
		t.Fatalf("%d results, progress %v of %d; want 8", len(results), seen, r.total)
	}
	// ABBA: round 1 runs 4096 first.
	if results[0].Inline != 1024 || results[4].Inline != 4096 || results[4].Round != 1 {
		t.Errorf("order: %d, %d (round %d)", results[0].Inline, results[4].Inline, results[4].Round)
	}
	for _, res := range mergeRounds(results) {
		if res.Err != "" || res.Ops == 0 || res.Errors != 0 {
			t.Errorf("%s: %d ops, %d errors, %q", res.Label(), res.Ops, res.Errors, res.Err)
			continue
		}
		if res.Sends != 2 || res.RDMAReads != 0 || res.RDMAWrites != 0 || res.RemoteInv != 0 || res.LocalInv != 0 || res.RPCsPerOp != 1 {
			t.Errorf("%s: per RPC %v Sends, %v RDMA Reads, %v Writes, %v/%v invalidations, %v RPCs per op; want 2, 0, 0, 0/0, 1",
				res.Label(), res.Sends, res.RDMAReads, res.RDMAWrites, res.RemoteInv, res.LocalInv, res.RPCsPerOp)
		}
		if res.ServerAllocs == NA || res.ServerCPUus == NA || res.Packets != NA {
			t.Errorf("%s: server allocs %v cpu %v packets %v", res.Label(), res.ServerAllocs, res.ServerCPUus, res.Packets)
		}
		want := "send/recv 1024/1024"
		if res.Inline == 4096 {
			want = "send/recv 4096/4096"
		}
		if !strings.HasPrefix(res.Negotiated, want) {
			t.Errorf("%s: negotiated %q, want %s", res.Label(), res.Negotiated, want)
		}
	}
}
