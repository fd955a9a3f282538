// Command rdma-nfsd serves a directory over NFS version 3 on RPC-over-RDMA
// (RFC 8166, RFC 8267), the way the Linux kernel client mounts knfsd:
//
//	rdma-nfsd -dir /srv/export -addr 10.0.0.1
//	mount -t nfs -o vers=3,proto=rdma,port=20049 10.0.0.1:/ /mnt
//
// It listens only on the addresses -addr gives (IP addresses of the RDMA
// devices, comma-separated or -addr repeated; IPv6 ones accepted; 0.0.0.0
// or :: for all): NFS over RDMA, MOUNT and its own portmapper alike. The
// default is 127.0.0.1 only, so that nothing is served to the network
// until an address is named. On any machine, with RDMA emulated over TCP (the soft provider,
// which the Go client rdma-nfs speaks; it sends MOUNT over the RDMA
// connection when no portmapper answers):
//
//	rdma-nfsd -provider soft -dir /srv/export
//	rdma-nfs -provider soft -server 127.0.0.1 ls /
//
// The startup log names the command that mounts the export.
//
// NFS goes over RDMA on port 20049; MOUNT over TCP (the kernel never sends
// it over RDMA), on a port registered with the system's rpcbind, or with
// the portmapper rdma-nfsd serves itself (-portmap) when none runs, and
// over RDMA too (rdma-nfs sends it there when no portmapper answers). Each
// connection's negotiated settings (RFC 8797) are logged in one line; its
// counters are served as JSON on the metrics endpoint (expvar,
// /debug/vars) and logged on SIGUSR1. SIGTERM or SIGINT shut down cleanly.
//
// -check checks the configuration (the flags, the exports file, the
// exported directories) as nginx -t does, prints "configuration ok" or
// the errors, and starts nothing. Under systemd (Type=notify, the unit in
// contrib/systemd) it reports READY=1, RELOADING=1 and STOPPING=1
// (sd_notify(3)).
//
// The exit status is 0 after a clean shutdown (and for -h), 2 for a
// mistake on the command line (an unknown flag, a value out of its range:
// the one-line message names the flag), 1 when serving failed (or -check
// found errors).
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/buildinfo"
	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

func main() {
	cmdline.Main("rdma-nfsd", func(ctx context.Context, args []string, _, stderr io.Writer) error {
		return run(ctx, args, stderr, nil)
	})
}

