package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// MatrixSpec is the spec of the interoperability matrix at the given
// inline settings: {kernel, Go NFS client} × {rdma-nfsd, knfsd}.
func MatrixSpec(inlines []int) Spec {
	return Spec{Provider: "rdmacore", Duration: time.Second, Inlines: inlines, Servers: []string{ServerGo, ServerKnfsd},
		Clients: []string{ClientKernel, ClientGo}, Workloads: []string{WorkNull}, InFlight: []int{1}, Rounds: 1}
}

// MatrixOptions are where the matrix's run writes.
type MatrixOptions struct {
	// Console, if set, is the file the VM's console is saved to.
	Console string
	// Log gets the set-up lines and each row as it comes (nil:
	// discarded).
	Log io.Writer
}

// Matrix runs the interoperability matrix of spec (MatrixSpec) in one
// boot of the VM and returns its rows in the report's Matrix. It runs from
// the go-rpcrdma checkout. A failed cell is a row, not an error:
// CheckMatrix judges the rows.
func Matrix(ctx context.Context, spec Spec, o MatrixOptions) (Report, error) {
	stderr := o.Log
	if stderr == nil {
		stderr = io.Discard
	}
	t0 := time.Now()
	root, err := moduleRoot()
	if err != nil {
		return Report{}, err
	}
	img, err := prepareHost(ctx, root, stderr)
	if err != nil {
		return Report{}, err
	}
	run := &vmRun{mode: "matrix", spec: spec, log: stderr, console: o.Console, timeout: 8 * time.Minute,
		onLine: func(l string) {
			if rest, ok := tagged(l, tagMatrix); ok {
				var m MatrixRow
				if json.Unmarshal([]byte(rest), &m) == nil {
					fmt.Fprintln(stderr, "matrix:", m)
				}
			}
		}}
	raw, err := run.run(ctx, img, root)
	if err != nil {
		return Report{}, err
	}
	rows, err := decodeLines[MatrixRow](raw)
	if err != nil {
		return Report{}, err
	}
	return Report{Date: t0.UTC().Format(time.RFC3339), Host: hostDescription(), GuestKernel: guestKernel(img), GuestClock: run.clock,
		Provider: "rdmacore (Soft-RoCE rxe in a qemu TCG VM)", Spec: spec, Matrix: rows, Seconds: time.Since(t0).Seconds()}, nil
}

// CheckMatrix fails a matrix report with a failed cell or without every
// cell of its spec.
func CheckMatrix(rep Report) error {
	want := 3 * 2 * 2 * len(rep.Spec.Inlines) // {kernel, go, go offering v2} × {rdma-nfsd, knfsd} × R × inline
	failed := 0
	for _, m := range rep.Matrix {
		if m.Status == "FAIL" {
			failed++
		}
	}
	switch {
	case failed > 0:
		return fmt.Errorf("matrix: %d of %d cells failed", failed, len(rep.Matrix))
	case len(rep.Matrix) != want:
		return fmt.Errorf("matrix: %d rows, want %d", len(rep.Matrix), want)
	}
	return nil
}

// WriteMatrix prints the matrix as a table.
func WriteMatrix(w io.Writer, rows []MatrixRow) {
	fmt.Fprintln(w, "\ninteroperability matrix (client × server × inline × R; /v2: offering RPC-over-RDMA version 2):")
	fmt.Fprintf(w, "%-9s %-9s %5s %-5s %-4s %6s  %s\n", "client", "server", "inline", "R", "", "time", "checks / settings")
	for _, m := range rows {
		fmt.Fprintln(w, m)
		if m.Status == "ok" && (m.Kernel != "" || m.Ours != "") {
			fmt.Fprintf(w, "%41s kernel: %s; ours: %s\n", "", orDash(m.Kernel), orDash(m.Ours))
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
