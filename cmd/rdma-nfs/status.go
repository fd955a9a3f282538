package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/transport"
)

// The exit statuses of rdma-nfs, one per class of failure (usage lists
// them).
const (
	exitFailure   = 1 // a local failure (a local file), or one of no other class
	exitUsage     = 2 // a mistake on the command line
	exitTransport = 3 // the server not reached, or the connection failed or went silent
	exitMount     = 4 // MOUNT refused the export (MNT3ERR_*)
	exitNFS       = 5 // the server refused an NFS call (NFS3ERR_*, or the RPC call denied)
	// An interrupt exits with 128 plus the signal's number, as a shell
	// reports it: 130 for SIGINT, 143 for SIGTERM.
	exitSignalBase = 128
)

// interrupted is the cause of a run's context ended by a signal.
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return "interrupted (" + unix.SignalName(e.sig) + ")" }

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := (<-sigs).(syscall.Signal)
		// The command stops and removes its temporary files; a second
		// signal exits at once.
		cancel(interrupted{sig})
		<-sigs
		os.Exit(exitSignalBase + int(sig))
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(exitStatus(ctx, err, os.Stderr))
}

// exitStatus returns the exit status of a run that ended with err, having
// written err to stderr on one line ("rdma-nfs: err") unless flag did
// already: 0 for nil and -h, 128 + the signal's number when a signal
// ended ctx (interrupted), and otherwise the status of err's class
// (failureClass).
func exitStatus(ctx context.Context, err error, stderr io.Writer) int {
	var in interrupted
	if err != nil && errors.As(context.Cause(ctx), &in) {
		fmt.Fprintf(stderr, "rdma-nfs: %v\n", in)
		return exitSignalBase + int(in.sig)
	}
	if status := cmdline.Status("rdma-nfs", err, stderr); status != exitFailure {
		return status
	}
	return failureClass(err)
}

// failureClass is the exit status of a failure that is not the command
// line's: exitMount for a refused MNT, exitNFS for an NFS status or an
// RPC call the server denied, exitTransport when the server could not be
// reached, the connection was lost or gave a malformed reply, or a call
// went unanswered within its bound (-mount-timeout, -timeout);
// exitFailure otherwise (a local file, for one).
func failureClass(err error) int {
	var ne *client.Error
	if errors.As(err, &ne) {
		if ne.Mount {
			return exitMount
		}
		return exitNFS
	}
	var re *client.RPCError
	if errors.As(err, &re) {
		if strings.HasPrefix(re.Proc, "MOUNT") {
			return exitMount
		}
		return exitNFS
	}
	var (
		oe *net.OpError
		de *net.DNSError
		ae *net.AddrError
	)
	if errors.As(err, &oe) || errors.As(err, &de) || errors.As(err, &ae) {
		return exitTransport
	}
	for _, target := range []error{context.DeadlineExceeded, os.ErrDeadlineExceeded, client.ErrCallLost,
		client.ErrBadReply, client.ErrVerifierChanged, transport.ErrCallLost, transport.ErrCallTimeout,
		transport.ErrProtocol, transport.ErrBadReply} {
		if errors.Is(err, target) {
			return exitTransport
		}
	}
	return exitFailure
}
