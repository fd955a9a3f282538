package bench

import (
	"math"
	"slices"
	"testing"
)

func TestRoundInlines(t *testing.T) {
	in := []int{1024, 4096, 16384}
	if got := roundInlines(in, 0); !slices.Equal(got, in) {
		t.Errorf("round 0: %v", got)
	}
	if got := roundInlines(in, 1); !slices.Equal(got, []int{16384, 4096, 1024}) {
		t.Errorf("round 1: %v", got)
	}
	if !slices.Equal(in, []int{1024, 4096, 16384}) {
		t.Error("roundInlines changed its argument")
	}
}

func TestMergeRounds(t *testing.T) {
	c := Cell{Client: ClientKernel, Server: ServerGo, Workload: WorkWrite, Size: 2048, InFlight: 8, Inline: 1024}
	a := Result{Cell: c, Seconds: 1, Ops: 100, OpsPerS: 100, MBPerS: 0.2, P50us: 10, P99us: 20, RPCs: 100,
		Sends: 2, RDMAReads: 1, RDMAWrites: 0, RemoteInv: 1, LocalInv: 0, ServerCPUus: 10, ServerAllocs: 100, Packets: NA,
		ClientCPUus: 4, ClientAllocs: 8, ServerCtxSw: 2, ClientCtxSw: NA}
	b := a
	b.Round, b.Seconds, b.Ops, b.OpsPerS, b.MBPerS, b.P50us, b.RPCs, b.ServerCPUus = 1, 1, 300, 300, 0.6, 30, 300, 30
	b.ClientCPUus, b.ClientAllocs, b.ServerCtxSw = 8, 12, 6
	other := a
	other.Inline = 4096
	got := mergeRounds([]Result{a, other, b})
	if len(got) != 2 {
		t.Fatalf("%d merged results, want 2", len(got))
	}
	m := got[0]
	for name, gw := range map[string][2]float64{"ops/s": {m.OpsPerS, 200}, "MB/s": {m.MBPerS, 0.4},
		"p50": {m.P50us, 25}, "sends": {m.Sends, 2}, "reads": {m.RDMAReads, 1}, "cpu": {m.ServerCPUus, 25},
		"client cpu": {m.ClientCPUus, 7}, "client allocs": {m.ClientAllocs, 11},
		"server csw": {m.ServerCtxSw, 5}, "client csw": {m.ClientCtxSw, NA}, "rounds": {float64(m.Rounds), 2}, "ops": {float64(m.Ops), 400}} {
		if math.Abs(gw[0]-gw[1]) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, gw[0], gw[1])
		}
	}
	if m.Packets != NA {
		t.Errorf("packets = %v: a figure no round counted must stay NA", m.Packets)
	}
	if got[1].Rounds != 1 || got[1].OpsPerS != 100 {
		t.Errorf("single round: %+v", got[1])
	}

	// Three rounds, one of them a fraction of the others (a cold boot):
	// the rates are the median round's, where pooling would give 210;
	// a round that failed does not count.
	slow, fast := a, a
	slow.Round, slow.Ops, slow.OpsPerS, slow.MBPerS = 2, 10, 10, 0.02
	fast.Round, fast.Ops, fast.OpsPerS, fast.MBPerS = 3, 320, 320, 0.64
	failed := a
	failed.Round, failed.Ops, failed.OpsPerS, failed.Err = 4, 0, 0, "boom"
	m = mergeRounds([]Result{slow, b, fast, failed})[0]
	if m.OpsPerS != 300 || math.Abs(m.MBPerS-0.6) > 1e-9 || m.Ops != 630 || m.Rounds != 4 {
		t.Errorf("rounds 10, 300, 320 ops/s and a failed one: ops/s %v, MB/s %v, ops %d, rounds %d; want 300, 0.6, 630, 4",
			m.OpsPerS, m.MBPerS, m.Ops, m.Rounds)
	}
}
