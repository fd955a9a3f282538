package bench

import (
	"fmt"
	"io"
)

// Inline settings round by round: the table's "vs 1024" divides ops/s
// totalled over all rounds, so one round that a busy host slowed weighs on
// it. A round measures a cell at every inline setting back to back (in an
// ABBA order, roundInlines), so the ratio of two settings within one round
// shares that round's load; writeInlineRounds gives each cell's ratios to
// its 1024 cell round by round and their median, the figure the issue's
// goal for a 2 KiB WRITE is judged on.

// inlineRow is one cell at an inline setting other than 1024 and its
// ops/s over the same cell at 1024 in each round that measured both.
type inlineRow struct {
	cell   Cell
	ratios []float64
}

// median of the rounds' ratios.
func (r inlineRow) median() float64 { return median(r.ratios) }

// inlineRows pairs every round of every cell at an inline setting other
// than 1024 with the same cell at 1024 in the same round. Cells that
// failed or measured nothing in either are left out.
func inlineRows(raw []Result) []inlineRow {
	var rows []inlineRow
	for _, c := range pairRounds(raw, func(r Result) bool { return r.Inline != 1024 },
		func(c Cell) Cell { c.Inline = 1024; return c }) {
		row := inlineRow{cell: c.cell}
		for _, p := range c.pairs {
			row.ratios = append(row.ratios, p[0].OpsPerS/p[1].OpsPerS)
		}
		rows = append(rows, row)
	}
	return rows
}

// writeInlineRounds prints inlineRows when the run had more than one
// round (with one, the table's "vs 1024" says the same). The 2 KiB WRITE
// rows carry the goal.
func writeInlineRounds(w io.Writer, raw []Result) {
	rows := inlineRows(raw)
	many := false
	for _, r := range rows {
		many = many || len(r.ratios) > 1
	}
	if !many {
		return
	}
	fmt.Fprintf(w, "\nops/s over the same cell at inline 1024, round by round (each pair measured back to back):\n")
	for _, r := range rows {
		goal := ""
		if r.cell.Workload == WorkWrite && r.cell.Size == 2<<10 {
			goal = "  (goal ≥ 1.5x)"
		}
		fmt.Fprintf(w, "  %-18s %-7s %7s ×%-2d inline %-6s median %.2fx  rounds %s%s\n", r.cell.Client+"→"+r.cell.Server, r.cell.Workload,
			SizeName(r.cell.Size), r.cell.InFlight, SizeName(r.cell.Inline), r.median(), roundRatios(r.ratios), goal)
	}
}
