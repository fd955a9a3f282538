package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestRoundServers(t *testing.T) {
	in := []string{ServerGo, ServerGoB, ServerKnfsd}
	if got := roundServers(in, 0); !slices.Equal(got, in) {
		t.Errorf("round 0: %v", got)
	}
	if got := roundServers(in, 1); !slices.Equal(got, []string{ServerGoB, ServerGo, ServerKnfsd}) {
		t.Errorf("round 1: %v", got)
	}
	if got := roundServers([]string{ServerGo, ServerKnfsd}, 1); !slices.Equal(got, []string{ServerGo, ServerKnfsd}) {
		t.Errorf("round 1 without rdma-nfsd-b: %v", got)
	}
	if !slices.Equal(in, []string{ServerGo, ServerGoB, ServerKnfsd}) {
		t.Error("roundServers changed its argument")
	}
}

// TestCompareRows pairs each round of rdma-nfsd-b with rdma-nfsd's same
// cell and round, and leaves out what cannot be paired.
func TestCompareRows(t *testing.T) {
	cell := func(server string, inline, round int, ops float64, err string) Result {
		return Result{Cell: Cell{Client: ClientKernel, Server: server, Workload: WorkGetattr, InFlight: 1, Inline: inline},
			Round: round, OpsPerS: ops, Err: err, ServerCPUus: 1e5 / ops}
	}
	raw := []Result{
		cell(ServerGo, 1024, 0, 100, ""), cell(ServerGoB, 1024, 0, 150, ""),
		cell(ServerGoB, 1024, 1, 100, ""), cell(ServerGo, 1024, 1, 200, ""),
		cell(ServerGo, 1024, 2, 100, ""), cell(ServerGoB, 1024, 2, 120, ""),
		cell(ServerGo, 4096, 0, 100, "boom"), cell(ServerGoB, 4096, 0, 100, ""), // A failed
		cell(ServerGo, 4096, 1, 100, ""), cell(ServerGoB, 4096, 1, 90, ""),
		cell(ServerKnfsd, 1024, 0, 500, ""),
		cell(ServerGoB, 16384, 0, 100, ""), // no A at all
	}
	rows := compareRows(raw)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(rows), rows)
	}
	if r := rows[0]; r.cell.Inline != 1024 || r.cell.Server != ServerGoB || !slices.Equal(r.ratios, []float64{1.5, 0.5, 1.2}) || r.median() != 1.2 {
		t.Errorf("1024: %+v, median %v", r, r.median())
	}
	if r := rows[1]; r.cell.Inline != 4096 || !slices.Equal(r.ratios, []float64{0.9}) || r.median() != 0.9 {
		t.Errorf("4096: %+v", r)
	}
	if m := median(rows[0].cpu); math.Abs(m-1/1.2) > 1e-9 {
		t.Errorf("CPU per RPC B/A median %v, want %v", m, 1/1.2)
	}
	if median(nil) != NA {
		t.Error("median of nothing is not NA")
	}
	if m := (compareRow{ratios: []float64{2, 1, 4, 3}}).median(); m != 2.5 {
		t.Errorf("median of an even count: %v", m)
	}
	var out bytes.Buffer
	writeCompare(&out, Spec{Compare: "0123456789abcdef"}, raw)
	gm := math.Exp((math.Log(1.5) + math.Log(0.5) + math.Log(1.2) + math.Log(0.9)) / 4)
	for _, want := range []string{"rdma-nfsd-b (at 0123456789ab) / rdma-nfsd", "median 1.20x  rounds 1.50 0.50 1.20  CPU/RPC 0.83x",
		"median 0.90x  rounds 0.90  CPU/RPC 1.11x", fmt.Sprintf("geometric mean of the 4 pairs: %.2fx", gm)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	writeCompare(&out, Spec{}, raw)
	writeCompare(&out, Spec{Compare: "0123"}, raw[10:11])
	if out.Len() != 0 {
		t.Errorf("a run without a comparison printed %q", out.String())
	}
	writeCompare(&out, Spec{CompareFlags: []string{"-credits", "8"}}, raw)
	if !strings.Contains(out.String(), `rdma-nfsd-b (this checkout, with "-credits 8") / rdma-nfsd`) {
		t.Errorf("comparison of flags:\n%s", out.String())
	}
}

