package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/internal/bench"
	"github.com/go-rpcrdma/rpcrdma/internal/bench/chart"
	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
)

// parseBench parses the bench command's flags; a bad one is a usage
// error.
func parseBench(args []string, stderr io.Writer) (bench.Spec, *bench.Flags, error) {
	f := new(bench.Flags)
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.Register(fs)
	if err := cmdline.Parse(fs, args); err != nil {
		return bench.Spec{}, f, err
	}
	s, err := f.Spec(fs.Args())
	if err != nil {
		err = cmdline.Usage(err)
	}
	return s, f, err
}

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	spec, f, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	rep, err := bench.Run(ctx, spec, bench.RunOptions{Console: f.Console, ServerProfileOut: f.ServerProfileOut,
		ClientProfileOut: f.ClientProfileOut, Log: stderr})
	if err != nil {
		return err
	}
	return writeOutputs(rep, f, stdout)
}

// cmdReport renders the JSON report of an earlier run.
func cmdReport(args []string, stdout, stderr io.Writer) error {
	var f bench.Flags
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.CSV, "csv", "", "write the results as CSV to FILE (- for stdout)")
	fs.StringVar(&f.Markdown, "md", "", "write the results as a Markdown table to FILE")
	fs.StringVar(&f.Chart, "chart", "", "draw the chart to FILE (.png or .svg)")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cmdline.Usagef("report: want one JSON report file")
	}
	raw, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	return writeOutputs(rep, &f, stdout)
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
	inlines, err := bench.ParseSizes(*inl)
	if err != nil {
		return cmdline.Usagef("-inline: %w", err)
	}
	spec := bench.MatrixSpec(inlines)
	if err := spec.Validate(); err != nil {
		return cmdline.Usage(err)
	}
	rep, err := bench.Matrix(ctx, spec, bench.MatrixOptions{Console: *console, Log: stderr})
	if err != nil {
		return err
	}
	bench.WriteMatrix(stdout, rep.Matrix)
	fmt.Fprintf(stdout, "matrix: %d cells in %.0f s (one boot)\n", len(rep.Matrix), rep.Seconds)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := writeFileOrStdout(*jsonOut, append(b, '\n'), stdout); err != nil {
			return err
		}
	}
	return bench.CheckMatrix(rep)
}

// writeOutputs prints the report and writes the files f asks for.
func writeOutputs(rep bench.Report, f *bench.Flags, stdout io.Writer) error {
	bench.WriteText(stdout, rep)
	if f.JSON != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFileOrStdout(f.JSON, append(b, '\n'), stdout); err != nil {
			return err
		}
	}
	if f.CSV != "" {
		var b strings.Builder
		if err := bench.WriteCSV(&b, rep.Results); err != nil {
			return err
		}
		if err := writeFileOrStdout(f.CSV, []byte(b.String()), stdout); err != nil {
			return err
		}
	}
	if f.Markdown != "" {
		var b strings.Builder
		bench.WriteMarkdown(&b, rep)
		if err := os.WriteFile(f.Markdown, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	if f.Chart != "" {
		if err := chart.Draw(f.Chart, rep); err != nil {
			return fmt.Errorf("-chart: %w", err)
		}
	}
	return nil
}

func writeFileOrStdout(name string, b []byte, stdout io.Writer) error {
	if name == "-" {
		_, err := stdout.Write(b)
		return err
	}
	return os.WriteFile(name, b, 0o644)
}
