// Command rdma-nfs is an NFS version 3 client over RPC-over-RDMA (RFC 8166,
// RFC 8267) for any NFSv3/RDMA server (knfsd, rdma-nfsd), built on package
// nfs's client:
//
//	rdma-nfs -server 10.0.0.1 -export /export ls /
//	rdma-nfs -server 10.0.0.1 -export /export put big.iso iso/big.iso
//	rdma-nfs -server 10.0.0.1 -export /export -stats get iso/big.iso /tmp/big.iso
//	rdma-nfs -server 10.0.0.1 -export /export cp -r :src ./dst
//	rdma-nfs -server 10.0.0.1 -export /export bench -size 32MiB
//
// Commands: ls [path], stat path, cat path, get remote local, put local
// remote, cp [-r] src dst (remote paths start with ":"), exports, bench.
// MOUNT goes over TCP (its port from the portmapper unless -mount-addr),
// NFS over RDMA to -port (20049). Transfers longer than a moment show a
// progress bar on a terminal (-progress). -stats prints the connection's
// negotiated settings (RFC 8797 inline sizes, credits, remote
// invalidation) and counters at the end.
//
// The exit status is 0 on success (and for -h), 2 for a mistake on the
// command line (an unknown flag or command, a value out of its range: the
// one-line message names the flag), 1 when the command failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/buildinfo"
	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	status := mainStatus(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(status)
}

// mainStatus runs the command line args and returns the exit status,
// having reported an error on stderr (cmdline.Status).
func mainStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cmdline.Status("rdma-nfs", run(ctx, args, stdout, stderr), stderr)
}

// options are the command line's global flags.
type options struct {
	server, export, provider, mountAddr, progress string
	version                                       bool
	localAddr                                     string
	port, inline, inlineSend, inlineRecv          int
	rsize, wsize, inFlight, credits               int
	stats, noRemoteInvalidate, noPrivateData      bool
	uid, gid                                      int
	timeout                                       time.Duration
}

const usage = `usage: rdma-nfs [flags] command [args]

commands:
  ls [path]            list a directory (long format)
  stat path            show a file's attributes
  cat path             write a file to stdout
  get remote local     copy a file from the export ("-" for stdout)
  put local remote     copy a file to the export ("-" for stdin)
  cp [-r] src dst      copy files or trees; remote paths start with ":"
  exports              list the server's exports (MOUNT EXPORT)
  bench [flags]        sequential write and read, random 4 KiB reads

flags:
`

