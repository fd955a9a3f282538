package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/internal/stats"
)

// Comparing two builds of rdma-nfsd (bench -compare REV): the machines are
// noisy (two shared cores under TCG; runs an hour apart differ more
// than a change of the server does), so a change of the server is judged in one run, both builds
// alternating. rdma-nfsd-b is rdma-nfsd built from the git revision REV;
// it runs every cell rdma-nfsd runs, right after it in even rounds and
// right before it in odd ones (an ABBA order, as for the inline
// settings), and the report gives each cell's per-round ratio B/A, their
// median and the geometric mean over all pairs. -compare-flags gives
// rdma-nfsd-b more flags; without -compare, rdma-nfsd-b is this checkout's
// binary with them. The bench's own Go client is this checkout's in both.

// serverB is rdma-nfsd-b: a, with the binary built from spec.Compare if
// set, and spec.CompareFlags added to its flags.
func serverB(a *rdmaNfsd, spec Spec) *rdmaNfsd {
	b := *a
	b.label = ServerGoB
	if spec.Compare != "" {
		b.bin = compareBin(a.bin)
	}
	b.extra = append(slices.Clone(a.extra), spec.CompareFlags...)
	return &b
}

// compareBin is where rdma-nfsd-b's binary goes, next to rdma-nfsd's bin.
func compareBin(bin string) string { return bin + "-b" }

// resolveCommit turns rev into the full hash of the commit it names in
// the repository at root.
func resolveCommit(ctx context.Context, root, rev string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("-compare %q: not a commit of %s: %w", rev, root, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// buildAtCommit builds the main package pkg of the module as it was at
// commit, into out: the commit's tree is exported with git archive into a
// scratch directory (the checkout is left alone) and built there, with
// cgo as env says.
func buildAtCommit(ctx context.Context, root, commit, out, pkg string, env []string) error {
	tmp, err := os.MkdirTemp("", "rpcrdma-bench-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", commit)
	var tarball, stderr bytes.Buffer
	archive.Stdout, archive.Stderr = &tarball, &stderr
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive %s: %w\n%s", commit, err, stderr.Bytes())
	}
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", tmp)
	untar.Stdin = &tarball
	if b, err := untar.CombinedOutput(); err != nil {
		return fmt.Errorf("extracting %s: %w\n%s", commit, err, b)
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	build.Dir, build.Env = tmp, append(os.Environ(), env...)
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s at %.12s: %w\n%s", pkg, commit, err, b)
	}
	return nil
}

// roundServers is the order of the servers in round r: as given, except
// that rdma-nfsd and rdma-nfsd-b trade places in odd rounds.
func roundServers(servers []string, r int) []string {
	out := slices.Clone(servers)
	a, b := slices.Index(out, ServerGo), slices.Index(out, ServerGoB)
	if r%2 == 1 && a >= 0 && b >= 0 {
		out[a], out[b] = out[b], out[a]
	}
	return out
}

// compareRow is one cell's comparison: rdma-nfsd-b's ops/s over
// rdma-nfsd's, and its CPU time per RPC over rdma-nfsd's, round by round.
type compareRow struct {
	cell   Cell // Server is rdma-nfsd-b
	ratios []float64
	cpu    []float64 // rounds where both CPU times were counted
}

// median of the rounds' ops/s ratios.
func (c compareRow) median() float64 { return median(c.ratios) }

// median of xs (NA for none).
func median(xs []float64) float64 {
	if m, ok := stats.Median(xs); ok {
		return m
	}
	return NA
}

// compareRows pairs every round of every rdma-nfsd-b cell with rdma-nfsd's
// same cell in the same round. Cells that failed, or measured nothing, in
// either build are left out.
func compareRows(raw []Result) []compareRow {
	var rows []compareRow
	for _, c := range pairRounds(raw, func(r Result) bool { return r.Server == ServerGoB },
		func(c Cell) Cell { c.Server = ServerGo; return c }) {
		row := compareRow{cell: c.cell}
		for _, p := range c.pairs {
			b, a := p[0], p[1]
			row.ratios = append(row.ratios, b.OpsPerS/a.OpsPerS)
			if b.ServerCPUus != NA && a.ServerCPUus != NA && a.ServerCPUus > 0 {
				row.cpu = append(row.cpu, b.ServerCPUus/a.ServerCPUus)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// writeCompare prints the comparison of the two builds, if the run made
// one: per cell the median of the rounds' B/A ops/s ratios and each
// round's, the median B/A of the server's CPU time per RPC, and the
// geometric mean of the ops/s ratios over all pairs.
func writeCompare(w io.Writer, spec Spec, raw []Result) {
	rows := compareRows(raw)
	if !spec.comparing() || len(rows) == 0 {
		return
	}
	b := "this checkout"
	if spec.Compare != "" {
		b = fmt.Sprintf("at %.12s", spec.Compare)
	}
	if len(spec.CompareFlags) > 0 {
		b += fmt.Sprintf(", with %q", strings.Join(spec.CompareFlags, " "))
	}
	fmt.Fprintf(w, "\n%s (%s) / %s (this checkout): ops/s round by round, and the server's CPU time per RPC:\n", ServerGoB, b, ServerGo)
	var logSum float64
	var n int
	for _, r := range rows {
		for _, x := range r.ratios {
			logSum += math.Log(x)
			n++
		}
		cpu := "-"
		if m := median(r.cpu); m != NA {
			cpu = fmt.Sprintf("%.2fx", m)
		}
		fmt.Fprintf(w, "  %-6s %-7s %7s ×%-2d inline %-6s median %.2fx  rounds %s  CPU/RPC %s\n", r.cell.Client, r.cell.Workload,
			SizeName(r.cell.Size), r.cell.InFlight, SizeName(r.cell.Inline), r.median(), roundRatios(r.ratios), cpu)
	}
	fmt.Fprintf(w, "  geometric mean of the %d pairs: %.2fx\n", n, math.Exp(logSum/float64(n)))
}
