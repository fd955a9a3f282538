package e2e

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/stats"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// perftestMiB converts perftest's MB/sec, which are MiB/s (perftest
// divides by 0x100000), into the MB/s (10^6 bytes) of Go benchmarks.
const perftestMiB = 1 << 20 / 1e6

// TestRdmacoreTransport measures the whole transport over rdma-core on
// rxe, in the same boot as perftest on the same devices, and logs the two
// ratios issue 12 sets goals for: a NULL RPC against two one-way
// ib_send_lat -e latencies (goal ≤ 1.2), and pipelined 64 KiB READs
// (results placed by RDMA Write) against ib_write_bw (goal ≥ 0.95). Goals
// are benchmark results, logged, not asserted: the VM runs under TCG on a
// shared host.
//
// ib_send_lat -e runs twice and its lower latency counts. The READ goal
// is measured in readRounds interleaved rounds, each an ib_write_bw run
// followed at once by the READ benchmark, and compares the medians: within
// one boot ib_write_bw alone can vary by nearly a factor of two, so a
// ratio of one run to one run, or of ours to perftest's best, says more
// about which run of perftest was lucky than about the transport.
func TestRdmacoreTransport(t *testing.T) {
	r := vmtest.RunGuestTests(t, vmtest.GuestTests{
		Pkg: "github.com/go-rpcrdma/rpcrdma/transport",
		CGO: true,
		Setup: perftestScript + perfSendLatEvents +
			strings.Replace(perfSendLatEvents, "send_lat_events", "send_lat_events_2", 1) +
			interleavedReadRounds,
		Args:    []string{"-test.run=^$", "-test.bench=^BenchmarkRdmacore", "-test.benchtime=2000x", "-test.timeout=15m"},
		Options: vm.Options{Timeout: 20 * time.Minute},
	})
	perf, bench := perfAndBench(r)
	perfBW, oursBW := readRoundsOf(r, perf)
	if len(perfBW) != readRounds || len(oursBW) != readRounds {
		t.Errorf("interleaved rounds: %d ib_write_bw and %d READ results, want %d each", len(perfBW), len(oursBW), readRounds)
	}
	var b strings.Builder
	row := func(what, ours, theirs, ratio string) {
		fmt.Fprintf(&b, "  %-44s %-14s %-44s %s\n", what, ours, theirs, ratio)
	}
	row("", "transport", "perftest (same boot)", "ratio")
	lat := best(true, perfField(perf["send_lat_events"], 4), perfField(perf["send_lat_events_2"], 4))
	latAvg := best(true, perfField(perf["send_lat_events"], 5), perfField(perf["send_lat_events_2"], 5))
	bw, _ := stats.Median(perfBW)
	t.Logf("perftest: ib_send_lat -e t_typical %.1f / %.1f us; interleaved rounds: ib_write_bw %s MB/s, 64 KiB READ (poll first, 16 in flight) %s MB/s",
		perfField(perf["send_lat_events"], 4), perfField(perf["send_lat_events_2"], 4), mbList(perfBW), mbList(oursBW))
	for _, mode := range []string{"poll-first", "events-only"} {
		null := bench["BenchmarkRdmacoreNull/"+mode]
		if null == nil {
			t.Errorf("no result for BenchmarkRdmacoreNull/%s in the guest output", mode)
		}
		goal := ""
		if mode == "poll-first" {
			goal = "goal <= 1.2"
		}
		typ, avg := benchMetric(null, "usec-typical"), benchMetric(null, "usec-avg")
		row("NULL RPC, "+mode+": typical", us(typ), "2 x ib_send_lat -e t_typical "+us(2*lat), ratio(typ, 2*lat, goal))
		row("NULL RPC, "+mode+": average", us(avg), "2 x ib_send_lat -e t_avg "+us(2*latAvg), ratio(avg, 2*latAvg, ""))
		for _, d := range []string{"1", "16", "32"} {
			name := "BenchmarkRdmacoreRead64K/" + mode + "/depth" + d
			if bench[name] == nil {
				t.Errorf("no result for %s in the guest output", name)
			}
			mbs := benchMetric(bench[name], "MB/s")
			row("64 KiB READ, "+mode+", "+d+" in flight", fmt.Sprintf("%.1f MB/s", mbs), fmt.Sprintf("median ib_write_bw (128) %.1f MB/s", bw), ratio(mbs, bw, ""))
		}
	}
	ours, _ := stats.Median(oursBW)
	row(fmt.Sprintf("64 KiB READ, poll-first, 16: median of %d", len(oursBW)), fmt.Sprintf("%.1f MB/s", ours),
		fmt.Sprintf("median ib_write_bw, interleaved %.1f MB/s", bw), ratio(ours, bw, "goal >= 0.95"))
	row("  the same, best of each", fmt.Sprintf("%.1f MB/s", best(false, oursBW...)),
		fmt.Sprintf("best ib_write_bw %.1f MB/s", best(false, perfBW...)), ratio(best(false, oursBW...), best(false, perfBW...), ""))
	async := benchMetric(bench["BenchmarkRdmacoreRead64K/poll-first/depth16"], "MB/s")
	name := "BenchmarkRdmacoreRead64K/post-inline/depth16"
	if bench[name] == nil {
		t.Errorf("no result for %s in the guest output", name)
	}
	inline := benchMetric(bench[name], "MB/s")
	row("64 KiB READ, every post inline, 16", fmt.Sprintf("%.1f MB/s", inline), fmt.Sprintf("bulk posts async %.1f MB/s", async), ratio(inline, async, ""))
	name = "BenchmarkRdmacoreRead64K/into/depth16"
	if bench[name] == nil {
		t.Errorf("no result for %s in the guest output", name)
	}
	into := benchMetric(bench[name], "MB/s")
	row("64 KiB READ, CallInto (placed), 16", fmt.Sprintf("%.1f MB/s", into), fmt.Sprintf("median ib_write_bw (128) %.1f MB/s", bw), ratio(into, bw, ""))
	// The same exchange written directly on verbs, without the RPC layer.
	for _, d := range []string{"1", "16"} {
		name = "BenchmarkRdmacoreVerbsRead64K/depth" + d
		if bench[name] == nil {
			t.Errorf("no result for %s in the guest output", name)
		}
		shaped := benchMetric(bench[name], "MB/s")
		row("bare verbs: call, Write + reply Send, "+d, fmt.Sprintf("%.1f MB/s", shaped), fmt.Sprintf("median ib_write_bw (128) %.1f MB/s", bw), ratio(shaped, bw, ""))
		if d == "16" {
			row("64 KiB READ, CallInto, 16 / bare verbs", fmt.Sprintf("%.1f MB/s", into), fmt.Sprintf("bare verbs, 16 %.1f MB/s", shaped), ratio(into, shaped, ""))
		}
	}
	t.Log("the transport over rdma-core against perftest on rxe (TCG VM):\n" + b.String())
}

