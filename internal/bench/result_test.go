package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFill checks the per-RPC arithmetic on counters of a known cell: 100
// kernel WRITEs of 2 KiB at inline 1024 against rdma-nfsd, each one RPC
// with a Read chunk the server pulls with one RDMA Read.
func TestFill(t *testing.T) {
	before := counters{"client.rpcs": 1000, "client.sends": 1000, "client.recvs": 1000, "client.read_chunks": 5,
		"client.write_chunks": 0, "client.reply_chunks": 0, "client.local_inv": 0,
		"server.sends": 1000, "server.rdma_reads": 5, "server.rdma_writes": 0, "server.remote_inv": 0,
		"server.mallocs": 50_000, "server.cpu_ns": 1e9, "rxe.sent_pkts": 10, "rxe.rcvd_pkts": 10,
		"client.cpu_ns": 2e9, "client.mallocs": 7, "server.ctxsw": 90, "client.ctxsw": 11,
		"server.send_posts": 40, "client.send_posts": 30}
	after := counters{}
	for k, v := range before {
		after[k] = v
	}
	for k, d := range map[string]uint64{"client.rpcs": 100, "client.sends": 100, "client.recvs": 100,
		"client.read_chunks": 100, "server.sends": 100, "server.rdma_reads": 100, "server.mallocs": 2500,
		"server.cpu_ns": 5e6, "rxe.sent_pkts": 300, "rxe.rcvd_pkts": 400, "client.cpu_ns": 3e6, "client.mallocs": 1000,
		"server.ctxsw": 150, "client.ctxsw": 320, "server.send_posts": 180, "client.send_posts": 100} {
		after[k] += d
	}
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(i+1) * time.Microsecond
	}
	m := measurement{elapsed: 2 * time.Second, ops: 100, bytes: 100 * 2048, lat: lat}
	var r Result
	r.fill(m, after.sub(before))
	want := map[string][2]float64{
		"ops/s": {r.OpsPerS, 50}, "MB/s": {r.MBPerS, 0.1024}, "p50": {r.P50us, 50}, "p99": {r.P99us, 99},
		"RPC/op": {r.RPCsPerOp, 1}, "sends": {r.Sends, 2}, "reads": {r.RDMAReads, 1}, "writes": {r.RDMAWrites, 0},
		"read chunks": {r.ReadChunks, 1}, "pkts": {r.Packets, 7}, "cpu": {r.ServerCPUus, 50}, "allocs": {r.ServerAllocs, 25},
		"client cpu": {r.ClientCPUus, 30}, "client allocs": {r.ClientAllocs, 10},
		"server csw": {r.ServerCtxSw, 1.5}, "client csw": {r.ClientCtxSw, 3.2},
		"server posts": {r.ServerPosts, 1.8}, "client posts": {r.ClientPosts, 1},
	}
	for name, gw := range want {
		if math.Abs(gw[0]-gw[1]) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, gw[0], gw[1])
		}
	}
	if RDMAOps(r) != 3 {
		t.Errorf("RDMA ops per RPC = %v, want 3 (two Sends and one RDMA Read)", RDMAOps(r))
	}
}

// TestFillNotCounted: what a peer does not count is NA, never 0; the
// server's Sends fall back to the client's Receives.
func TestFillNotCounted(t *testing.T) {
	d := counters{"client.rpcs": 10, "client.sends": 10, "client.recvs": 10, "client.local_inv": 0}
	var r Result
	r.fill(measurement{elapsed: time.Second, ops: 10, firstErr: errors.New("boom"), errors: 1}, d)
	if r.Sends != 2 {
		t.Errorf("Sends = %v, want 2 from the client's Receives", r.Sends)
	}
	for name, v := range map[string]float64{"RDMAReads": r.RDMAReads, "RemoteInv": r.RemoteInv, "Packets": r.Packets,
		"ServerCPUus": r.ServerCPUus, "ServerAllocs": r.ServerAllocs, "ClientCPUus": r.ClientCPUus,
		"ClientAllocs": r.ClientAllocs, "ServerCtxSw": r.ServerCtxSw, "ClientCtxSw": r.ClientCtxSw, "ServerPosts": r.ServerPosts,
		"ClientPosts": r.ClientPosts, "p50": r.P50us} {
		if v != NA {
			t.Errorf("%s = %v, want NA", name, v)
		}
	}
	if r.LocalInv != 0 || r.Err != "boom" || r.Errors != 1 {
		t.Errorf("LocalInv %v Err %q Errors %d", r.LocalInv, r.Err, r.Errors)
	}
	if RDMAOps(r) != NA {
		t.Error("RDMAOps summed a kind that was not counted")
	}
}

