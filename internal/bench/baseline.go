package bench

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/stats"
)

// Baseline is what perftest measures on the same rxe devices in the same
// boot, against which the goals are stated: a NULL RPC within 1.2x
// two ib_send_lat -e one-way latencies, pipelined 64 KiB READs within
// 0.95x of ib_write_bw. perftest runs before every round of the cells, so
// that its figures and ours interleave: ib_write_bw varies from one run
// to the next in one boot more than the cells do (docs/benchmarks.md,
// "The READ goal on interleaved rounds").
type Baseline struct {
	// SendLatEventsUs is ib_send_lat -e's typical one-way latency of a
	// 64-byte Send with completion events (t_typical, µs); over several
	// rounds, the median of theirs.
	SendLatEventsUs float64 `json:"ib_send_lat_e_typical_us"`
	// WriteBWMBps is ib_write_bw's average bandwidth of 64 KiB RDMA
	// Writes (MB/s); over several rounds, the median of theirs.
	WriteBWMBps float64 `json:"ib_write_bw_64k_mb_s"`
	// WriteBWVMCPUus is the whole VM's CPU time per 64 KiB RDMA Write
	// while ib_write_bw's client ran (its set-up included), and
	// WriteBWVMBusyPct the VM's busy share then: to set beside a READ
	// cell's vm µs and vm busy (zero when not measured).
	WriteBWVMCPUus   float64 `json:"ib_write_bw_vm_cpu_us_per_write,omitempty"`
	WriteBWVMBusyPct float64 `json:"ib_write_bw_vm_busy_pct,omitempty"`
	Err              string  `json:"error,omitempty"`
	// Round is the round this perftest ran before (0-based), in Rounds.
	Round int `json:"round,omitempty"`
	// Rounds holds each round's perftest when the run had more than one.
	Rounds []Baseline `json:"rounds,omitempty"`
}

// mergeBaselines folds the rounds' perftest runs into one Baseline: the
// medians of the figures measured (a failed tool counts in no median) and
// the errors met, with the rounds kept.
func mergeBaselines(bs []Baseline) Baseline {
	if len(bs) == 1 {
		return bs[0]
	}
	var lat, bw, cpu, busy []float64
	var errs []string
	for _, b := range bs {
		if b.SendLatEventsUs > 0 {
			lat = append(lat, b.SendLatEventsUs)
		}
		if b.WriteBWMBps > 0 {
			bw = append(bw, b.WriteBWMBps)
		}
		if b.WriteBWVMCPUus > 0 {
			cpu, busy = append(cpu, b.WriteBWVMCPUus), append(busy, b.WriteBWVMBusyPct)
		}
		if b.Err != "" {
			errs = append(errs, fmt.Sprintf("round %d: %s", b.Round+1, b.Err))
		}
	}
	m := Baseline{Err: strings.Join(errs, "; "), Rounds: bs}
	m.SendLatEventsUs, _ = stats.Median(lat)
	m.WriteBWMBps, _ = stats.Median(bw)
	m.WriteBWVMCPUus, _ = stats.Median(cpu)
	m.WriteBWVMBusyPct, _ = stats.Median(busy)
	return m
}

// runBaseline runs perftest between rxe1 (client) and rxe0 (server).
// perftest's TSC calibration fails under TCG on a busy host and a run may
// hang: each is bounded to 45 s and tried twice.
func runBaseline(ctx context.Context, log io.Writer) Baseline {
	var b Baseline
	lat, _, err := perftest(ctx, "ib_send_lat", "-s", "64", "-n", "2000", "-F", "-e")
	if err == nil && len(lat) > 4 {
		b.SendLatEventsUs, err = strconv.ParseFloat(lat[4], 64)
	}
	if err != nil {
		b.Err = "ib_send_lat -e: " + err.Error()
	}
	const writes = 2000
	bw, vm, err := perftest(ctx, "ib_write_bw", "-s", "65536", "-n", strconv.Itoa(writes), "-F")
	if err == nil && len(bw) > 3 {
		b.WriteBWMBps, err = strconv.ParseFloat(bw[3], 64)
	}
	if err == nil && vm["total_ns"] > 0 {
		b.WriteBWVMCPUus = float64(vm["busy_ns"]) / writes / 1e3
		b.WriteBWVMBusyPct = 100 * float64(vm["busy_ns"]) / float64(vm["total_ns"])
	}
	if err != nil {
		b.Err = strings.TrimPrefix(b.Err+"; ib_write_bw: "+err.Error(), "; ")
	}
	fmt.Fprintf(log, "%sperftest: ib_send_lat -e typical %.2f µs one-way, ib_write_bw 64 KiB %.0f MB/s (VM CPU %.0f µs per Write, %.0f%% busy) %s\n",
		tagDemo, b.SendLatEventsUs, b.WriteBWMBps, b.WriteBWVMCPUus, b.WriteBWVMBusyPct, b.Err)
	return b
}

