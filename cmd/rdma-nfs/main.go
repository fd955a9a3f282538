// Command rdma-nfs is an NFS version 3 client over RPC-over-RDMA (RFC 8166,
// RFC 8267) for any NFSv3/RDMA server (knfsd, rdma-nfsd), built on package
// nfs's client. On one machine, with RDMA emulated over TCP:
//
//	rdma-nfsd -provider soft -dir /srv/export
//	rdma-nfs -provider soft -server 127.0.0.1 ls /
//
// and against a server on an RDMA network:
//
//	rdma-nfs -server 10.0.0.1 -export /export ls /
//	rdma-nfs -server 10.0.0.1 -export /export put big.iso /iso/
//	rdma-nfs -server 10.0.0.1 -export /export -stats get -p /iso/big.iso /tmp
//	rdma-nfs -server 10.0.0.1 -export /export cp -r -p :src ./dst
//	rdma-nfs -server 10.0.0.1 -export /export mkdir -p /a/b && rdma-nfs ... mv /a /c
//	rdma-nfs -server 10.0.0.1 -export /export bench -size 32MiB
//
// Commands: ls [path], stat path, cat path, get [-p] remote local, put
// [-p] local remote, cp [-r] [-p] src dst (remote paths start with ":"),
// mv src dst, rm [-r] path..., mkdir [-p] path..., exports, bench;
// "rdma-nfs command -h" describes each. Paths of the export are from its
// root, "/a/b" (or "a/b"), and messages name them so. A target that is a
// directory receives the source under its base name, as with cp(1) and
// mv(1). MOUNT goes over TCP (its port from the portmapper unless
// -mount-addr) or, when no portmapper answers, over the RDMA connection
// (rdma-nfsd serves it there); each exchange waits at most
// -mount-timeout. NFS goes over RDMA to -port (20049).
//
// A file copied is written under a temporary name in its target's
// directory (".name.rdma-nfs-XXXXXXXX", locally or on the server, where
// it is created exclusively) and renamed over the target once written
// whole (and, on the server, committed): a failed or interrupted copy
// leaves no partial file under the name asked for, and removes its
// temporary file. A file replaced keeps its permissions (with -p: takes
// the source's), but it is a new file: its owner is the caller's, as
// with rsync without -o. -p keeps the source's modification and access
// times and mode (SETATTR on the server, chtimes and chmod locally).
// bench never overwrites or removes a file it did not create. Transfers
// longer than a moment show a progress bar on a terminal (-progress); cp
// -r shows one for the whole tree (files and bytes done of the total).
// -stats prints the connection's negotiated settings (RFC 8797 inline
// sizes, credits, remote invalidation) and counters at the end.
//
// The exit status says what failed: 0 success (and -h, which prints the
// usage on stdout), 1 a local failure or one of no other class, 2 a
// mistake on the command line (an unknown flag or command, a value out of
// its range: the one-line message names the flag), 3 the server not
// reached or the connection failed (refused, lost, no reply within
// -mount-timeout or -timeout), 4 MOUNT refused the export (MNT3ERR_*), 5
// the server refused an NFS call (NFS3ERR_*: no such file, permission
// denied...), 130 interrupted by SIGINT (143 by SIGTERM; a second signal
// exits at once). Failures read in plain words with the RFC 1813 status
// in parentheses ("lstat /a/b: no such file or directory
// (NFS3ERR_NOENT)", "permission denied (MNT3ERR_ACCES)").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
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

// options are the command line's global flags.
type options struct {
	server, export, provider, mountAddr, progress string
	version                                       bool
	localAddr                                     string
	port, inline, inlineSend, inlineRecv          int
	rsize, wsize, inFlight, credits               int
	stats, noRemoteInvalidate, noPrivateData      bool
	rpcrdmaV2                                     bool
	uid, gid                                      int
	timeout, mountTimeout                         time.Duration
}

const usageHead = `usage: rdma-nfs [flags] command [args]

commands ("rdma-nfs command -h" describes one; remote paths are from the
export's root, "/a/b"):
%s
flags:
`

const usageTail = `
exit status: 0 success (and -h); 1 a local failure, or one of no other class;
2 a mistake on the command line; 3 the server not reached or the connection
failed (refused, lost, no reply within -mount-timeout or -timeout); 4 MOUNT
refused the export (MNT3ERR_*); 5 the server refused an NFS call (NFS3ERR_*:
no such file, permission denied...); 130 interrupted (SIGINT; 143 SIGTERM).
`

