// Command rxevm builds and runs the end-to-end test VM of go-rpcrdma: a
// Debian kernel and initramfs under qemu TCG, with Soft-RoCE (rdma_rxe) on a
// veth pair, rdma-core, perftest and the kernel NFS client and server.
//
// Usage:
//
//	rxevm build [-refresh] [-q]       download (cached) and assemble the image
//	rxevm run [flags] 'CMD'           boot, run CMD with bash in the guest, power off
//	rxevm shell [flags]               boot into an interactive shell
//	rxevm manifest                    print the image's package versions
//
// run exits with CMD's exit status; 124 means timeout, 125 that qemu failed,
// 126 that the guest reported no status, 130 an interrupt. Flags of run and
// shell:
//
//	-s DIR     share the host directory DIR at /host (read-write, virtio-9p)
//	-t SECS    kill the VM after SECS seconds (default 300)
//	-m MIB     guest memory (default 2048)   -c N  vCPUs (default 2)
//	-net MODE  wire (default), flat or none
//	-mtu N     MTU of the veth pair under rxe (default 1500: path MTU 1024; 9000: 4096)
//	-append P  extra guest kernel parameters (after the harness's own)
//	-l FILE    also write the console output to FILE
//	-v         full kernel log on the console, build progress
//
// In the guest, veth0 10.0.0.1 with rxe0 is the "server" and veth1 10.0.0.2
// with rxe1 the "client"; rxevm-nfsd-start starts knfsd (NFSv3 on TCP 2049
// and RDMA 20049, exporting a tmpfs at /export) and rxevm-nfs-mount mounts it.
// The cache directory is $RPCRDMA_VM_CACHE, by default
// $HOME/.cache/go-rpcrdma/vm.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/buildinfo"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  rxevm build [-refresh] [-q]     download (cached) and assemble the VM image
  rxevm run [flags] 'CMD'         boot, run CMD with bash in the guest, power off;
                                  exit with CMD's status (124 timeout, 125 qemu
                                  failed, 126 no status, 130 interrupted)
  rxevm shell [flags]             boot into an interactive shell
  rxevm manifest                  print the image's package versions
run/shell flags: -s DIR (share at /host) -t SECS -m MIB -c N -net wire|flat|none
                 -mtu N -append PARAMS -l FILE -v
cache: $RPCRDMA_VM_CACHE, default $HOME/.cache/go-rpcrdma/vm
`)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := rxevm(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// rxevm runs the subcommand in args and returns the exit status.
func rxevm(ctx context.Context, args []string) int {
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "build":
		return cmdBuild(ctx, args[1:])
	case "run":
		return cmdRun(ctx, args[1:], false)
	case "shell":
		return cmdRun(ctx, args[1:], true)
	case "manifest":
		fs := flag.NewFlagSet("manifest", flag.ContinueOnError)
		if status, done := parseFlags(fs, args[1:]); done {
			return status
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(os.Stderr, "rxevm: manifest: unexpected arguments %q\n", fs.Args())
			return 2
		}
		return cmdManifest()
	case "help", "-h", "-help", "--help":
		usage()
		return 0
	case "version", "-version", "--version":
		fmt.Println(buildinfo.Read().String("rxevm"))
		return 0
	}
	fmt.Fprintf(os.Stderr, "rxevm: unknown command %q\n", args[0])
	usage()
	return 2
}

// parseFlags parses a command's args with fs; done says the command ends
// there with status: 0 after -h (fs printed the usage), 2 for a bad flag
// (fs printed a message naming it, and the usage).
func parseFlags(fs *flag.FlagSet, args []string) (status int, done bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	}
	return 2, true
}

func cmdBuild(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	refresh := fs.Bool("refresh", false, "resolve the kernel and packages again from the current apt lists")
	quiet := fs.Bool("q", false, "do not print progress")
	if status, done := parseFlags(fs, args); done {
		return status
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "rxevm: build: unexpected arguments %q\n", fs.Args())
		return 2
	}
	opts := vm.BuildOptions{Refresh: *refresh}
	if !*quiet {
		opts.Log = os.Stderr
	}
	t0 := time.Now()
	img, err := vm.Build(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rxevm:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "rxevm: image %s (kernel %s, %d packages) ready in %.1fs\n",
		img.Dir, img.KernelRelease, len(img.Packages), time.Since(t0).Seconds())
	return 0
}

func cmdManifest() int {
	img, err := vm.LoadImage("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rxevm:", err)
		return 1
	}
	fmt.Printf("kernel-release %s\n%s\n", img.KernelRelease, strings.Join(img.Packages, "\n"))
	return 0
}

func cmdRun(ctx context.Context, args []string, interactive bool) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	share := fs.String("s", "", "host `DIR` shared read-write at /host")
	secs := fs.Int("t", 300, "timeout in `SECS`; qemu is killed after it")
	mem := fs.Int("m", 2048, "guest memory in `MIB`")
	cpus := fs.Int("c", 2, "guest vCPUs")
	netMode := fs.String("net", "wire", "guest network: wire, flat or none")
	mtu := fs.Int("mtu", 0, "MTU of the veth pair under rxe (0: 1500, rxe path MTU 1024; 9000: 4096)")
	logFile := fs.String("l", "", "also write the console output to `FILE`")
	appendArgs := fs.String("append", "", "extra guest kernel `PARAMS` (after the harness's own)")
	verbose := fs.Bool("v", false, "full kernel log and build progress")
	if status, done := parseFlags(fs, args); done {
		return status
	}
	command := strings.Join(fs.Args(), " ")
	if !interactive && strings.TrimSpace(command) == "" {
		usage()
		return 2
	}
	if !vm.ValidMTU(*mtu) {
		fmt.Fprintf(os.Stderr, "rxevm: -mtu %d: want 576..65535 (0: the default, 1500)\n", *mtu)
		return 2
	}
	bopts := vm.BuildOptions{}
	if *verbose {
		bopts.Log = os.Stderr
	}
	img, err := vm.Build(ctx, bopts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rxevm:", err)
		return vm.StatusQEMUFailed
	}
	opts := vm.Options{Image: img, Share: *share, Timeout: time.Duration(*secs) * time.Second,
		MemMiB: *mem, CPUs: *cpus, Net: vm.Net(*netMode), MTU: *mtu, Verbose: *verbose, Append: *appendArgs}
	var console io.Writer = os.Stdout
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rxevm:", err)
			return 2
		}
		defer f.Close()
		console = io.MultiWriter(os.Stdout, f)
	}
	t0 := time.Now()
	var status int
	if interactive {
		status, err = vm.Shell(ctx, opts, os.Stdin, console)
	} else {
		opts.Console = console
		status, _, err = vm.Run(ctx, opts, command)
	}
	switch {
	case errors.Is(err, vm.ErrTimeout):
		fmt.Fprintf(os.Stderr, "rxevm: TIMEOUT: qemu killed after %ds\n", *secs)
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "rxevm: interrupted: qemu stopped")
	case err != nil:
		fmt.Fprintln(os.Stderr, "rxevm:", err)
	case *verbose:
		fmt.Fprintf(os.Stderr, "rxevm: guest exit status %d after %.1fs\n", status, time.Since(t0).Seconds())
	}
	return status
}