func TestFillRatios(t *testing.T) {
	c := Cell{Client: ClientKernel, Server: ServerGo, Workload: WorkWrite, Size: 2048, InFlight: 8}
	rs := []Result{{Cell: c, OpsPerS: 100}, {Cell: c, OpsPerS: 160}, {Cell: c, OpsPerS: 50}}
	rs[0].Inline, rs[1].Inline, rs[2].Inline = 1024, 4096, 65536
	other := c
	other.InFlight, other.Inline = 1, 4096
	rs = append(rs, Result{Cell: other, OpsPerS: 10})
	// The Go client's cells: against the kernel's same cell, none for
	// the 65536 cell whose kernel cell failed, nor for another server's.
	g := c
	g.Client = ClientGo
	rs = append(rs, Result{Cell: g, OpsPerS: 50}, Result{Cell: g, OpsPerS: 320}, Result{Cell: g, OpsPerS: 30}, Result{Cell: g, OpsPerS: 7})
	rs[4].Inline, rs[5].Inline, rs[6].Inline, rs[7].Inline = 1024, 4096, 65536, 1024
	rs[7].Server = ServerKnfsd
	rs[2].Err = "boom"
	fillRatios(rs)
	for i, want := range []float64{1, 1.6, NA, NA, 1, 6.4, 0.6, 1} {
		if math.Abs(rs[i].Vs1024-want) > 1e-9 {
			t.Errorf("result %d: Vs1024 = %v, want %v", i, rs[i].Vs1024, want)
		}
	}
	for i, want := range []float64{NA, NA, NA, NA, 0.5, 2, NA, NA} {
		if math.Abs(rs[i].VsKernel-want) > 1e-9 {
			t.Errorf("result %d (%s): VsKernel = %v, want %v", i, rs[i].Label(), rs[i].VsKernel, want)
		}
	}
}

func TestSpecCells(t *testing.T) {
	s := fullSpec()
	go1 := s.Cells(ServerGo, 1024)
	// At 3 depths: NULL (our requester), and READ and WRITE at 7 sizes,
	// GETATTR and create for each client (the Go NFS client and the
	// kernel's).
	if want := 3 + 2*3*(7+7+1+1); len(go1) != want {
		t.Errorf("%d cells per server and inline, want %d", len(go1), want)
	}
	perClient := map[string]int{}
	for _, c := range go1 {
		perClient[c.Client+"/"+c.Workload]++
	}
	if perClient["go/read"] != 21 || perClient["go/create"] != 3 || perClient["kernel/getattr"] != 3 || perClient["go/null"] != 3 {
		t.Errorf("cells by client and workload: %v", perClient)
	}
	// knfsd over TCP: the kernel client's cells once, inline 0.
	tcp := s.Cells(ServerKnfsdTCP, 1024)
	if len(tcp) != 3*(7+7+1+1) || tcp[0].Inline != 0 || tcp[0].Client != ClientKernel || len(s.Cells(ServerKnfsdTCP, 4096)) != 0 {
		t.Errorf("knfsd-tcp: %d cells at the first setting (inline %d), %d at the second", len(tcp), tcp[0].Inline, len(s.Cells(ServerKnfsdTCP, 4096)))
	}
	if n := len(s.AllCells()); n != 2*4*len(go1)+len(tcp) {
		t.Errorf("%d cells in all, want %d", n, 2*4*len(go1)+len(tcp))
	}
	s.Provider = "soft"
	for _, c := range s.AllCells() {
		if c.Client != ClientGo || c.Server != ServerGo {
			t.Fatalf("soft spec has cell %s", c.Label())
		}
	}
	if err := quickSpec().Validate(); err != nil {
		t.Error(err)
	}
	if err := demoSpec().Validate(); err != nil {
		t.Error(err)
	}
	// The demo: the kernel client's READ and WRITE, our NULL, no Go NFS
	// cell.
	if n := len(demoSpec().AllCells()); n != 10 {
		t.Errorf("the demo has %d cells, want 10", n)
	}
	bad := quickSpec()
	bad.Inlines = []int{512}
	if bad.Validate() == nil {
		t.Error("inline 512 accepted")
	}
}

