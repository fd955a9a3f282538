package bench

import (
	"fmt"
	"slices"
	"strings"
)

// Rounds: a run measures every cell Spec.Rounds times, the inline
// settings in ascending order in even rounds and descending in odd ones
// (an ABBA order), so that a drift of the host's load over the run (two
// shared cores under TCG) weighs on every setting alike rather than on
// the last ones. mergeRounds folds the rounds of a cell into one result.

// roundInlines is the order of the inline settings in round r.
func roundInlines(inlines []int, r int) []int {
	out := slices.Clone(inlines)
	if r%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// mergeRounds folds the results of the same cell from several rounds:
// counts add up, rates are totals over total time, per-RPC figures are
// weighted by RPCs, latency percentiles by operations (an approximation:
// the mean of the rounds' percentiles).
func mergeRounds(rs []Result) []Result {
	type key struct {
		k      string
		inline int
	}
	var order []key
	groups := map[key][]Result{}
	for _, r := range rs {
		k := key{r.Key(), r.Inline}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]Result, 0, len(order))
	for _, k := range order {
		out = append(out, mergeCell(groups[k]))
	}
	return out
}

// mergeCell folds the rounds of one cell.
func mergeCell(g []Result) Result {
	m := g[0]
	m.Rounds = len(g)
	if len(g) == 1 {
		return m
	}
	var secs, mbs float64
	var ops, errs, rpcs uint64
	for _, r := range g {
		secs += r.Seconds
		mbs += r.MBPerS * r.Seconds
		ops += r.Ops
		errs += r.Errors
		rpcs += r.RPCs
		if m.Err == "" {
			m.Err = r.Err
		}
	}
	m.Seconds, m.Ops, m.Errors, m.RPCs = secs, ops, errs, rpcs
	// The rates are the median round's, not the pooled ones: in the
	// VM a round now and then runs at a fraction of the others (the
	// first cells of a boot, a busy host), and one such round would
	// drag a pooled rate down.
	var opsRates, mbRates []float64
	for _, r := range g {
		if r.Err == "" && r.Seconds > 0 {
			opsRates, mbRates = append(opsRates, r.OpsPerS), append(mbRates, r.MBPerS)
		}
	}
	if len(opsRates) > 0 {
		m.OpsPerS, m.MBPerS = median(opsRates), median(mbRates)
	} else if secs > 0 {
		m.OpsPerS, m.MBPerS = float64(ops)/secs, mbs/secs
	}
	m.RPCsPerOp = perRPC(rpcs, ops)
	weighted := func(get func(Result) float64, weight func(Result) uint64) float64 {
		var sum float64
		var w uint64
		for _, r := range g {
			v := get(r)
			if v == NA {
				if weight(r) > 0 {
					return NA
				}
				continue
			}
			sum += v * float64(weight(r))
			w += weight(r)
		}
		if w == 0 {
			return NA
		}
		return sum / float64(w)
	}
	byOps := func(r Result) uint64 { return r.Ops }
	byRPCs := func(r Result) uint64 { return r.RPCs }
	m.P50us = weighted(func(r Result) float64 { return r.P50us }, byOps)
	m.P99us = weighted(func(r Result) float64 { return r.P99us }, byOps)
	bySeconds := func(r Result) uint64 { return uint64(r.Seconds * 1e3) }
	m.VMBusyPct = weighted(func(r Result) float64 { return r.VMBusyPct }, bySeconds)
	for _, f := range []struct {
		dst *float64
		get func(Result) float64
	}{
		{&m.Sends, func(r Result) float64 { return r.Sends }},
		{&m.RDMAReads, func(r Result) float64 { return r.RDMAReads }},
		{&m.RDMAWrites, func(r Result) float64 { return r.RDMAWrites }},
		{&m.RemoteInv, func(r Result) float64 { return r.RemoteInv }},
		{&m.LocalInv, func(r Result) float64 { return r.LocalInv }},
		{&m.ReadChunks, func(r Result) float64 { return r.ReadChunks }},
		{&m.WriteChunks, func(r Result) float64 { return r.WriteChunks }},
		{&m.ReplyChunks, func(r Result) float64 { return r.ReplyChunks }},
		{&m.Packets, func(r Result) float64 { return r.Packets }},
		{&m.ServerCPUus, func(r Result) float64 { return r.ServerCPUus }},
		{&m.ServerAllocs, func(r Result) float64 { return r.ServerAllocs }},
		{&m.ServerCtxSw, func(r Result) float64 { return r.ServerCtxSw }},
		{&m.ServerPosts, func(r Result) float64 { return r.ServerPosts }},
		{&m.ClientPosts, func(r Result) float64 { return r.ClientPosts }},
		{&m.ClientCPUus, func(r Result) float64 { return r.ClientCPUus }},
		{&m.ClientAllocs, func(r Result) float64 { return r.ClientAllocs }},
		{&m.ClientCtxSw, func(r Result) float64 { return r.ClientCtxSw }},
		{&m.VMCPUus, func(r Result) float64 { return r.VMCPUus }},
	} {
		*f.dst = weighted(f.get, byRPCs)
	}
	return m
}

// cellRounds is a cell and, round by round, its result paired with the
// result of its twin cell in the same round.
type cellRounds struct {
	cell  Cell
	pairs [][2]Result // {the cell's, its twin's}
}

// pairRounds pairs every round of every cell that isB selects with the
// cell twin(cell) measured in the same round, the cells in the order of
// sorted. A round is left out when the cell failed, or its twin failed or
// measured nothing.
func pairRounds(raw []Result, isB func(Result) bool, twin func(Cell) Cell) []cellRounds {
	type key struct {
		cell  Cell
		round int
	}
	ok := map[key]Result{}
	for _, r := range raw {
		if r.Err == "" && r.OpsPerS > 0 {
			ok[key{r.Cell, r.Round}] = r
		}
	}
	var out []cellRounds
	at := map[Cell]int{}
	for _, r := range sorted(raw) {
		if !isB(r) || r.Err != "" {
			continue
		}
		a, found := ok[key{twin(r.Cell), r.Round}]
		if !found {
			continue
		}
		i, seen := at[r.Cell]
		if !seen {
			i = len(out)
			at[r.Cell] = i
			out = append(out, cellRounds{cell: r.Cell})
		}
		out[i].pairs = append(out[i].pairs, [2]Result{r, a})
	}
	return out
}

// roundRatios formats the rounds' ratios as the reports list them: "1.04
// 0.85 1.08".
func roundRatios(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(out, " ")
}