// TestParseCompare: -compare adds rdma-nfsd-b right after rdma-nfsd, and
// needs rdma-nfsd.
func TestParseCompare(t *testing.T) {
	s, _, err := parseBench([]string{"-compare", "HEAD~1", "-servers", "knfsd,rdma-nfsd"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Compare != "HEAD~1" || !slices.Equal(s.Servers, []string{ServerKnfsd, ServerGo, ServerGoB}) {
		t.Errorf("compare %q, servers %v", s.Compare, s.Servers)
	}
	if _, _, err := parseBench([]string{"-compare", "HEAD", "-servers", "knfsd"}, &bytes.Buffer{}); err == nil ||
		!strings.Contains(err.Error(), "needs rdma-nfsd") {
		t.Errorf("-compare without rdma-nfsd: %v", err)
	}
	if _, _, err := parseBench([]string{"-servers", "rdma-nfsd-b"}, &bytes.Buffer{}); err == nil {
		t.Error("rdma-nfsd-b without -compare: no error")
	}
	s, _, err = parseBench([]string{"-provider", "soft", "-compare", "HEAD"}, &bytes.Buffer{})
	if err != nil || !slices.Equal(s.Servers, []string{ServerGo, ServerGoB}) {
		t.Errorf("soft: servers %v, %v", s.Servers, err)
	}
	s, _, err = parseBench([]string{"-compare-flags", "-credits 8", "-servers", "rdma-nfsd"}, &bytes.Buffer{})
	if err != nil || s.Compare != "" || !slices.Equal(s.CompareFlags, []string{"-credits", "8"}) ||
		!slices.Equal(s.Servers, []string{ServerGo, ServerGoB}) {
		t.Errorf("-compare-flags: %v, %q, %v", err, s.CompareFlags, s.Servers)
	}
}

// TestServerB: rdma-nfsd-b runs the compared build if there is one, with
// the flags of both, and leaves rdma-nfsd's own alone.
func TestServerB(t *testing.T) {
	a := newRdmaNfsd("/host/rdma-nfsd", "rdmacore", "10.0.0.1", "/export")
	a.extra = []string{"-log-level", "debug"}
	a.extra = slices.Grow(a.extra, 4) // room an append would write into
	b := serverB(a, Spec{CompareFlags: []string{"-credits", "8"}})
	if b.name() != ServerGoB || b.bin != a.bin || !slices.Equal(b.extra, []string{"-log-level", "debug", "-credits", "8"}) {
		t.Errorf("flags only: %s %s %q", b.name(), b.bin, b.extra)
	}
	b = serverB(a, Spec{Compare: "abc"})
	if b.bin != "/host/rdma-nfsd-b" || !slices.Equal(b.extra, a.extra) {
		t.Errorf("build: %s %q", b.bin, b.extra)
	}
	if a.name() != ServerGo || !slices.Equal(a.extra, []string{"-log-level", "debug"}) {
		t.Errorf("rdma-nfsd changed: %s %q", a.name(), a.extra)
	}
	if got := profileName(b.name(), 1, 1024, false); got != "rdma-nfsd-b-01-inline1024.pprof" {
		t.Errorf("profile name %q", got)
	}
}

// TestSoftCompare runs bench -compare HEAD on the soft provider: rdma-nfsd
// built from this checkout and from HEAD's tree (git archive), each cell
// measured with both, in ABBA order, and the comparison printed.
func TestSoftCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/rdma-nfsd twice")
	}
	if _, err := os.Stat("../../.git"); err != nil {
		t.Skip("not a git checkout:", err)
	}
	if _, err := resolveCommit(context.Background(), "../..", "no-such-revision"); err == nil ||
		!strings.Contains(err.Error(), "not a commit") {
		t.Errorf("resolving a bad revision: %v", err)
	}
	var stdout, stderr bytes.Buffer
	rep, err := runArgs([]string{"-provider", "soft", "-compare", "HEAD", "-workloads", "null",
		"-inflight", "1", "-inline", "1024", "-rounds", "2", "-d", "200ms"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if len(rep.Spec.Compare) != 40 {
		t.Errorf("spec's compare %q: want the full commit", rep.Spec.Compare)
	}
	var order []string
	for _, r := range rep.Raw {
		if r.Err != "" || r.Ops == 0 {
			t.Errorf("%s round %d: %d ops, %q", r.Label(), r.Round, r.Ops, r.Err)
		}
		order = append(order, r.Server)
	}
	if want := []string{ServerGo, ServerGoB, ServerGoB, ServerGo}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v (ABBA)", order, want)
	}
	for _, want := range []string{"rdma-nfsd-b (at " + rep.Spec.Compare[:12] + ")", "go     null", "geometric mean of the 2 pairs"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}

	// The same binary with other flags: nothing built.
	stdout.Reset()
	_, err = runArgs([]string{"-provider", "soft", "-compare-flags", "-concurrent-calls 1", "-workloads", "null",
		"-inflight", "1", "-inline", "1024", "-rounds", "2", "-d", "200ms"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if want := `rdma-nfsd-b (this checkout, with "-concurrent-calls 1")`; !strings.Contains(stdout.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, stdout.String())
	}
}

// TestSoftVersion2 runs bench -rpcrdma-v2 on the soft provider: rdma-nfsd-b
// is this checkout's rdma-nfsd with -rpcrdma-v2, the Go client (NULL and
// connections on our requester, GETATTR, LOOKUP and READDIRPLUS through
// the Go NFS client) runs version 2 with it and version 1 with rdma-nfsd,
// and the comparison is printed.
func TestSoftVersion2(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/rdma-nfsd")
	}
	s, _, err := parseBench([]string{"-rpcrdma-v2"}, &bytes.Buffer{})
	if err != nil || !s.Version2 || !slices.Equal(s.CompareFlags, []string{"-rpcrdma-v2"}) || !slices.Equal(s.Clients, []string{ClientGo}) {
		t.Fatalf("-rpcrdma-v2: %v, %+v", err, s)
	}
	var stdout, stderr bytes.Buffer
	rep, err := runArgs([]string{"-provider", "soft", "-rpcrdma-v2", "-workloads", "null,connect,getattr,lookup,readdir",
		"-inflight", "1", "-inline", "1024", "-rounds", "1", "-d", "200ms"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if len(rep.Raw) != 10 {
		t.Fatalf("%d results, want 10", len(rep.Raw))
	}
	for _, r := range rep.Raw {
		want := " version 1"
		if r.Server == ServerGoB {
			want = " version 2"
		}
		if r.Err != "" || r.Ops == 0 || !strings.HasSuffix(r.Negotiated, want) {
			t.Errorf("%s: %d ops, %q, negotiated %q (want ...%s)", r.Label(), r.Ops, r.Err, r.Negotiated, want)
		}
	}
	if want := `rdma-nfsd-b (this checkout, with "-rpcrdma-v2")`; !strings.Contains(stdout.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, stdout.String())
	}
}