// options are the command line's.
type options struct {
	dir, provider, metrics, logLevel  string
	addr                              addrList
	exports, logFormat                string
	version, checkOnly                bool
	squash                            string
	anonUID, anonGID                  uint
	cpuProfile                        string
	handleKey                         string
	rdmaPort, tcpPort                 int
	readOnly, nfsOverTCP, indexOnly   bool
	rpcbind, portmap                  bool
	inlineSend, inlineRecv            int
	noRemoteInvalidate, noPrivateData bool
	credits, maxConns, backlog        int
	concurrentCalls                   int
	inlineCalls                       bool
	gcPercent                         int
	maxRPC                            int
	postAsyncMin                      int
	pollBeforeWait, pollBeforeWaitMax time.Duration
	acceptV2                          bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("rdma-nfsd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.dir, "dir", "", "directory to export as /, to every client (or -exports)")
	fs.StringVar(&o.exports, "exports", "", "exports file (exports(5) syntax: directories, client rules, options); SIGHUP re-reads it (or -dir)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVar(&o.checkOnly, "check", false, "check the configuration (flags, the exports file, the exported directories), print \"configuration ok\" or the errors, and exit (0: ok, 1: errors) without serving")
	fs.StringVar(&o.logFormat, "log-format", "text", "text or json")
	fs.Var(&o.addr, "addr", "IP addresses to listen on, for NFS/RDMA, MOUNT and -portmap (comma-separated or repeated; IPv6 accepted; 0.0.0.0 or :: for all; default 127.0.0.1 only)")
	fs.IntVar(&o.rdmaPort, "rdma-port", nfs.DefaultRDMAPort, "NFS over RDMA port (0..65535; 0 picks one)")
	fs.IntVar(&o.tcpPort, "tcp-port", 0, "MOUNT (and -nfs-tcp) TCP port (0..65535); 0 picks one, registered with rpcbind")
	fs.BoolVar(&o.nfsOverTCP, "nfs-tcp", false, "serve NFS over TCP too, for comparison")
	fs.BoolVar(&o.readOnly, "ro", false, "export read-only (NFS3ERR_ROFS for every change)")
	fs.StringVar(&o.squash, "squash", "root_squash", "whose identity calls lose (exports(5)): root_squash, no_root_squash or all_squash")
	fs.UintVar(&o.anonUID, "anonuid", 65534, "uid of squashed callers and AUTH_NONE calls")
	fs.UintVar(&o.anonGID, "anongid", 65534, "gid of squashed callers and AUTH_NONE calls")
	fs.BoolVar(&o.indexOnly, "index-handles", false, "file handles without open_by_handle_at (what a non-root server uses)")
	fs.StringVar(&o.handleKey, "handle-key", handleKeyDefault, "file keeping the secret that file handles carry a MAC of, created (32 random bytes, mode 0600) if missing; keep it across restarts, or clients' handles are refused; \"\": a key for this run only")
	fs.StringVar(&o.provider, "provider", "rdmacore", "verbs provider: rdmacore (RDMA devices, Soft-RoCE) or soft (RDMA emulated over TCP)")
	fs.IntVar(&o.inlineSend, "inline-send", transport.DefaultInline, "inline send size offered (RFC 8797; a multiple of 1024 in 1024..262144)")
	fs.IntVar(&o.inlineRecv, "inline-recv", transport.DefaultInline, "inline receive size offered (RFC 8797; a multiple of 1024 in 1024..262144)")
	fs.BoolVar(&o.noRemoteInvalidate, "no-remote-invalidate", false, "clear the R bit: never reply with Send With Invalidate")
	fs.BoolVar(&o.noPrivateData, "no-private-data", false, "send no RFC 8797 private data (the 1024-byte defaults)")
	fs.BoolVar(&o.acceptV2, "rpcrdma-v2", false, "serve RPC-over-RDMA version 2 (draft-cel-nfsv4-rpcrdma-version-two-09) on connections whose first message is version 2; others, the Linux client's, run version 1 as without it")
	fs.IntVar(&o.credits, "credits", 0, fmt.Sprintf("largest credit grant per connection (0..%d; 0: 64, as Linux)", transport.MaxCredits))
	fs.BoolVar(&o.inlineCalls, "inline-calls", true, "execute NULL, and GETATTRs, LOOKUPs, cached READs (and, on tmpfs by root, WRITEs, CREATEs, MKDIRs and REMOVEs) of open files and directories, on the goroutine that polled them (false: every call on a worker)")
	fs.IntVar(&o.concurrentCalls, "concurrent-calls", 0, fmt.Sprintf("calls of one connection executed at once (0..%d; 0: 16; 1: one after the other)", server.MaxConcurrentCalls))
	fs.IntVar(&o.maxConns, "max-conns", 0, "cap on connections (not negative; 0: none)")
	fs.IntVar(&o.backlog, "backlog", 0, "handshakes in progress plus connections not yet served (0..128 at the default -credits and inline sizes: each handshake registers 0.5 MiB, within a budget of 128 MiB; 0: 128)")
	fs.IntVar(&o.maxRPC, "max-rpc", 0, fmt.Sprintf("largest RPC message (%d..%d; 0: 1 MiB + 16 KiB)", nfs.MinMaxRPCSize, transport.MaxRPCSizeMax))
	fs.IntVar(&o.postAsyncMin, "post-async-min", 0, "replies moving at least this many bytes are posted by the connection's posting goroutine (0: 32 KiB; negative: by the goroutine that built them)")
	fs.BoolVar(&o.rpcbind, "rpcbind", true, "register with the system's rpcbind (127.0.0.1:111) when it runs")
	fs.BoolVar(&o.portmap, "portmap", false, "serve a minimal portmapper on port 111 when no rpcbind runs")
	fs.StringVar(&o.metrics, "metrics", "", "address of the metrics endpoint (Prometheus at /metrics, expvar JSON at /debug/vars); empty: none")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.IntVar(&o.gcPercent, "gc-percent", 400, "garbage collector target (as GOGC, not below -1; -1 off): each READ and WRITE carries up to 1 MiB, so Go's default 100 collects after every few")
	fs.DurationVar(&o.pollBeforeWait, "poll-before-wait", 0, "rdmacore: poll the completion queue this long before sleeping on its channel (0: 50µs; negative: never)")
	fs.DurationVar(&o.pollBeforeWaitMax, "poll-before-wait-max", 0, "rdmacore: poll up to this long while a connection's recent waits were short (0: 2ms; negative: -poll-before-wait only)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the whole run to this file at shutdown")
	if err := cmdline.Parse(fs, args); err != nil {
		return o, err
	}
	if o.version {
		return o, nil
	}
	switch {
	case o.dir == "" && o.exports == "":
		return o, cmdline.Usagef("-dir or -exports is required")
	case o.dir != "" && o.exports != "":
		return o, cmdline.Usagef("-dir and -exports exclude each other")
	case o.exports != "":
		var perRule []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "ro", "squash", "anonuid", "anongid":
				perRule = append(perRule, "-"+f.Name)
			}
		})
		if len(perRule) > 0 {
			return o, cmdline.Usagef("%s: with -exports, each rule of the exports file says this", perRule[0])
		}
	}
	switch o.logFormat {
	case "text", "json":
	default:
		return o, cmdline.Usagef("-log-format %q: want text or json", o.logFormat)
	}
	if _, err := server.ParseSquash(o.squash); err != nil {
		return o, cmdline.Usagef("-squash: %w", err)
	}
	for _, id := range []struct {
		name string
		v    uint
	}{{"-anonuid", o.anonUID}, {"-anongid", o.anonGID}} {
		if id.v == 0 || id.v >= 1<<32-1 {
			return o, cmdline.Usagef("%s %d: want 1..4294967294", id.name, id.v)
		}
	}
	switch o.provider {
	case "rdmacore", "soft":
	default:
		return o, cmdline.Usagef("-provider %q: want rdmacore or soft", o.provider)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return o, cmdline.Usagef("-log-level: %w", err)
	}
	if fs.NArg() > 0 {
		return o, cmdline.Usagef("unexpected arguments: %v", fs.Args())
	}
	return o, o.check()
}

