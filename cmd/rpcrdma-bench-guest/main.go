// Command rpcrdma-bench-guest is the guest side of rpcrdma-bench and
// rpcrdma-demo: they build it, share it into the Soft-RoCE VM and run it
// there, where it runs the bench cells of a spec, the demo or the
// interoperability matrix (package internal/bench). It refuses to run
// outside the VM.
//
//	rpcrdma-bench-guest [-mode bench|demo|matrix] [-spec FILE] [-out FILE] [-rdma-nfsd BIN]
//	rpcrdma-bench-guest -version
package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/go-rpcrdma/rpcrdma/internal/bench"
	"github.com/go-rpcrdma/rpcrdma/internal/buildinfo"
	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
)

func main() { cmdline.Main("rpcrdma-bench-guest", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := bench.GuestOptions{Stdout: stdout}
	fs := flag.NewFlagSet("rpcrdma-bench-guest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Mode, "mode", "bench", "bench, demo or matrix")
	fs.StringVar(&o.Spec, "spec", "/host/spec.json", "the spec (JSON)")
	fs.StringVar(&o.Out, "out", "/host/results.jsonl", "results, one JSON object a line")
	fs.StringVar(&o.RdmaNfsd, "rdma-nfsd", "/host/rdma-nfsd", "the rdma-nfsd binary")
	version := fs.Bool("version", false, "print the build and exit")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if *version {
		fmt.Fprintln(stdout, buildinfo.Read().String("rpcrdma-bench-guest"))
		return nil
	}
	if fs.NArg() > 0 {
		return cmdline.Usagef("unexpected arguments: %v", fs.Args())
	}
	return bench.Guest(ctx, o)
}
