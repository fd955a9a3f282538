package bench

import (
	"context"
	"fmt"
	"io"
	"time"
)

// DemoOptions are where the demo writes.
type DemoOptions struct {
	// Console, if set, is the file the VM's console is saved to.
	Console string
	// Out gets the demo's report; Log the progress and set-up lines (nil:
	// discarded).
	Out, Log io.Writer
}

// Demo is make demo, from a fresh machine to the report: it installs what
// the VM needs, boots it, starts rdma-nfsd over rxe, has the Linux kernel
// client mount it over RDMA, copies a tree in and out and compares it,
// prints the negotiated settings and a short benchmark table (DemoSpec).
// It runs from the go-rpcrdma checkout. The report holds the table's
// results; an error is returned for any failed cell.
func Demo(ctx context.Context, o DemoOptions) (Report, error) {
	stdout, stderr := o.Out, o.Log
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	t0 := time.Now()
	load0 := loadAvg()
	root, err := moduleRoot()
	if err != nil {
		return Report{}, err
	}
	fmt.Fprintln(stdout, "== go-rpcrdma demo: the Linux kernel's NFSv3 client mounts rdma-nfsd over RDMA (Soft-RoCE in a qemu VM)")
	img, err := prepareHost(ctx, root, stderr)
	if err != nil {
		return Report{}, err
	}
	ph := &phases{}
	ph.add("host", time.Since(t0))
	spec := demoSpec()
	prog := newProgress(stderr)
	run := &vmRun{mode: "demo", spec: spec, log: stderr, console: o.Console, phases: ph,
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
		return Report{}, err
	}
	results, err := decodeLines[Result](lines)
	if err != nil {
		return Report{}, err
	}
	raw := results
	results = mergeRounds(results)
	fillRatios(results)
	fmt.Fprintf(stdout, "\nA short benchmark (rdma-nfsd over rxe in qemu TCG, not hardware figures; %d rounds of %v per cell, host load %s; `make bench` runs the whole matrix):\n",
		spec.Rounds, spec.Duration, loadAvg())
	writeTable(stdout, results)
	rep := Report{Date: t0.UTC().Format(time.RFC3339), Host: hostDescription(), GuestKernel: guestKernel(img), GuestClock: run.clock,
		Provider: "rdmacore (Soft-RoCE rxe in a qemu TCG VM)", Spec: spec, Load: load0 + " → " + loadAvg(),
		Results: results, Raw: raw}
	for _, r := range results {
		if r.Err != "" {
			return rep, fmt.Errorf("cell %s: %s", r.Label(), r.Err)
		}
	}
	if len(results) != len(spec.AllCells()) || results[0].Rounds != spec.Rounds {
		return rep, fmt.Errorf("%d results for %d cells", len(results), len(spec.AllCells()))
	}
	rep.Seconds = time.Since(t0).Seconds()
	fmt.Fprintf(stdout, "\ndemo done in %.0f s (%s)\n", rep.Seconds, ph)
	return rep, nil
}
