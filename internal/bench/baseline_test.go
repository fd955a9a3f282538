package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestMergeBaselines: medians of what each round's perftest measured, a
// failed tool left out of its median and its error kept with the round.
func TestMergeBaselines(t *testing.T) {
	one := Baseline{SendLatEventsUs: 10, WriteBWMBps: 50}
	if got := mergeBaselines([]Baseline{one}); got.SendLatEventsUs != 10 || got.WriteBWMBps != 50 || got.Rounds != nil {
		t.Errorf("one round: %+v", got)
	}
	bs := []Baseline{
		{Round: 0, SendLatEventsUs: 10, WriteBWMBps: 60, WriteBWVMCPUus: 3000, WriteBWVMBusyPct: 60},
		{Round: 1, SendLatEventsUs: 30, WriteBWMBps: 30, WriteBWVMCPUus: 5000, WriteBWVMBusyPct: 50},
		{Round: 2, SendLatEventsUs: 20, Err: "ib_write_bw: no result row"},
		{Round: 3, SendLatEventsUs: 40, WriteBWMBps: 40, WriteBWVMCPUus: 4000, WriteBWVMBusyPct: 70},
	}
	got := mergeBaselines(bs)
	if got.SendLatEventsUs != 25 || got.WriteBWMBps != 40 || len(got.Rounds) != 4 ||
		got.WriteBWVMCPUus != 4000 || got.WriteBWVMBusyPct != 60 {
		t.Errorf("merged: %+v", got)
	}
	if got.Err != "round 3: ib_write_bw: no result row" {
		t.Errorf("error %q", got.Err)
	}
}

// TestWriteBaselineRounds divides each round's cell by that round's
// perftest and reports their median; with one perftest run it divides
// the merged cell.
func TestWriteBaselineRounds(t *testing.T) {
	read := func(round int, mbs float64) Result {
		return Result{Cell: Cell{Client: ClientKernel, Server: ServerGo, Workload: WorkRead, Size: 64 << 10, InFlight: 8, Inline: 4096},
			Round: round, MBPerS: mbs}
	}
	null := func(round int, p50 float64) Result {
		return Result{Cell: Cell{Client: ClientGo, Server: ServerGo, Workload: WorkNull, InFlight: 1, Inline: 4096},
			Round: round, P50us: p50}
	}
	raw := []Result{read(0, 30), read(1, 30), read(2, 45), null(0, 100), null(1, 120), null(2, 100)}
	b := mergeBaselines([]Baseline{
		{Round: 0, SendLatEventsUs: 50, WriteBWMBps: 60},
		{Round: 1, SendLatEventsUs: 40, WriteBWMBps: 30},
		{Round: 2, SendLatEventsUs: 50, WriteBWMBps: 50},
	})
	merged := []Result{read(0, 35), null(0, 106)}
	var w bytes.Buffer
	writeBaseline(&w, &b, merged, raw)
	out := w.String()
	if l := lineWith(out, "READ 64 KiB"); !strings.Contains(l, "0.90x ib_write_bw") || !strings.Contains(l, "rounds 0.50 1.00 0.90") {
		t.Errorf("READ line %q in:\n%s", l, out)
	}
	if l := lineWith(out, "NULL"); !strings.Contains(l, "= 1.00x two") || !strings.Contains(l, "rounds 1.00 1.50 1.00") {
		t.Errorf("NULL line %q in:\n%s", l, out)
	}
	if !strings.Contains(out, "before each of 3 rounds") {
		t.Errorf("no rounds in the header:\n%s", out)
	}

	w.Reset()
	single := Baseline{SendLatEventsUs: 53, WriteBWMBps: 50}
	writeBaseline(&w, &single, merged, raw[:1])
	if l := lineWith(w.String(), "READ 64 KiB"); !strings.Contains(l, "0.70x ib_write_bw") || strings.Contains(l, "rounds") {
		t.Errorf("one perftest: READ line %q", l)
	}
}