// command is one of the commands: its arguments and what it does.
type command struct {
	name, args, help string
	min, max         int // how many arguments (max -1: no bound)
}

var commands = []command{
	{"ls", "[path]", "list a directory (long format)", 0, 1},
	{"stat", "path", "show a file's attributes", 1, 1},
	{"cat", "path", "write a file to stdout", 1, 1},
	{"get", "[-p] remote local", "copy a file from the export (\"-\" for stdout; into local if a directory)", 2, 2},
	{"put", "[-p] local remote", "copy a file to the export (\"-\" for stdin; into remote if a directory)", 2, 2},
	{"cp", "[-r] [-p] src dst", "copy files or trees; remote paths start with \":\"", 2, 2},
	{"mv", "src dst", "rename a file of the export (RENAME; into dst if a directory)", 2, 2},
	{"rm", "[-r] path...", "remove files of the export (-r: and directories, with what they hold)", 1, -1},
	{"mkdir", "[-p] path...", "make directories in the export (-p: and their parents; no error if they exist)", 1, -1},
	{"exports", "", "list the server's exports (MOUNT EXPORT)", 0, 0},
	{"bench", "[flags]", "sequential write and read, random 4 KiB reads", 0, 0},
}

// commandList is the usage's list of commands.
func commandList() string {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-20s %s\n", strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	return b.String()
}

// invocation is the command of a command line, parsed.
type invocation struct {
	name      string
	args      []string
	recursive bool // cp -r, rm -r
	preserve  bool // get, put, cp -p
	parents   bool // mkdir -p
	bench     benchOptions
}

// parseFlags parses args with fset: -h prints the usage (usage(w) writes
// it) on stdout; a mistake prints it on stderr after flag's message.
func parseFlags(fset *flag.FlagSet, args []string, usage func(io.Writer), stdout, stderr io.Writer) error {
	fset.SetOutput(stderr)
	fset.Usage = func() {}
	err := cmdline.Parse(fset, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
	case err != nil:
		usage(stderr)
	}
	return err
}

// printDefaults prints fset's flags on w.
func printDefaults(fset *flag.FlagSet, w io.Writer) {
	out := fset.Output()
	fset.SetOutput(w)
	fset.PrintDefaults()
	fset.SetOutput(out)
}

// parseCommand parses the command and its flags and arguments (args[0]
// is the command), before anything connects: its -h prints its usage.
func parseCommand(args []string, stdout, stderr io.Writer) (invocation, error) {
	var c *command
	for i := range commands {
		if commands[i].name == args[0] {
			c = &commands[i]
		}
	}
	if c == nil {
		return invocation{}, cmdline.Usagef("unknown command %q (rdma-nfs -h lists them)", args[0])
	}
	inv := invocation{name: c.name}
	fset := flag.NewFlagSet(c.name, flag.ContinueOnError)
	line := strings.TrimSpace("rdma-nfs [flags] " + c.name + " " + c.args)
	var finish func() error
	switch c.name {
	case "cp":
		fset.BoolVar(&inv.recursive, "r", false, "copy directories recursively")
		fset.BoolVar(&inv.preserve, "p", false, "keep the source's modification and access times and mode")
	case "get", "put":
		fset.BoolVar(&inv.preserve, "p", false, "keep the source's modification and access times and mode")
	case "rm":
		fset.BoolVar(&inv.recursive, "r", false, "remove directories and what they hold")
	case "mkdir":
		fset.BoolVar(&inv.parents, "p", false, "make the missing parents too; no error for a directory that exists")
	case "bench":
		finish = inv.bench.define(fset)
	}
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "usage: %s\n\n%s\n", line, c.help)
		hasFlags := false
		fset.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintf(w, "\n%s flags:\n", c.name)
			printDefaults(fset, w)
		}
	}
	if err := parseFlags(fset, args[1:], usage, stdout, stderr); err != nil {
		return inv, err
	}
	if n := fset.NArg(); n < c.min || c.max >= 0 && n > c.max {
		if c.max == 0 {
			return inv, cmdline.Usagef("%s: unexpected arguments %q (usage: %s)", c.name, fset.Args(), line)
		}
		return inv, cmdline.Usagef("%s: wrong number of arguments (usage: %s)", c.name, line)
	}
	inv.args = fset.Args()
	if c.name == "cp" && strings.HasPrefix(inv.args[0], ":") == strings.HasPrefix(inv.args[1], ":") {
		return inv, cmdline.Usagef("cp: exactly one of src and dst must be remote (\":path\")")
	}
	if finish != nil {
		return inv, finish()
	}
	return inv, nil
}

