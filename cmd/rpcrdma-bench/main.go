// Command rpcrdma-bench measures NFSv3 over RPC-over-RDMA (RFC 8166, RFC
// 8267) against the 1024-byte default of RFC 8166 and against the Linux
// kernel, and runs the interoperability matrix.
//
//	rpcrdma-bench bench [flags]        the benchmark matrix (in the VM; -provider soft: here)
//	rpcrdma-bench bench -host [flags]  the benchmark on this host's own RDMA device, without the VM
//	rpcrdma-bench matrix [flags]       the interoperability matrix (in the VM)
//	rpcrdma-bench report [flags] FILE  the table, CSV, Markdown or chart of a -json report
//
// The VM is the Soft-RoCE VM of internal/vm (a Debian 6.1 kernel under qemu
// TCG, rdma_rxe on a veth pair); the command installs what it needs,
// builds the image once, builds cmd/rdma-nfsd and cmd/rpcrdma-bench-guest
// for the guest and runs the guest side there. It runs from the
// go-rpcrdma checkout. The measurement is package internal/bench; the
// demo (make demo) is cmd/rpcrdma-demo.
//
// Every cell of the benchmark reports ops/s, MB/s, p50/p99 latency, RPCs
// per operation, the RDMA operations per RPC by kind (Sends, RDMA Reads,
// RDMA Writes, remote and local invalidations: counted by the peers, not
// estimated), chunks per RPC, rxe packets per RPC, rdma-nfsd's CPU time
// and allocations per RPC, and the ratio to the same cell at inline 1024.
// Results print as a table and go to -json, -csv, -md and a -chart
// (gonum/plot).
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/go-rpcrdma/rpcrdma/internal/buildinfo"
	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
)

func main() { cmdline.Main("rpcrdma-bench", dispatch) }

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  rpcrdma-bench bench [-quick] [-d DUR] [-provider rdmacore|soft] [-inline LIST] [-sizes LIST]
        [-inflight LIST] [-workloads LIST] [-servers LIST] [-clients LIST]
        [-json FILE] [-csv FILE] [-md FILE] [-chart FILE.png|.svg] [-console FILE]
  rpcrdma-bench bench -host [-device NAME] [-addr IP] [-kernel] [the cell flags above]
        the same on this host's own RDMA device through rdma-core, without the VM: rdma-nfsd
        (bound to the device's address) with the Go client, and with -kernel the kernel client
  rpcrdma-bench matrix [-inline LIST] [-json FILE] [-console FILE]
  rpcrdma-bench report [-csv FILE] [-md FILE] [-chart FILE] REPORT.json
        prints (and converts, draws) the report of an earlier bench run
  rpcrdma-bench version
The demo (make demo) is rpcrdma-demo.
`)
}

// dispatch runs the subcommand of args. A mistake on the command line (an
// unknown command or flag, a value out of its range) is a usage error of
// package cmdline: exit status 2; -h exits 0.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return cmdline.Usagef("no command")
	}
	switch args[0] {
	case "bench":
		return cmdBench(ctx, args[1:], stdout, stderr)
	case "matrix":
		return cmdMatrix(ctx, args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return nil
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, buildinfo.Read().String("rpcrdma-bench"))
		return nil
	}
	usage(stderr)
	return cmdline.Usagef("unknown command %q", args[0])
}