func TestParseBench(t *testing.T) {
	s, _, err := parseBench([]string{"-quick", "-d", "250ms", "-inline", "1k,16KiB", "-sizes", "512,1MiB", "-inflight", "1,32",
		"-workloads", "read,write", "-servers", "knfsd"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Duration != 250*time.Millisecond || s.Inlines[1] != 16384 || s.Sizes[1] != 1<<20 || s.InFlight[1] != 32 ||
		len(s.Workloads) != 2 || s.Servers[0] != ServerKnfsd {
		t.Errorf("%+v", s)
	}
	for _, args := range [][]string{{"-inline", "512"}, {"-workloads", "fsync"}, {"-inflight", "0"}, {"-provider", "ib"}, {"extra"}} {
		if _, _, err := parseBench(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestServerFlagsAndProfile: -server-flags reach rdma-nfsd's command
// line after the bench's own, -server-profile gives each start a profile
// file of its own (in the VM's share, or the directory itself on soft).
func TestServerFlagsAndProfile(t *testing.T) {
	dir := t.TempDir()
	for _, provider := range []string{"rdmacore", "soft"} {
		s, _, err := parseBench([]string{"-provider", provider, "-server-flags", " -concurrent-calls 1  -credits 8",
			"-server-profile", dir}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		want := guestProfileDir
		if provider == "soft" {
			want = dir
		}
		if s.ServerProfile != want || !slices.Equal(s.ServerFlags, []string{"-concurrent-calls", "1", "-credits", "8"}) {
			t.Fatalf("%s: profile %q, flags %q", provider, s.ServerProfile, s.ServerFlags)
		}
		srv := newRdmaNfsd("rdma-nfsd", provider, "127.0.0.1", dir)
		srv.profileDir, srv.extra = s.ServerProfile, s.ServerFlags
		var profiles []string
		for i, inline := range []int{1024, 4096} {
			srv.starts = i + 1
			a := srv.args(inline, i == 1)
			if !slices.Equal(a[len(a)-4:], s.ServerFlags) {
				t.Fatalf("args %q do not end with the extra flags", a)
			}
			at := slices.Index(a, "-cpuprofile")
			if at < 0 {
				t.Fatalf("args %q: no -cpuprofile", a)
			}
			profiles = append(profiles, a[at+1])
		}
		if want := []string{filepath.Join(s.ServerProfile, "rdma-nfsd-01-inline1024.pprof"),
			filepath.Join(s.ServerProfile, "rdma-nfsd-02-inline4096-noRI.pprof")}; !slices.Equal(profiles, want) {
			t.Fatalf("profiles %q, want %q", profiles, want)
		}
	}
}

func TestOutputs(t *testing.T) {
	c := Cell{Client: ClientKernel, Server: ServerGo, Workload: WorkRead, Size: 2048, InFlight: 8, Inline: 1024}
	ok := Result{Cell: c, OpsPerS: 1234.5, Sends: 2, RDMAReads: 0, RDMAWrites: 1, LocalInv: 0, RemoteInv: 1,
		ServerCPUus: NA, ServerAllocs: NA, ServerCtxSw: 2.5, ClientCtxSw: NA, Packets: NA, Vs1024: 1, VsKernel: NA}
	gc := ok
	gc.Client, gc.OpsPerS, gc.VsKernel, gc.ClientCtxSw = ClientGo, 987, 0.8, 4.25
	bad := Result{Cell: c, Err: "mount failed"}
	bad.Server = ServerKnfsd
	var tab bytes.Buffer
	writeTable(&tab, []Result{ok, bad, gc})
	for _, want := range []string{"kernel→rdma-nfsd", "1234", "error: mount failed", "1.00x", "vs kernel", "0.80x", "srv csw", "cli csw", "4.25"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	var cb bytes.Buffer
	if err := writeCSV(&cb, []Result{ok, bad, gc}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil || len(rows) != 4 || len(rows[1]) != len(csvHeader) {
		t.Fatalf("csv: %d rows, %v", len(rows), err)
	}
	col := map[string]int{}
	for i, h := range csvHeader {
		col[h] = i
	}
	// sorted: kernel's rows first, then the Go client's.
	if rows[1][col["server_cpu_us_per_rpc"]] != "" || rows[1][col["ops_vs_kernel_client"]] != "" { // NA is empty
		t.Errorf("NA written as %q, %q", rows[1][col["server_cpu_us_per_rpc"]], rows[1][col["ops_vs_kernel_client"]])
	}
	if rows[3][col["client"]] != ClientGo || rows[3][col["ops_vs_kernel_client"]] != "0.8" ||
		rows[3][col["server_ctxsw_per_rpc"]] != "2.5" || rows[3][col["client_ctxsw_per_rpc"]] != "4.25" {
		t.Errorf("the Go client's row: %v", rows[3])
	}
	if rows[1][col["server_ctxsw_per_rpc"]] != "2.5" || rows[1][col["client_ctxsw_per_rpc"]] != "" {
		t.Errorf("the kernel client's row: server csw %q, client csw %q; want 2.5 and NA", rows[1][col["server_ctxsw_per_rpc"]], rows[1][col["client_ctxsw_per_rpc"]])
	}
	var md bytes.Buffer
	writeMarkdown(&md, Report{Date: "d", Provider: "p", Host: "h", GuestKernel: "k", GuestClock: "tsc", Results: []Result{ok, bad, gc}})
	if n := strings.Count(md.String(), "\n| "); n != 4 {
		t.Errorf("markdown has %d table lines after the header line, want 4:\n%s", n, md.String())
	}
	if !strings.Contains(md.String(), "guest kernel: k, clocksource tsc;") {
		t.Errorf("markdown does not name the guest's clocksource:\n%s", md.String())
	}
}

func TestServerFlagsEnv(t *testing.T) {
	srv := newRdmaNfsd("rdma-nfsd", "soft", "127.0.0.1", t.TempDir())
	srv.extra = []string{"GOMAXPROCS=1", "-credits", "8", "GODEBUG=gctrace=1", "-x=Y=1"}
	a := srv.args(4096, false)
	if !slices.Equal(a[len(a)-3:], []string{"-credits", "8", "-x=Y=1"}) || slices.Contains(a, "GOMAXPROCS=1") {
		t.Fatalf("args %q", a)
	}
	if _, env := splitEnv(srv.extra); !slices.Equal(env, []string{"GOMAXPROCS=1", "GODEBUG=gctrace=1"}) {
		t.Fatalf("env %q", env)
	}
}

// TestResultJSON: a result goes through JSON whole, and one from a report
// written before context switches were measured decodes them as NA.
func TestResultJSON(t *testing.T) {
	r := Result{Cell: Cell{Client: ClientGo, Server: ServerKnfsd, Workload: WorkNull, InFlight: 8, Inline: 4096},
		OpsPerS: 10, ServerCtxSw: 1.5, ClientCtxSw: 0, ServerAllocs: NA}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, r)
	}
	old := `{"client":"kernel","server":"knfsd","workload":"read","size":4096,"in_flight":1,"inline":1024,"ops_per_s":5,"server_allocs_per_rpc":-1}`
	var o Result
	if err := json.Unmarshal([]byte(old), &o); err != nil {
		t.Fatal(err)
	}
	if o.ServerCtxSw != NA || o.ClientCtxSw != NA || o.OpsPerS != 5 || o.Size != 4096 || o.ServerAllocs != NA {
		t.Errorf("old result: %+v", o)
	}
	if err := json.Unmarshal([]byte(`{"ops_per_s":"x"}`), &o); err == nil {
		t.Error("a bad result decoded")
	}
}
