// Command rpcrdma-demo is make demo: on a fresh machine it installs what
// the Soft-RoCE VM needs, boots it, starts rdma-nfsd over rxe, has the
// Linux kernel's NFSv3 client mount it over RDMA, copies a tree in and out
// and compares it, prints the settings both sides negotiated and a short
// benchmark table. It runs from the go-rpcrdma checkout (package
// internal/bench does the work).
//
//	rpcrdma-demo [-console FILE] [-json FILE]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/go-rpcrdma/rpcrdma/internal/bench"
	"github.com/go-rpcrdma/rpcrdma/internal/buildinfo"
	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
)

func main() { cmdline.Main("rpcrdma-demo", run) }

// run is the command: a bad flag is a usage error (exit status 2), -h
// exits 0.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rpcrdma-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	console := fs.String("console", "", "save the VM's console to FILE")
	jsonOut := fs.String("json", "", "write the benchmark's report as JSON to FILE")
	version := fs.Bool("version", false, "print the build and exit")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if *version {
		fmt.Fprintln(stdout, buildinfo.Read().String("rpcrdma-demo"))
		return nil
	}
	if fs.NArg() > 0 {
		return cmdline.Usagef("unexpected arguments: %v", fs.Args())
	}
	rep, err := bench.Demo(ctx, bench.DemoOptions{Console: *console, Out: stdout, Log: stderr})
	if err != nil {
		return err
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
