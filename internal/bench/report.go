package bench

import (
	"fmt"
	"io"
)

// WriteText prints a report's heading, its table and the comparisons the
// run asked for (server ratios, inline rounds, rdma-nfsd-b, perftest).
func WriteText(w io.Writer, rep Report) {
	fmt.Fprintf(w, "\n%s; %s; %s; load %s\n", rep.Provider, rep.Date, rep.Host, rep.Load)
	if rep.GuestKernel != "" {
		fmt.Fprintf(w, "guest kernel: %s%s\n", rep.GuestKernel, clockNote(rep.GuestClock))
	}
	writeTable(w, rep.Results)
	writeServerRatios(w, rep.Results)
	writeInlineRounds(w, rep.Raw)
	writeCompare(w, rep.Spec, rep.Raw)
	writeBaseline(w, rep.Baseline, rep.Results, rep.Raw)
}

// WriteCSV writes the results as CSV, one row a cell.
func WriteCSV(w io.Writer, rs []Result) error { return writeCSV(w, rs) }

// WriteMarkdown writes the report as a Markdown table.
func WriteMarkdown(w io.Writer, rep Report) { writeMarkdown(w, rep) }
