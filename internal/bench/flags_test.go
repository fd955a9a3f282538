package bench

import (
	"context"
	"flag"
	"io"
)

// parseBench parses the bench command's flags as rpcrdma-bench does.
func parseBench(args []string, stderr io.Writer) (Spec, *Flags, error) {
	f := new(Flags)
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		return Spec{}, f, err
	}
	s, err := f.Spec(fs.Args())
	return s, f, err
}

// runArgs runs the bench command's flags args and prints the report to
// stdout, as rpcrdma-bench bench does.
func runArgs(args []string, stdout, stderr io.Writer) (Report, error) {
	spec, f, err := parseBench(args, stderr)
	if err != nil {
		return Report{}, err
	}
	rep, err := Run(context.Background(), spec, RunOptions{Console: f.Console, ServerProfileOut: f.ServerProfileOut,
		ClientProfileOut: f.ClientProfileOut, Log: stderr})
	if err != nil {
		return rep, err
	}
	WriteText(stdout, rep)
	return rep, nil
}