// readRounds is the number of interleaved rounds of ib_write_bw and the
// 64 KiB READ benchmark behind the READ goal.
const readRounds = 3

// interleavedReadRounds runs readRounds rounds of ib_write_bw and, right
// after each, BenchmarkRdmacoreRead64K/poll-first/depth16 from the test
// binary RunGuestTests put in the share; the benchmark's lines are marked
// "ROUND n" (readRoundsOf). The script runs under set -e.
var interleavedReadRounds = fmt.Sprintf(`
for round in $(seq %d); do
	perf write_bw_round$round ib_write_bw -s 65536 -n 2000 -F
	/host/transport.test -test.run '^$' -test.bench '^BenchmarkRdmacoreRead64K/poll-first/depth16$' \
		-test.benchtime 2000x -test.timeout 5m > /tmp/round.out 2>&1 || true
	sed -n "s/^Benchmark/ROUND $round Benchmark/p" /tmp/round.out
done
`, readRounds)

// readRoundsOf returns the MB/s (10^6 bytes) of ib_write_bw (from perf,
// perfAndBench's PERFTEST lines) and of the READ benchmark (the ROUND
// lines) in the interleaved rounds that produced a figure.
func readRoundsOf(r *vmtest.Result, perf map[string][]string) (perfMBs, ours []float64) {
	for round := 1; round <= readRounds; round++ {
		if v := best(false, perfField(perf["write_bw_round"+strconv.Itoa(round)], 3)) * perftestMiB; v > 0 {
			perfMBs = append(perfMBs, v)
		}
	}
	for _, l := range r.Lines() {
		if f := strings.Fields(l); len(f) >= 4 && f[0] == "ROUND" {
			if v := benchMetric(f[2:], "MB/s"); v > 0 {
				ours = append(ours, v)
			}
		}
	}
	return perfMBs, ours
}

// mbList formats MB/s figures as "a / b / c".
func mbList(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%.1f", v)
	}
	return strings.Join(parts, " / ")
}

// best returns the lowest (or, lower false, the highest) of the measured
// values (those not 0, infinite or NaN: a failed perftest run reads as 0
// or inf), or 0 if there is none.
func best(lower bool, vs ...float64) float64 {
	r := 0.0
	for _, v := range vs {
		switch {
		case v == 0, math.IsInf(v, 0), math.IsNaN(v): // perftest prints inf when its clock calibration fails
		case r == 0, lower && v < r, !lower && v > r:
			r = v
		}
	}
	return r
}

// benchField returns the value of a benchmark result's unit as printed
// (fields after the name: N, ns/op value, "ns/op", then value-unit
// pairs), or "?".
func benchField(f []string, unit string) string {
	for i := 1; i < len(f); i++ {
		if f[i] == unit {
			return f[i-1]
		}
	}
	return "?"
}

// benchMetric is benchField's value as a number, or 0.
func benchMetric(f []string, unit string) float64 {
	v, _ := strconv.ParseFloat(benchField(f, unit), 64)
	return v
}

// perfField returns field i of a perftest result row, or 0.
func perfField(f []string, i int) float64 {
	if i >= len(f) {
		return 0
	}
	v, _ := strconv.ParseFloat(f[i], 64)
	return v
}

func us(v float64) string { return fmt.Sprintf("%.1f us", v) }

func ratio(ours, theirs float64, goal string) string {
	if ours == 0 || theirs == 0 {
		return "?"
	}
	s := fmt.Sprintf("%.2fx", ours/theirs)
	if goal != "" {
		s += " (" + goal + ")"
	}
	return s
}