func parse(args []string, stderr io.Writer) (options, []string, error) {
	var o options
	fs := flag.NewFlagSet("rdma-nfs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&o.server, "server", "", "server host or address (required)")
	fs.StringVar(&o.export, "export", "/", "exported path to mount")
	fs.IntVar(&o.port, "port", nfs.DefaultRDMAPort, "NFS over RDMA port")
	fs.StringVar(&o.mountAddr, "mount-addr", "", "MOUNT server host:port (default: from the portmapper on -server)")
	fs.StringVar(&o.provider, "provider", "rdmacore", "verbs provider: rdmacore (RDMA devices, Soft-RoCE) or soft (RDMA emulated over TCP)")
	fs.StringVar(&o.localAddr, "local-addr", "", "rdmacore: the local IP address to connect from (picks the RDMA device)")
	fs.IntVar(&o.inline, "inline", 0, "inline send and receive size offered (RFC 8797; a multiple of 1024 in 1024..262144; 0: 4096)")
	fs.IntVar(&o.inlineSend, "inline-send", 0, "inline send size offered (overrides -inline; as -inline)")
	fs.IntVar(&o.inlineRecv, "inline-recv", 0, "inline receive size offered (overrides -inline; as -inline)")
	fs.BoolVar(&o.noRemoteInvalidate, "no-remote-invalidate", false, "clear the R bit: invalidate rkeys locally")
	fs.BoolVar(&o.noPrivateData, "no-private-data", false, "send no RFC 8797 private data (1024-byte defaults)")
	fs.IntVar(&o.credits, "credits", 0, fmt.Sprintf("credits requested: most calls in flight (0..%d; 0: 128)", transport.MaxCredits))
	fs.IntVar(&o.rsize, "rsize", 0, fmt.Sprintf("largest READ (%d..%d; 0: 1 MiB), capped by the server's FSINFO", client.MinIOSize, client.MaxIOSize(0)))
	fs.IntVar(&o.wsize, "wsize", 0, fmt.Sprintf("largest WRITE (%d..%d; 0: 1 MiB), capped by the server's FSINFO", client.MinIOSize, client.MaxIOSize(0)))
	fs.IntVar(&o.inFlight, "inflight", 0, fmt.Sprintf("READs or WRITEs in flight per file (read-ahead, write-behind; 0..%d; 0: 16)", client.MaxInFlightMax))
	fs.IntVar(&o.uid, "uid", os.Geteuid(), "AUTH_SYS uid (0..4294967295)")
	fs.IntVar(&o.gid, "gid", os.Getegid(), "AUTH_SYS gid (0..4294967295)")
	fs.BoolVar(&o.stats, "stats", false, "print negotiated settings and counters at the end")
	fs.StringVar(&o.progress, "progress", "auto", "progress bar on stderr: auto (on a terminal), always, never")
	fs.DurationVar(&o.timeout, "timeout", 0, "bound on the whole command (not negative; 0: none)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := cmdline.Parse(fs, args); err != nil {
		return o, nil, err
	}
	if o.version {
		return o, nil, nil
	}
	if o.server == "" {
		return o, nil, cmdline.Usagef("-server is required")
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return o, nil, cmdline.Usagef("no command")
	}
	switch o.progress {
	case "auto", "always", "never":
	default:
		return o, nil, cmdline.Usagef("-progress %q: want auto, always or never", o.progress)
	}
	switch o.provider {
	case "rdmacore", "soft":
	default:
		return o, nil, cmdline.Usagef("-provider %q: want rdmacore or soft", o.provider)
	}
	if err := o.check(); err != nil {
		return o, nil, err
	}
	switch cmd := fs.Arg(0); cmd {
	case "ls", "stat", "cat", "get", "put", "cp", "exports", "bench":
	default:
		return o, nil, cmdline.Usagef("unknown command %q", cmd)
	}
	return o, fs.Args(), nil
}

// check checks the numeric flags' ranges: those of the settings they
// give (transport.Config, client.Config), and of the others.
func (o *options) check() error {
	if o.timeout < 0 {
		return cmdline.Usagef("-timeout %v: out of range [0, +inf) (0: none)", o.timeout)
	}
	return cmdline.Check(
		cmdline.Int("-port", int64(o.port), 1, 65535, ""),
		cmdline.Inline("-inline", o.inline),
		cmdline.Inline("-inline-send", o.inlineSend),
		cmdline.Inline("-inline-recv", o.inlineRecv),
		cmdline.Int("-credits", int64(o.credits), 1, transport.MaxCredits, "128"),
		cmdline.Int("-rsize", int64(o.rsize), client.MinIOSize, int64(client.MaxIOSize(0)), "1 MiB"),
		cmdline.Int("-wsize", int64(o.wsize), client.MinIOSize, int64(client.MaxIOSize(0)), "1 MiB"),
		cmdline.Int("-inflight", int64(o.inFlight), 1, client.MaxInFlightMax, "16"),
		cmdline.Int("-uid", int64(o.uid), 0, math.MaxUint32, ""),
		cmdline.Int("-gid", int64(o.gid), 0, math.MaxUint32, ""),
	)
}

// session is a mounted export and what the commands share.
type session struct {
	o        options
	exp      *client.Export
	stdout   io.Writer
	stderr   io.Writer
	progress bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, rest, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, buildinfo.Read().String("rdma-nfs"))
		return nil
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	var provider verbs.Provider = &soft.Provider{}
	if o.provider == "rdmacore" {
		provider = &rdmacore.Provider{LocalAddr: o.localAddr}
	}
	cmd, cargs := rest[0], rest[1:]
	if cmd == "exports" {
		return exports(ctx, o, cargs, stdout)
	}
	// The flags of bench are checked before anything connects.
	var bo benchOptions
	if cmd == "bench" {
		if bo, err = parseBench(cargs, stderr); err != nil {
			return err
		}
	}
	tc := transport.Config{Provider: provider, InlineSend: firstNonZero(o.inlineSend, o.inline),
		InlineRecv: firstNonZero(o.inlineRecv, o.inline), NoRemoteInvalidate: o.noRemoteInvalidate,
		NoPrivateData: o.noPrivateData, Credits: uint32(o.credits)}
	auth := client.ProcessAuth()
	auth.UID, auth.GID = uint32(o.uid), uint32(o.gid)
	exp, err := client.Mount(ctx, o.server, o.export, &client.MountOptions{
		Client:   client.Config{Transport: tc, Auth: &auth, RSize: o.rsize, WSize: o.wsize, MaxInFlight: o.inFlight},
		RDMAPort: o.port, MountAddr: o.mountAddr,
	})
	if err != nil {
		return err
	}
	defer exp.Close()
	s := &session{o: o, exp: exp, stdout: stdout, stderr: stderr, progress: wantProgress(o.progress, stderr)}
	switch cmd {
	case "ls":
		err = s.ls(ctx, cargs)
	case "stat":
		err = s.stat(ctx, cargs)
	case "cat":
		err = s.cat(ctx, cargs)
	case "get":
		err = s.get(ctx, cargs)
	case "put":
		err = s.put(ctx, cargs)
	case "cp":
		err = s.cp(ctx, cargs)
	case "bench":
		err = s.bench(ctx, bo)
	}
	if o.stats {
		s.printStats()
	}
	return err
}

