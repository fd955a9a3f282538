package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
)

// cmdDemo is make demo: on the host, everything from a fresh machine to
// the report; in the VM, guestDemo and the demo's cells.
func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	console := fs.String("console", "", "save the VM's console to FILE")
	jsonOut := fs.String("json", "", "write the benchmark's report as JSON to FILE")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	t0 := time.Now()
	load0 := loadAvg()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "== go-rpcrdma demo: the Linux kernel's NFSv3 client mounts rdma-nfsd over RDMA (Soft-RoCE in a qemu VM)")
	img, err := prepareHost(ctx, root, stderr)
	if err != nil {
		return err
	}
	ph := &phases{}
	ph.add("host", time.Since(t0))
	spec := demoSpec()
	prog := newProgress(stderr)
	run := &vmRun{mode: "demo", spec: spec, log: stderr, console: *console, phases: ph,
		timeout: 5 * time.Minute,
		onLine: func(l string) {
			if rest, ok := tagged(l, tagDemo); ok {
				prog.end()
				fmt.Fprintln(stdout, rest)
				return
			}
			prog.guestLine(l)
		}}
	lines, err := run.run(ctx, img, root)
	prog.end()
	if err != nil {
		return err
	}
	results, err := decodeLines[Result](lines)
	if err != nil {
		return err
	}
	raw := results
	results = mergeRounds(results)
	fillRatios(results)
	fmt.Fprintf(stdout, "\nA short benchmark (rdma-nfsd over rxe in qemu TCG, not hardware figures; %d rounds of %v per cell, host load %s; `make bench` runs the whole matrix):\n",
		spec.Rounds, spec.Duration, loadAvg())
	writeTable(stdout, results)
	for _, r := range results {
		if r.Err != "" {
			return fmt.Errorf("cell %s: %s", r.Label(), r.Err)
		}
	}
	if len(results) != len(spec.AllCells()) || results[0].Rounds != spec.Rounds {
		return fmt.Errorf("%d results for %d cells", len(results), len(spec.AllCells()))
	}
	if *jsonOut != "" {
		rep := Report{Date: t0.UTC().Format(time.RFC3339), Host: hostDescription(), GuestKernel: guestKernel(img), GuestClock: run.clock,
			Provider: "rdmacore (Soft-RoCE rxe in a qemu TCG VM)", Spec: spec, Load: load0 + " → " + loadAvg(),
			Results: results, Raw: raw, Seconds: time.Since(t0).Seconds()}
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\ndemo done in %.0f s (%s)\n", time.Since(t0).Seconds(), ph)
	return nil
}

// cmdMatrix runs the interoperability matrix in one boot and prints it as
// a table; any failed cell fails the command.
func cmdMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	inl := fs.String("inline", "1024,4096,65536", "inline settings")
	jsonOut := fs.String("json", "", "write the rows as JSON to FILE")
	console := fs.String("console", "", "save the VM's console to FILE")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	inlines, err := parseInts(*inl, parseSize)
	if err != nil {
		return cmdline.Usagef("-inline: %w", err)
	}
	spec := Spec{Provider: "rdmacore", Duration: time.Second, Inlines: inlines, Servers: []string{ServerGo, ServerKnfsd},
		Clients: []string{ClientKernel, ClientGo}, Workloads: []string{WorkNull}, InFlight: []int{1}, Rounds: 1}
	if err := spec.Validate(); err != nil {
		return cmdline.Usage(err)
	}
	t0 := time.Now()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	img, err := prepareHost(ctx, root, stderr)
	if err != nil {
		return err
	}
	run := &vmRun{mode: "matrix", spec: spec, log: stderr, console: *console, timeout: 8 * time.Minute,
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
		return err
	}
	rows, err := decodeLines[MatrixRow](raw)
	if err != nil {
		return err
	}
	writeMatrix(stdout, rows)
	fmt.Fprintf(stdout, "matrix: %d cells in %.0f s (one boot)\n", len(rows), time.Since(t0).Seconds())
	if *jsonOut != "" {
		rep := Report{Date: t0.UTC().Format(time.RFC3339), Host: hostDescription(), GuestKernel: guestKernel(img), GuestClock: run.clock,
			Provider: "rdmacore (Soft-RoCE rxe in a qemu TCG VM)", Spec: spec, Matrix: rows, Seconds: time.Since(t0).Seconds()}
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := writeFileOrStdout(*jsonOut, append(b, '\n'), stdout); err != nil {
			return err
		}
	}
	want := 2 * 2 * 2 * len(inlines) // {kernel, go} × {rdma-nfsd, knfsd} × R × inline
	failed := 0
	for _, m := range rows {
		if m.Status == "FAIL" {
			failed++
		}
	}
	switch {
	case failed > 0:
		return fmt.Errorf("matrix: %d of %d cells failed", failed, len(rows))
	case len(rows) != want:
		return fmt.Errorf("matrix: %d rows, want %d", len(rows), want)
	}
	return nil
}

// writeMatrix prints the matrix as a table.
func writeMatrix(w io.Writer, rows []MatrixRow) {
	fmt.Fprintln(w, "\ninteroperability matrix (client × server × inline × R):")
	fmt.Fprintf(w, "%-6s %-9s %5s %-5s %-4s %6s  %s\n", "client", "server", "inline", "R", "", "time", "checks / settings")
	for _, m := range rows {
		fmt.Fprintln(w, m)
		if m.Status == "ok" && (m.Kernel != "" || m.Ours != "") {
			fmt.Fprintf(w, "%38s kernel: %s; ours: %s\n", "", orDash(m.Kernel), orDash(m.Ours))
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