func parse(args []string, stdout, stderr io.Writer) (options, invocation, error) {
	var o options
	var inv invocation
	fs := flag.NewFlagSet("rdma-nfs", flag.ContinueOnError)
	fs.StringVar(&o.server, "server", "", "server host or address (required)")
	fs.StringVar(&o.export, "export", "/", "exported path to mount")
	fs.IntVar(&o.port, "port", nfs.DefaultRDMAPort, "NFS over RDMA port")
	fs.StringVar(&o.mountAddr, "mount-addr", "", "MOUNT server host:port (default: from the portmapper on -server; with none, MOUNT over RDMA)")
	fs.DurationVar(&o.mountTimeout, "mount-timeout", client.DefaultMountTimeout, "bound on each exchange with the portmapper and the MOUNT server (not negative; 0: none)")
	fs.StringVar(&o.provider, "provider", "rdmacore", "verbs provider: rdmacore (RDMA devices, Soft-RoCE) or soft (RDMA emulated over TCP)")
	fs.StringVar(&o.localAddr, "local-addr", "", "rdmacore: the local IP address to connect from (picks the RDMA device)")
	fs.IntVar(&o.inline, "inline", 0, "inline send and receive size offered (RFC 8797; a multiple of 1024 in 1024..262144; 0: 4096)")
	fs.IntVar(&o.inlineSend, "inline-send", 0, "inline send size offered (overrides -inline; as -inline)")
	fs.IntVar(&o.inlineRecv, "inline-recv", 0, "inline receive size offered (overrides -inline; as -inline)")
	fs.BoolVar(&o.noRemoteInvalidate, "no-remote-invalidate", false, "clear the R bit: invalidate rkeys locally")
	fs.BoolVar(&o.noPrivateData, "no-private-data", false, "send no RFC 8797 private data (1024-byte defaults)")
	fs.BoolVar(&o.rpcrdmaV2, "rpcrdma-v2", false, "offer RPC-over-RDMA version 2 (draft-cel-nfsv4-rpcrdma-version-two-09); a server that refuses it is spoken to in version 1")
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
	usage := func(w io.Writer) {
		fmt.Fprintf(w, usageHead, commandList())
		printDefaults(fs, w)
		fmt.Fprint(w, usageTail)
	}
	if err := parseFlags(fs, args, usage, stdout, stderr); err != nil {
		return o, inv, err
	}
	if o.version {
		return o, inv, nil
	}
	if fs.NArg() == 0 {
		usage(stderr)
		return o, inv, cmdline.Usagef("no command")
	}
	inv, err := parseCommand(fs.Args(), stdout, stderr)
	if err != nil {
		return o, inv, err
	}
	if o.server == "" {
		return o, inv, cmdline.Usagef("-server is required")
	}
	switch o.progress {
	case "auto", "always", "never":
	default:
		return o, inv, cmdline.Usagef("-progress %q: want auto, always or never", o.progress)
	}
	switch o.provider {
	case "rdmacore", "soft":
	default:
		return o, inv, cmdline.Usagef("-provider %q: want rdmacore or soft", o.provider)
	}
	return o, inv, o.check()
}

// check checks the numeric flags' ranges: those of the settings they
// give (transport.Config, client.Config), and of the others.
func (o *options) check() error {
	if o.timeout < 0 {
		return cmdline.Usagef("-timeout %v: out of range [0, +inf) (0: none)", o.timeout)
	}
	if o.mountTimeout < 0 {
		return cmdline.Usagef("-mount-timeout %v: out of range [0, +inf) (0: none)", o.mountTimeout)
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
	exp      export
	stdout   io.Writer
	stderr   io.Writer
	progress bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, inv, err := parse(args, stdout, stderr)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, buildinfo.Read().String("rdma-nfs"))
		return nil
	}
	return plainError(o, o.run(ctx, inv, stdout, stderr))
}