// check checks the numeric flags' ranges: those of the settings they
// give (transport.Config, server.Config), and of the others. The
// durations -poll-before-wait and -poll-before-wait-max take any value
// (negative: never), and so does -post-async-min (negative: inline).
func (o *options) check() error {
	return cmdline.Check(
		cmdline.Int("-rdma-port", int64(o.rdmaPort), 0, 65535, ""),
		cmdline.Int("-tcp-port", int64(o.tcpPort), 0, 65535, ""),
		cmdline.Inline("-inline-send", o.inlineSend),
		cmdline.Inline("-inline-recv", o.inlineRecv),
		cmdline.Int("-credits", int64(o.credits), 1, transport.MaxCredits, "64"),
		cmdline.Int("-concurrent-calls", int64(o.concurrentCalls), 1, server.MaxConcurrentCalls, "16"),
		cmdline.Int("-max-conns", int64(o.maxConns), 0, math.MaxInt64, "no cap"),
		o.checkBacklog(),
		cmdline.Int("-max-rpc", int64(o.maxRPC), nfs.MinMaxRPCSize, transport.MaxRPCSizeMax, "1 MiB + 16 KiB"),
		cmdline.Int("-gc-percent", int64(o.gcPercent), -1, math.MaxInt32, ""),
	)
}

