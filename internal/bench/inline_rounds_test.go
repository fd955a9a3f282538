package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestInlineRows pairs each round of a cell at 4096 with the same cell at
// 1024 in the same round, and leaves out what cannot be paired.
func TestInlineRows(t *testing.T) {
	res := func(client string, inline, round int, ops float64, err string) Result {
		return Result{Cell: Cell{Client: client, Server: ServerGo, Workload: WorkWrite, Size: 2 << 10, InFlight: 8, Inline: inline},
			Round: round, OpsPerS: ops, Err: err}
	}
	raw := []Result{
		res(ClientKernel, 1024, 0, 100, ""), res(ClientKernel, 4096, 0, 180, ""),
		res(ClientKernel, 4096, 1, 100, ""), res(ClientKernel, 1024, 1, 80, ""),
		res(ClientKernel, 1024, 2, 100, ""), res(ClientKernel, 4096, 2, 120, ""),
		res(ClientKernel, 1024, 3, 100, "boom"), res(ClientKernel, 4096, 3, 500, ""), // 1024 failed
		res(ClientKernel, 4096, 4, 500, ""), // no 1024 in round 4
		res(ClientKernel, 16384, 0, 300, ""),
		res(ClientGo, 4096, 0, 100, ""), // no 1024 cell for this client at all
	}
	rows := inlineRows(raw)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(rows), rows)
	}
	if r := rows[0]; r.cell.Inline != 4096 || !slices.Equal(r.ratios, []float64{1.8, 1.25, 1.2}) || r.median() != 1.25 {
		t.Errorf("4096: %+v, median %v", r, r.median())
	}
	if r := rows[1]; r.cell.Inline != 16384 || !slices.Equal(r.ratios, []float64{3}) {
		t.Errorf("16384: %+v", r)
	}
}

// TestWriteInlineRounds prints the rows only when some cell has more than
// one round, and marks the 2 KiB WRITE's goal.
func TestWriteInlineRounds(t *testing.T) {
	res := func(w string, size, inline, round int, ops float64) Result {
		return Result{Cell: Cell{Client: ClientKernel, Server: ServerKnfsd, Workload: w, Size: size, InFlight: 1, Inline: inline},
			Round: round, OpsPerS: ops}
	}
	one := []Result{res(WorkWrite, 2<<10, 1024, 0, 100), res(WorkWrite, 2<<10, 4096, 0, 150)}
	var b bytes.Buffer
	writeInlineRounds(&b, one)
	if b.Len() != 0 {
		t.Errorf("one round printed:\n%s", b.String())
	}
	two := append(one, res(WorkWrite, 2<<10, 1024, 1, 100), res(WorkWrite, 2<<10, 4096, 1, 170),
		res(WorkRead, 2<<10, 1024, 0, 100), res(WorkRead, 2<<10, 4096, 0, 110))
	writeInlineRounds(&b, two)
	out := b.String()
	write, read := lineWith(out, "write"), lineWith(out, "read")
	if !strings.Contains(write, "median 1.60x") || !strings.Contains(write, "rounds 1.50 1.70") || !strings.Contains(write, "goal ≥ 1.5x") {
		t.Errorf("WRITE line %q in:\n%s", write, out)
	}
	if !strings.Contains(read, "median 1.10x") || strings.Contains(read, "goal") {
		t.Errorf("READ line %q in:\n%s", read, out)
	}
}

// lineWith returns the first line of s that contains sub.
func lineWith(s, sub string) string {
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