// run mounts the export and runs the command inv.
func (o options) run(ctx context.Context, inv invocation, stdout, stderr io.Writer) error {
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	var provider verbs.Provider = &soft.Provider{}
	if o.provider == "rdmacore" {
		provider = &rdmacore.Provider{LocalAddr: o.localAddr}
	}
	tc := transport.Config{Provider: provider, InlineSend: firstNonZero(o.inlineSend, o.inline),
		InlineRecv: firstNonZero(o.inlineRecv, o.inline), NoRemoteInvalidate: o.noRemoteInvalidate,
		NoPrivateData: o.noPrivateData, Credits: uint32(o.credits), OfferVersion2: o.rpcrdmaV2}
	auth := client.ProcessAuth()
	auth.UID, auth.GID = uint32(o.uid), uint32(o.gid)
	mountTimeout := o.mountTimeout
	if mountTimeout == 0 {
		mountTimeout = -1 // none
	}
	mopt := &client.MountOptions{
		Client:   client.Config{Transport: tc, Auth: &auth, RSize: o.rsize, WSize: o.wsize, MaxInFlight: o.inFlight},
		RDMAPort: o.port, MountAddr: o.mountAddr, MountTimeout: mountTimeout,
	}
	if inv.name == "exports" {
		return exports(ctx, o.server, mopt, stdout)
	}
	exp, err := client.Mount(ctx, o.server, o.export, mopt)
	if err != nil {
		return err
	}
	defer exp.Close()
	s := &session{o: o, exp: export{exp}, stdout: stdout, stderr: stderr, progress: wantProgress(o.progress, stderr)}
	switch inv.name {
	case "ls":
		err = s.ls(ctx, inv.args)
	case "stat":
		err = s.stat(ctx, inv.args)
	case "cat":
		err = s.cat(ctx, inv.args)
	case "get":
		err = s.get(ctx, inv.args, inv.preserve)
	case "put":
		err = s.put(ctx, inv.args, inv.preserve)
	case "cp":
		err = s.cp(ctx, inv.args, inv.recursive, inv.preserve)
	case "mv":
		err = s.mv(ctx, inv.args)
	case "rm":
		err = s.rm(ctx, inv.args, inv.recursive)
	case "mkdir":
		err = s.mkdir(ctx, inv.args, inv.parents)
	case "bench":
		err = s.bench(ctx, inv.bench)
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
func exports(ctx context.Context, server string, opt *client.MountOptions, stdout io.Writer) error {
	list, err := client.Exports(ctx, server, opt)
	if err != nil {
		return err
	}
	for _, e := range list {
		fmt.Fprintf(stdout, "%s\t%s\n", e.Dir, strings.Join(e.Groups, ","))
	}
	return nil
}

// plainError rewrites an NFS failure on a path, "lstat /a: nfs: NFS3
// LOOKUP: no such file or directory (NFS3ERR_NOENT)", to its plain words,
// "lstat /a: no such file or directory (NFS3ERR_NOENT)", and a refused
// MNT to "mount host:/export: permission denied (MNT3ERR_ACCES)", keeping
// the error chain.
func plainError(o options, err error) error {
	var pe *fs.PathError
	var ne *client.Error
	switch {
	case errors.As(err, &ne) && ne.Mount:
		return &wordedError{msg: fmt.Sprintf("mount %s:%s: %s (%s)", o.server, o.export, ne.Status.Text(), ne.StatusName()), err: err}
	case errors.As(err, &pe) && errors.As(pe.Err, &ne):
		return &wordedError{msg: fmt.Sprintf("%s %s: %s (%s)", pe.Op, pe.Path, ne.Status.Text(), ne.StatusName()), err: err}
	}
	return err
}

// wordedError is an error with a plainer message than its chain's.
type wordedError struct {
	msg string
	err error
}

func (e *wordedError) Error() string { return e.msg }
func (e *wordedError) Unwrap() error { return e.err }

// printStats prints the connection's negotiated settings and counters.
func (s *session) printStats() {
	st := s.exp.Client.Conn().Stats()
	n := st.Negotiated
	rsize, wsize := s.exp.Client.IOSize()
	w := s.stderr
	fmt.Fprintf(w, "negotiated: peer_private_data=%s send_inline=%d recv_inline=%d credits=%d local_R=%v peer_R=%v expect_remote_invalidate=%v version=%d\n",
		n.PeerPrivateData, n.SendInline, n.RecvInline, n.Credits, n.LocalR, n.PeerR, n.ExpectRemoteInvalidate, n.Version)
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