// run serves until ctx is done. ready, if not nil, gets the server once it
// listens (tests).
func run(ctx context.Context, args []string, stderr io.Writer, ready func(*server.Server)) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(os.Stdout, buildinfo.Read().String("rdma-nfsd"))
		return nil
	}
	if o.checkOnly {
		return checkConfig(o, os.Stdout, stderr)
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(o.logLevel)) // parse checked it
	log := newLogger(o.logFormat, level, stderr)
	defer debug.SetGCPercent(debug.SetGCPercent(o.gcPercent))
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer func() {
			if err := stop(); err != nil {
				log.Error("rdma-nfsd: cpu profile", "err", err)
			}
		}()
	}

	var provider verbs.Provider = &soft.Provider{} // parse checked the name
	if o.provider == "rdmacore" {
		provider = &rdmacore.Provider{PollBeforeWait: o.pollBeforeWait, PollBeforeWaitMax: o.pollBeforeWaitMax}
	}

	key, err := loadHandleKey(log, o.handleKey)
	if err != nil {
		return err
	}
	var handler *server.DirHandler
	var exps []server.Export
	var xs *exportSet
	if o.exports != "" {
		xs = &exportSet{file: o.exports, indexOnly: o.indexOnly, key: key}
		defer xs.close()
		if exps, err = xs.load(); err != nil {
			return err
		}
	} else {
		dir, err := server.DirFS(o.dir)
		if err != nil {
			return err
		}
		defer dir.Close()
		if o.readOnly {
			dir.SetReadOnly()
		}
		if handler, err = server.NewDirHandler(dir, server.DirHandlerOptions{IndexOnly: o.indexOnly, HandleKey: key}); err != nil {
			return err
		}
	}

	conns := &connTable{}
	squash, _ := server.ParseSquash(o.squash) // parse checked it
	srv, err := server.New(server.Config{
		Handler: handler,
		Exports: exps,
		Squash:  squash,
		AnonUID: uint32(o.anonUID),
		AnonGID: uint32(o.anonGID),
		Transport: transport.Config{
			Provider:           provider,
			InlineSend:         o.inlineSend,
			InlineRecv:         o.inlineRecv,
			NoRemoteInvalidate: o.noRemoteInvalidate,
			NoPrivateData:      o.noPrivateData,
			AcceptVersion2:     o.acceptV2,
			Credits:            uint32(o.credits),
			MaxConns:           o.maxConns,
			AcceptBacklog:      o.backlog,
			MaxRPCSize:         o.maxRPC,
			PostAsyncMin:       o.postAsyncMin,
			Binding:            nfs.Binding{},
		},
		ListenHosts:     o.addr.list(),
		RDMAAddr:        ":" + strconv.Itoa(o.rdmaPort),
		TCPAddr:         ":" + strconv.Itoa(o.tcpPort),
		NFSOverTCP:      o.nfsOverTCP,
		ConcurrentCalls: o.concurrentCalls,
		NoInlineCalls:   !o.inlineCalls,
		Rpcbind:         server.RpcbindConfig{Disable: !o.rpcbind, Serve: o.portmap},
		Logger:          log,
		OnConn: func(network string, c net.Conn) {
			if tc, ok := c.(*transport.Conn); ok {
				conns.add(tc)
			}
		},
	})
	if err != nil {
		return err
	}
	rdmaAddr, tcpAddr := addrsString(srv.RDMAAddrs()), addrsString(srv.TCPAddrs())
	if handler != nil {
		log.Info("rdma-nfsd: serving", "dir", o.dir, "nfs_rdma", rdmaAddr, "mount_tcp", tcpAddr,
			"provider", provider.Name(), "read_only", o.readOnly, "handles_by_kernel", handler.ByKernelHandle(),
			"squash", squash, "anonuid", o.anonUID, "anongid", o.anonGID, "version", buildinfo.Read().Version)
	} else {
		log.Info("rdma-nfsd: serving", "exports_file", o.exports, "exports", exportPaths(exps), "nfs_rdma", rdmaAddr,
			"mount_tcp", tcpAddr, "provider", provider.Name(), "version", buildinfo.Read().Version)
	}
	export := "/"
	if len(exps) > 0 {
		export = exps[0].Path
	}
	log.Info("rdma-nfsd: mount with", "command", clientHint(provider.Name(), srv.RDMAAddr(), srv.TCPAddr(), export))

	if o.metrics != "" {
		ml, err := net.Listen("tcp", o.metrics)
		if err != nil {
			_ = srv.Close()
			return fmt.Errorf("-metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/debug/vars", metricsHandler(srv, conns))
		mux.Handle("/metrics", promHandler(srv, provider))
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(ml) }()
		defer hs.Close()
		log.Info("rdma-nfsd: metrics", "prometheus", "http://"+ml.Addr().String()+"/metrics",
			"expvar", "http://"+ml.Addr().String()+"/debug/vars")
	}

	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	sd := newNotifier(log) // systemd's Type=notify
	defer sd.close()
	sd.ready()
	if ready != nil {
		ready(srv)
	}
	for {
		select {
		case <-usr1:
			logStats(log, srv)
		case <-hup:
			sd.reloading()
			reload(log, srv, xs)
			sd.ready()
		case err := <-served:
			if ctx.Err() != nil {
				// Serve saw the cancellation first: the same shutdown.
				return shutdown(log, sd, srv, func() error { return err })
			}
			sd.stopping()
			if errors.Is(err, server.ErrClosed) {
				err = nil
			}
			return err
		case <-ctx.Done():
			return shutdown(log, sd, srv, func() error { return <-served })
		}
	}
}

