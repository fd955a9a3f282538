// Package cmdline holds what the programs of the module (cmd/rdma-nfs,
// cmd/rdma-nfsd, cmd/rpcrdma-bench...) share about their command lines:
// their main (Main), range checks of flags that name the flag, and the
// exit statuses of flag.ExitOnError: 0 for -h, 2 for a mistake on the command line (an
// unknown flag, a value out of its range, a setting the library refuses:
// transport.ErrConfig), 1 for a failure while running.
package cmdline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/transport"
)

// usageError is a mistake on the command line (exit status 2); reported
// means flag printed it already, with the usage.
type usageError struct {
	err      error
	reported bool
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// Usage marks err (not nil) as a mistake on the command line.
func Usage(err error) error { return &usageError{err: err} }

// Usagef is Usage of fmt.Errorf(format, args...).
func Usagef(format string, args ...any) error { return Usage(fmt.Errorf(format, args...)) }

// Parse parses args with fs (flag.ContinueOnError, its output set): an
// error is a usage error flag has reported already, or flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &usageError{err: err, reported: true}
}

// Main is a program's main: it calls run with the command line's
// arguments, standard output and standard error, and a context that ends
// at SIGINT or SIGTERM, and exits with Status(prog, run's error).
func Main(prog string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(Status(prog, err, os.Stderr))
}

// Status returns the exit status of a run of prog that ended with err,
// having written err to stderr on one line ("prog: err") unless flag did
// already: 0 for nil and flag.ErrHelp (-h), 2 for a usage error and a
// setting out of range (transport.ErrConfig), 1 otherwise.
func Status(prog string, err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue *usageError
	isUsage := errors.As(err, &ue)
	if !isUsage || !ue.reported {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	}
	if isUsage || errors.Is(err, transport.ErrConfig) {
		return 2
	}
	return 1
}

// Int checks the value v of the flag name ("-credits"): it must lie in
// [lo, hi], or be 0 when zero says what 0 means ("" when 0 is not
// special). The error names the flag, its value and the range.
func Int(name string, v, lo, hi int64, zero string) error {
	if v >= lo && v <= hi || v == 0 && zero != "" {
		return nil
	}
	rng := fmt.Sprintf("[%d, %d]", lo, hi)
	if hi == math.MaxInt64 {
		rng = fmt.Sprintf("[%d, +inf)", lo)
	}
	if zero != "" {
		return Usagef("%s %d: out of range %s (0: %s)", name, v, rng, zero)
	}
	return Usagef("%s %d: out of range %s", name, v, rng)
}

// Inline checks the value of an inline size flag (transport.Config's
// InlineSend and InlineRecv): a multiple of 1024 from 1024 to 262144
// (RFC 8797 §4.2), or 0 for transport.DefaultInline.
func Inline(name string, v int) error {
	if v == 0 || v >= cmpriv.MinSize && v <= cmpriv.MaxSize && v%1024 == 0 {
		return nil
	}
	return Usagef("%s %d: out of range [%d, %d], a multiple of 1024 (RFC 8797; 0: %d)",
		name, v, cmpriv.MinSize, cmpriv.MaxSize, transport.DefaultInline)
}

// Check returns the first error of errs that is not nil.
func Check(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
