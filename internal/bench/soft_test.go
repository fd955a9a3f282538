package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// softRdmaNfsd builds cmd/rdma-nfsd from this checkout (without cgo) and
// returns it set up to serve a scratch export on the soft provider, on
// loopback ports of its choosing. It skips the test under -short.
func softRdmaNfsd(t *testing.T) *rdmaNfsd {
	t.Helper()
	if testing.Short() {
		t.Skip("builds cmd/rdma-nfsd")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rdma-nfsd")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/rdma-nfsd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv := newRdmaNfsd(bin, "soft", "127.0.0.1", filepath.Join(dir, "export"))
	srv.logPath = filepath.Join(dir, "rdma-nfsd.log")
	srv.metrics, srv.rdmaPort, srv.tcpPort = "127.0.0.1:0", 0, 0
	return srv
}

// TestSoftNull runs the bench's NULL cells on the soft provider: rdma-nfsd
// (built from this checkout) as a child process, our requester here, each
// inline setting negotiated, and the counted RDMA operations exact: a NULL
// is one Send each way, nothing else.
func TestSoftNull(t *testing.T) {
	srv := softRdmaNfsd(t)
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
		if res.ServerAllocs == NA || res.ServerCPUus == NA || res.ServerCtxSw == NA || res.ServerCtxSw < 0 || res.Packets != NA {
			t.Errorf("%s: server allocs %v cpu %v context switches %v packets %v", res.Label(), res.ServerAllocs, res.ServerCPUus, res.ServerCtxSw, res.Packets)
		}
		// Our requester runs in this process: its CPU and allocations
		// are counted, and a NULL call costs some CPU.
		if res.ClientCPUus == NA || res.ClientCPUus <= 0 || res.ClientAllocs == NA || res.ClientCtxSw == NA || res.ClientCtxSw < 0 {
			t.Errorf("%s: client cpu %v µs, allocs %v, context switches %v per RPC", res.Label(), res.ClientCPUus, res.ClientAllocs, res.ClientCtxSw)
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

// readReplyBound is more than the largest overhead of a READ reply beside
// its data (RPC-over-RDMA header, reply header with the AUTH_NONE verifier
// nfs.Binding plans for AUTH_SYS calls, as Linux does, READ3resok's status,
// post_op_attr, count, eof and length: about 190 bytes) and less than
// 512: where a READ takes a Write chunk at 1024 and 4096.
const readReplyBound = 256

// TestSoftGoNFS runs the Go NFS client's cells (package nfs/client) on the soft
// provider against rdma-nfsd built from this checkout: READ and WRITE of
// 512 B, 2 KiB and 64 KiB, GETATTR and the 2 KiB create, 1 and 4 in
// flight, at inline 1024 and 4096. Every cell must run without an error,
// and the counted RDMA operations per RPC must be the minimum of each size
// class: 2 Sends; a READ whose reply does not fit inline one RDMA Write
// (the Write chunk), a WRITE whose call does not fit one RDMA Read (the
// Read chunk), each chunk invalidated by the server's Send With
// Invalidate and none by the client; the create's 2 RPCs (CREATE and
// WRITE) half an RDMA Read per RPC at 1024 and none at 4096. A READ's
// reply fits inline when its bound does (RFC 8166 §3.5.3): nfs.Binding
// bounds it by the data and readReplyBound, so a 512 B READ goes inline at
// 1024 as the Linux client's does (before the binding planned for the
// largest verifier, 400 bytes, and it took a Write chunk).
func TestSoftGoNFS(t *testing.T) {
	srv := softRdmaNfsd(t)
	spec := Spec{Provider: "soft", Duration: 150 * time.Millisecond, Rounds: 1, Inlines: []int{1024, 4096},
		Sizes: []int{512, 2 << 10, 64 << 10}, InFlight: []int{1, 4}, CreateSize: 2 << 10,
		Workloads: []string{WorkRead, WorkWrite, WorkGetattr, WorkCreate}, Servers: []string{ServerGo}, Clients: []string{ClientGo}}
	results := runSoft(t, srv, spec)
	// The write and create cells leave nothing behind (the VM's exports
	// are tmpfs: a full run once filled them, NFS3ERR_NOSPC).
	var left []string
	_ = filepath.WalkDir(srv.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (strings.HasPrefix(d.Name(), "wfile-") || strings.HasPrefix(d.Name(), "create-")) {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("left in the export after the cells: %v", left)
	}
	if len(results) != 32 {
		t.Fatalf("%d results, want 32 (2 inline settings × (3 READ + 3 WRITE sizes + GETATTR + create) × 2 depths)", len(results))
	}
	for _, res := range results {
		t.Logf("%s: %s ops/s, %.2f RPC/op, per RPC %.2f Sends %.2f RdRd %.2f RdWr %.2f RInv %.2f LInv; %s",
			res.Label(), fmtNum(res.OpsPerS), res.RPCsPerOp, res.Sends, res.RDMAReads, res.RDMAWrites, res.RemoteInv, res.LocalInv, res.Negotiated)
		if res.Err != "" || res.Ops == 0 || res.Errors != 0 {
			t.Errorf("%s: %d ops, %d errors, %q", res.Label(), res.Ops, res.Errors, res.Err)
			continue
		}
		rpcsPerOp, reads, writes := 1.0, 0.0, 0.0
		chunk := res.Size > res.Inline-512 // the call's NFS header does not fit beside the data
		switch {
		case res.Workload == WorkRead && res.Size+readReplyBound > res.Inline:
			writes = 1
		case res.Workload == WorkWrite && chunk:
			reads = 1
		case res.Workload == WorkCreate:
			rpcsPerOp = 2
			if chunk {
				reads = 0.5
			}
		}
		if res.RPCsPerOp != rpcsPerOp || res.Sends != 2 || res.RDMAReads != reads || res.RDMAWrites != writes ||
			res.RemoteInv != reads+writes || res.LocalInv != 0 {
			t.Errorf("%s: %v RPCs/op; per RPC %v Sends, %v RDMA Reads, %v RDMA Writes, %v/%v remote/local invalidations; want %v, 2, %v, %v, %v/0",
				res.Label(), res.RPCsPerOp, res.Sends, res.RDMAReads, res.RDMAWrites, res.RemoteInv, res.LocalInv, rpcsPerOp, reads, writes, reads+writes)
		}
		if want := fmt.Sprintf("send/recv %d/%d R=true", res.Inline, res.Inline); !strings.HasPrefix(res.Negotiated, want) {
			t.Errorf("%s: negotiated %q, want %s", res.Label(), res.Negotiated, want)
		}
		if res.Workload != WorkGetattr && res.MBPerS <= 0 {
			t.Errorf("%s: %v MB/s", res.Label(), res.MBPerS)
		}
	}
}

// runSoft validates spec and runs it on the soft provider against srv, and
// returns the results in the order the runner emitted them.
func runSoft(t *testing.T, srv server, spec Spec) []Result {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	var results []Result
	r := &runner{spec: spec, label: "soft", provider: &soft.Provider{}, servers: map[string]server{ServerGo: srv},
		emit: func(res Result) { results = append(results, res) }}
	if err := r.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return results
}