// shutdown ends a run whose context was cancelled: systemd is told, the
// server closed, Serve's return waited for (served) and the figures
// logged. The cancellation (or the server closed by it) is a clean end.
func shutdown(log *slog.Logger, sd *notifier, srv *server.Server, served func() error) error {
	sd.stopping()
	log.Info("rdma-nfsd: shutting down")
	_ = srv.Close()
	err := served()
	if errors.Is(err, server.ErrClosed) || errors.Is(err, context.Canceled) {
		err = nil
	}
	logStats(log, srv)
	return err
}

// connStats is one connection's entry on the metrics endpoint.
type connStats struct {
	Remote string
	Stats  transport.Stats
}

// metrics returns what the endpoint and SIGUSR1 report.
func metrics(srv *server.Server, conns *connTable) map[string]any {
	var cs []connStats
	for _, c := range conns.snapshot() {
		cs = append(cs, connStats{Remote: c.RemoteAddr().String(), Stats: c.Stats()})
	}
	return map[string]any{
		"listener":    srv.ListenerStats(),
		"drc":         srv.DRCStats(),
		"connections": cs,
	}
}

// published is what the "rdma_nfsd" expvar reports: the server run serves
// (expvar names are process-wide and published once).
var (
	publishOnce sync.Once
	published   struct {
		sync.Mutex
		srv   *server.Server
		conns *connTable
	}
)

// metricsHandler serves expvar's variables and ours, under "rdma_nfsd".
func metricsHandler(srv *server.Server, conns *connTable) http.Handler {
	published.Lock()
	published.srv, published.conns = srv, conns
	published.Unlock()
	publishOnce.Do(func() {
		expvar.Publish("rdma_nfsd", expvar.Func(func() any {
			published.Lock()
			defer published.Unlock()
			return metrics(published.srv, published.conns)
		}))
	})
	return expvar.Handler()
}