func firstNonZero(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// wantProgress says whether to draw progress bars on w.
func wantProgress(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// exports lists the server's exports over MOUNT.
func exports(ctx context.Context, o options, args []string, stdout io.Writer) error {
	if len(args) != 0 {
		return errors.New("usage: exports")
	}
	addr := o.mountAddr
	if addr == "" {
		addr = o.server
	}
	mc, err := client.DialMount(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer mc.Close()
	list, err := mc.Export(ctx)
	if err != nil {
		return err
	}
	for _, e := range list {
		fmt.Fprintf(stdout, "%s\t%s\n", e.Dir, strings.Join(e.Groups, ","))
	}
	return nil
}

// printStats prints the connection's negotiated settings and counters.
func (s *session) printStats() {
	st := s.exp.Client.Conn().Stats()
	n := st.Negotiated
	rsize, wsize := s.exp.Client.IOSize()
	w := s.stderr
	fmt.Fprintf(w, "negotiated: peer_private_data=%s send_inline=%d recv_inline=%d credits=%d local_R=%v peer_R=%v expect_remote_invalidate=%v\n",
		n.PeerPrivateData, n.SendInline, n.RecvInline, n.Credits, n.LocalR, n.PeerR, n.ExpectRemoteInvalidate)
	fmt.Fprintf(w, "io: rsize=%d wsize=%d (server rtmax=%d wtmax=%d)\n", rsize, wsize, s.exp.Info.RTMax, s.exp.Info.WTMax)
	fmt.Fprintf(w, "calls: inline=%d read_chunk=%d long=%d\n", st.InlineCalls, st.ReadChunkCalls, st.LongCalls)
	fmt.Fprintf(w, "chunks offered: read=%d write=%d reply=%d bytes=%d\n", st.ReadChunks, st.WriteChunks, st.ReplyChunks, st.ChunkBytesOffered)
	fmt.Fprintf(w, "sends=%d recvs=%d remote_invalidations=%d local_invalidations=%d\n", st.Sends, st.Recvs, st.RemoteInvalidations, st.LocalInvalidations)
	fmt.Fprintf(w, "errors: bad_xids=%d bad_replies=%d remote_errors=%d credit_stalls=%d reconnects=%d call_timeouts=%d\n",
		st.BadXIDs, st.BadReplies, st.RemoteErrors, st.CreditStalls, st.Reconnects, st.CallTimeouts)
}

// parseSize parses "32MiB", "4k", "1G", "123".
func parseSize(s string) (int64, error) {
	mult := int64(1)
	ls := strings.ToLower(s)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}} {
		if strings.HasSuffix(ls, u.suffix) {
			mult, ls = u.m, strings.TrimSuffix(ls, u.suffix)
			break
		}
	}
	n, err := strconv.ParseInt(ls, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: want a number with an optional k, M, G (KiB, MiB, GiB) suffix, at most 2^63-1 bytes", s)
	}
	return n * mult, nil
}