// perftest runs tool's server on rxe0 and its client on rxe1 and returns
// the fields of the client's result row (the line after "#bytes"), and the
// growth of the VM's CPU counters (vmCPUSnapshot) while the client ran
// (nil when /proc/stat could not be read).
func perftest(ctx context.Context, tool string, args ...string) ([]string, counters, error) {
	gid := func(dev, ip string) string {
		out, err := exec.CommandContext(ctx, "rxevm-gid-index", dev, ip).Output()
		if err != nil {
			return "1"
		}
		return strings.TrimSpace(string(out))
	}
	g0, g1 := gid("rxe0", vmServerIP), gid("rxe1", vmClientIP)
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		srv := exec.CommandContext(sctx, tool, append([]string{"-d", "rxe0", "-x", g0}, args...)...)
		if err := srv.Start(); err != nil {
			cancel()
			return nil, nil, err
		}
		time.Sleep(time.Second)
		cctx, ccancel := context.WithTimeout(ctx, 45*time.Second)
		before, err1 := vmCPUSnapshot()
		out, err := exec.CommandContext(cctx, tool, append(append([]string{"-d", "rxe1", "-x", g1}, args...), vmServerIP)...).CombinedOutput()
		after, err2 := vmCPUSnapshot()
		ccancel()
		var vm counters
		if err1 == nil && err2 == nil {
			vm = counters(after).sub(before)
		}
		_ = srv.Wait()
		cancel()
		if err == nil {
			if row := perftestRow(string(out)); row != nil {
				return row, vm, nil
			}
			err = fmt.Errorf("no result row")
		}
		lastErr = fmt.Errorf("%w: %s", err, lastLines(strings.TrimSpace(string(out)), 2))
	}
	return nil, nil, lastErr
}

// perftestRow returns the fields of the line after perftest's "#bytes"
// header.
func perftestRow(out string) []string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "#bytes") && i+1 < len(lines) {
			if f := strings.Fields(lines[i+1]); len(f) > 3 {
				return f
			}
		}
	}
	return nil
}

// writeBaseline compares the bench's cells with perftest's figures: our
// NULL round trip against two ib_send_lat -e one-way latencies, 64 KiB
// READs against ib_write_bw. With perftest run before every round, each
// round's cell is divided by that round's perftest, and the median of
// those ratios is the figure (the rounds' ratios follow it).
func writeBaseline(w io.Writer, b *Baseline, rs, raw []Result) {
	if b == nil {
		return
	}
	of := "perftest in the same boot"
	if len(b.Rounds) > 1 {
		of = fmt.Sprintf("perftest in the same boot, before each of %d rounds (medians)", len(b.Rounds))
	}
	fmt.Fprintf(w, "\n%s: ib_send_lat -e typical %s µs one-way; ib_write_bw 64 KiB %s MB/s", of,
		fmtNum(b.SendLatEventsUs), fmtNum(b.WriteBWMBps))
	if b.WriteBWVMCPUus > 0 {
		fmt.Fprintf(w, " (VM CPU %s µs per Write, %.0f%% busy)", fmtNum(b.WriteBWVMCPUus), b.WriteBWVMBusyPct)
	}
	if b.Err != "" {
		fmt.Fprintf(w, " (%s)", b.Err)
	}
	fmt.Fprintln(w)
	for _, r := range sorted(rs) {
		switch {
		case r.Err != "":
		case r.Workload == WorkNull && r.InFlight == 1 && b.SendLatEventsUs > 0:
			x, rounds := baselineRatio(b, r, raw, func(c Result, p Baseline) (float64, float64) { return c.P50us, 2 * p.SendLatEventsUs })
			fmt.Fprintf(w, "  %s→%s NULL ×1 inline %s: p50 %s µs = %.2fx two ib_send_lat -e one-way latencies (goal ≤ 1.2x)%s\n",
				r.Client, r.Server, SizeName(r.Inline), fmtNum(r.P50us), x, rounds)
		case r.Workload == WorkRead && r.Size == 64<<10 && r.InFlight > 1 && b.WriteBWMBps > 0:
			x, rounds := baselineRatio(b, r, raw, func(c Result, p Baseline) (float64, float64) { return c.MBPerS, p.WriteBWMBps })
			fmt.Fprintf(w, "  %s→%s READ 64 KiB ×%d inline %s: %s MB/s = %.2fx ib_write_bw (goal ≥ 0.95x)%s\n",
				r.Client, r.Server, r.InFlight, SizeName(r.Inline), fmtNum(r.MBPerS), x, rounds)
		}
	}
}

// baselineRatio divides the merged cell r by perftest's figure (pick
// returns the cell's figure and perftest's), or, when perftest ran before
// each round, returns the median of the rounds' ratios and a note listing
// them.
func baselineRatio(b *Baseline, r Result, raw []Result, pick func(Result, Baseline) (float64, float64)) (float64, string) {
	perRound := map[int]Baseline{}
	for _, p := range b.Rounds {
		perRound[p.Round] = p
	}
	var xs []float64
	for _, c := range raw {
		p, ok := perRound[c.Round]
		if !ok || c.Cell != r.Cell || c.Err != "" {
			continue
		}
		if ours, theirs := pick(c, p); ours > 0 && theirs > 0 {
			xs = append(xs, ours/theirs)
		}
	}
	if m, ok := stats.Median(xs); ok && len(xs) > 1 {
		return m, ", median of rounds " + roundRatios(xs)
	}
	ours, theirs := pick(r, *b)
	return ours / theirs, ""
}
