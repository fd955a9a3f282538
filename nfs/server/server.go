package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/creds"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Network names of a Server's connections, as Config.OnConn and
// OnCall receive them.
const (
	NetRDMA = "rdma"
	NetTCP  = "tcp"
)

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("nfs: Server closed")

// Config configures a Server. Handler (or Exports) and Transport.Provider
// are required; every other field's zero value gives the default its
// comment states. Each field's comment also states its range: New refuses
// a Config with a field out of it, with a *transport.ConfigError naming
// the field (errors.Is(err, transport.ErrConfig)); it never adjusts a
// value silently.
type Config struct {
	// What is exported.

	// Handler is the export when there is one, open to every client: a
	// directory (DirFS) with its file handles (NewDirHandler), mounted
	// as "/" (or a directory below it). Set Handler or Exports, not
	// both; nil means Exports says what is exported.
	Handler *DirHandler
	// Exports are the directories exported, each under its path and with
	// its client rules (exports(5)); SetExports replaces them while the
	// Server runs. nil means Handler is the one export.
	Exports []Export

	// Where the Server listens.

	// Transport configures the RPC-over-RDMA listener; Transport.Provider
	// is required.
	//
	// A nil Transport.Binding means nfs.Binding{}, the NFSv3 binding of RFC
	// 8267 (READ and WRITE data, READLINK and SYMLINK paths by direct
	// placement). A nil Transport.CallBuffers means the server's own
	// pool of large buffers (the one READ replies are built in): a large
	// WRITE's data is pulled by RDMA Read straight into the buffer the
	// WRITE is executed from. A nil Transport.Logger means Logger. Its
	// other fields have the ranges and zero values transport.Config
	// documents, and a MaxRPCSize other than 0 is at least
	// nfs.MinMaxRPCSize (room for a READ or WRITE of 4 KiB).
	Transport transport.Config
	// RDMAAddr is the address of the RPC-over-RDMA listener; "" means
	// ":20049" (nfs.DefaultRDMAPort). TCPAddr is the address of the TCP
	// listener that serves MOUNT (and NFS if NFSOverTCP); "" means ":0",
	// a port of the system's choosing, registered with rpcbind. An
	// empty host means every address of the system.
	RDMAAddr, TCPAddr string
	// ListenHosts, if not empty, are the hosts (IP addresses, IPv6 ones
	// without brackets) the Server listens on, and only those: an
	// RPC-over-RDMA listener at each on RDMAAddr's port, a TCP listener
	// at each on TCPAddr's port, and, if it serves its own portmapper
	// (RpcbindConfig.Serve), the portmapper at each on ServeAddr's port;
	// the hosts of those addresses are then ignored. A port 0 is chosen
	// at the first host and the same port taken at the others, so that
	// one registration with rpcbind holds for every host. Empty means
	// the hosts of RDMAAddr, TCPAddr and ServeAddr themselves.
	ListenHosts []string
	// NFSOverTCP serves NFS version 3 on the TCP listener too (for
	// comparison with RDMA); false (the zero value) answers NFS calls
	// over TCP with PROG_UNAVAIL.
	NFSOverTCP bool
	// Rpcbind configures registration with rpcbind; the zero value
	// registers with the system's rpcbind at 127.0.0.1:111 and serves no
	// portmapper of its own (see RpcbindConfig).
	Rpcbind RpcbindConfig

	// How calls execute.

	// DRCSize bounds the duplicate request cache (entries, at most
	// MaxDRCSize; 0 means DefaultDRCSize) and DRCMaxAge the age of its
	// replies (not negative; 0 means DefaultDRCMaxAge).
	DRCSize   int
	DRCMaxAge time.Duration
	// ConcurrentCalls bounds the calls of one connection that execute at
	// once, at most MaxConcurrentCalls (0 means DefaultConcurrentCalls; 1
	// executes them one after the other, in order). A call waiting on
	// the disk (a COMMIT's fsync, a READ that misses the page cache)
	// then holds up only itself, as in knfsd's pool of threads.
	ConcurrentCalls int
	// NoInlineCalls has every call over RDMA handed to the connection's
	// workers. false (the zero value) executes the calls that cannot
	// block (NULL, and GETATTR, LOOKUP and READ of a file or directory in
	// the open-file cache, a READ only while its data is in memory, a
	// LOOKUP only while the dentry cache has the name; on tmpfs or ramfs
	// by unsquashed root, a WRITE of a cached file and a CREATE, MKDIR or
	// REMOVE in a cached directory) on the goroutine that
	// polled them, with no hand-off between goroutines
	// (transport.Conn.SetInlineHandler), unless ConcurrentCalls is 1.
	NoInlineCalls bool

	// Whose identity calls run with (RFC 1813 §4.4).

	// Squash says which callers' identities are replaced by the
	// anonymous one (exports(5)): RootSquash (the zero value),
	// NoRootSquash or AllSquash. Every file system operation of a call
	// runs with the caller's identity so mapped (its AUTH_SYS uid, gid
	// and groups; the anonymous identity for AUTH_NONE), so that the
	// kernel's permission checks decide, as with knfsd. This needs a
	// process that may switch identities (root, or CAP_SETUID and
	// CAP_SETGID); otherwise New logs a warning and every call runs as
	// the process itself (IdentitySwitching).
	Squash Squash
	// AnonUID and AnonGID are the anonymous identity, at most
	// 4294967294 ((uid_t)-1 is no identity); 0 means 65534 (nobody).
	AnonUID, AnonGID uint32

	// What the Server reports.

	// Logger receives the server's events; nil discards them. It is also
	// Transport.Logger when that is nil.
	Logger *slog.Logger
	// OnConn, if not nil, is called with every connection accepted, before
	// its first call is read: network is NetRDMA (c is then a
	// *transport.Conn) or NetTCP. nil means no such call.
	OnConn func(network string, c net.Conn)
	// OnCall, if not nil, is called with the header of every call
	// received, before it is answered; it must not keep h. Calls execute
	// concurrently (ConcurrentCalls), so OnCall may be called from several
	// goroutines at once; for a call executed inline (NoInlineCalls) it
	// runs on the connection's polling goroutine, and no other call of
	// the connection is received while it blocks. nil means no such call.
	OnCall func(network string, h *xdr.CallHeader)
}

// Server serves the export of a DirHandler with NFS version 3 (RFC 1813)
// over RPC-over-RDMA version 1 (RFC 8166, with the NFSv3 upper-layer
// binding of RFC 8267) and MOUNT version 3 (RFC 1813 §5) over TCP, as the
// Linux kernel client expects of knfsd: it mounts with
//
//	mount -t nfs -o vers=3,proto=rdma,port=20049 server:/export /mnt
//
// and sends MNT over TCP (never over RDMA) to the port rpcbind gives, or to
// mountport=. MOUNT is answered on the RPC-over-RDMA connections too, as
// go-nfs answers it on its NFS connection: the Go client (package
// nfs/client) sends it there when no portmapper answers.
//
// The Server executes every procedure of both programs itself, on the
// exported directory: NFSv3 NULL to COMMIT (RFC 1813 §3.3.0 to §3.3.21)
// and MOUNT NULL to EXPORT (§5.2.0 to §5.2.5). Every other program (the
// Linux client's NFSACL side program, NLM) gets PROG_UNAVAIL, another
// version of NFS or MOUNT PROG_MISMATCH, a procedure past the last
// PROC_UNAVAIL, and arguments that do not decode GARBAGE_ARGS (RFC 5531
// §9). NFS over TCP is served only with Config.NFSOverTCP.
//
// Identities (RFC 1813 §4.4): an NFS call runs as its caller, the uid, gid
// and groups of its AUTH_SYS credential mapped by Config.Squash, or
// the anonymous identity for AUTH_NONE; a call other than NULL with any
// other flavor is refused with AUTH_BADCRED (RFC 5531 §9). The kernel's permission checks decide what
// a caller may do, as with knfsd: SETATTR, ACCESS, READLINK, CREATE,
// MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME and LINK make their system
// calls as the caller; READ, WRITE, COMMIT, LOOKUP, READDIR and
// READDIRPLUS have the access they need checked as the caller (the file's
// owner passing for its own READ, WRITE and COMMIT, execute permission
// sufficing for a READ) and then run as the server. GETATTR, FSSTAT,
// FSINFO and PATHCONF need no permission. IdentitySwitching reports
// whether the process may switch identities.
//
// Attributes (RFC 1813 §2.6): every fattr3 of every reply is one stat(2)
// of the file, with its atime, mtime and ctime and the space its blocks
// take; the pre-operation attributes of wcc_data are the file's just
// before the operation, so that a client can tell its own change from
// another's.
//
// WRITE (RFC 1813 §3.3.7) makes DATA_SYNC and FILE_SYNC data durable
// before it replies FILE_SYNC, and replies UNSTABLE to UNSTABLE; COMMIT
// (§3.3.21) makes the file durable. Both carry WriteVerifier, new at
// every New, so that a client resends what a restart lost.
//
// Retransmissions of the non-idempotent procedures get the reply of the
// original from a duplicate request cache (RFC 1813 §4.10), on whichever
// connection they arrive, including while the original is still
// executing; the calls of one connection execute concurrently
// (Config.ConcurrentCalls).
type Server struct {
	cfg     Config
	log     *slog.Logger
	exports atomic.Pointer[exportTable]
	ids     *creds.Switcher
	policy  creds.Policy
	umask   uint32 // the process's, which creating calls undo
	mounts  mountList
	verf    [8]byte
	drc     *drc
	maxMsg  int
	// inlineAnswered and inlineHandedOff count the calls the polling
	// goroutines took (inlineCalls): answered there (counted as the reply
	// is sent, session.observe), or handed off.
	inlineAnswered, inlineHandedOff atomic.Uint64

	ls   *listeners // RDMA and TCP, one of each per listening host
	rpcb *rpcbindState

	wg        sync.WaitGroup
	done      chan struct{}
	closeOnce sync.Once
	// registered is closed once Serve registered with rpcbind (rpcb).
	registered chan struct{}

	mu         sync.Mutex
	serving    bool
	closed     bool
	sessions   map[*session]struct{}
	endedStats transport.Stats // summed over the RDMA connections closed
	metrics    *callMetrics
}

// New listens on cfg.RDMAAddr and cfg.TCPAddr (at each of
// cfg.ListenHosts); Serve then serves.
// Errors are *net.OpError for the listeners, as net.Listen's; a field of
// cfg out of its range is a *transport.ConfigError naming it
// (errors.Is(err, transport.ErrConfig)), returned before anything listens.
func New(cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	exps := cfg.Exports
	switch {
	case cfg.Handler != nil && exps != nil:
		return nil, errors.New("nfs: Config.Handler and Config.Exports are both set")
	case cfg.Handler != nil:
		exps = []Export{{Path: "/", Handler: cfg.Handler}}
	case exps == nil:
		return nil, errors.New("nfs: Config.Handler is nil and Config.Exports empty")
	}
	policy := creds.Policy{Squash: cfg.Squash, AnonUID: cfg.AnonUID, AnonGID: cfg.AnonGID}
	table, err := newExportTable(exps, policy)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	table.warnNested(log)
	if cfg.RDMAAddr == "" {
		cfg.RDMAAddr = fmt.Sprintf(":%d", nfs.DefaultRDMAPort)
	}
	if cfg.TCPAddr == "" {
		cfg.TCPAddr = ":0"
	}
	tcfg := cfg.Transport
	if tcfg.Binding == nil {
		tcfg.Binding = nfs.Binding{}
	}
	if tcfg.Logger == nil {
		tcfg.Logger = cfg.Logger
	}
	if tcfg.CallBuffers == nil {
		tcfg.CallBuffers = callBuffers{}
	}
	maxMsg := tcfg.MaxRPCSize
	if maxMsg <= 0 {
		maxMsg = transport.DefaultMaxRPCSize
	}
	ls, err := listen(&cfg, &tcfg)
	if err != nil {
		return nil, err
	}
	ids := creds.NewSwitcher()
	if !ids.Enabled() {
		self := ids.Self()
		log.Warn(fmt.Sprintf("nfs: cannot run calls as their callers (needs root, or CAP_SETUID and CAP_SETGID): every call runs as uid %d gid %d", self.UID, self.GID),
			"reason", ids.Reason())
	}
	umask := unix.Umask(0)
	unix.Umask(umask)
	s := &Server{
		cfg: cfg, log: log, verf: newWriteVerifier(),
		ids: ids, policy: policy,
		metrics: newCallMetrics(),
		umask:   uint32(umask),
		drc:     newDRC(cfg.DRCSize, cfg.DRCMaxAge), maxMsg: maxMsg,
		ls:   ls,
		done: make(chan struct{}), registered: make(chan struct{}),
		sessions: map[*session]struct{}{},
	}
	s.exports.Store(table)
	return s, nil
}

// SetExports replaces the Server's exports, as a reload of the exports
// file does (exportfs -r): the next call of every connection is judged by
// the new rules, and the handles of an export no longer listed are stale.
// exps are checked as New checks Config.Exports; on an error the exports
// stay as they were.
func (s *Server) SetExports(exps []Export) error {
	t, err := newExportTable(exps, s.policy)
	if err != nil {
		return err
	}
	t.warnNested(s.log)
	s.exports.Store(t)
	return nil
}

// RDMAAddr returns the address of the (first) RPC-over-RDMA listener.
func (s *Server) RDMAAddr() net.Addr { return s.ls.rdma[0].Addr() }

// TCPAddr returns the address of the (first) TCP listener (MOUNT, and
// NFS if Config.NFSOverTCP).
func (s *Server) TCPAddr() net.Addr { return s.ls.tcp[0].Addr() }

// Addrs returns the (first) RDMA and TCP listeners' addresses; RDMAAddrs
// and TCPAddrs return all of them.
func (s *Server) Addrs() (rdma, tcp net.Addr) { return s.RDMAAddr(), s.TCPAddr() }

// WriteVerifier returns the write verifier of WRITE and COMMIT replies
// (RFC 1813 §3.3.7): new at every New.
func (s *Server) WriteVerifier() [8]byte { return s.verf }

// IdentitySwitching reports whether calls run as their callers; when
// not, every call runs as the process itself, and the error says why.
func (s *Server) IdentitySwitching() (bool, error) { return s.ids.Enabled(), s.ids.Reason() }

// ListenerStats returns the RDMA listeners' counters: handshakes,
// connections, rejects (transport.ListenerStats), summed over the
// listeners (RDMAListeners has each one's).
func (s *Server) ListenerStats() transport.ListenerStats {
	var sum transport.ListenerStats
	for _, l := range s.ls.rdma {
		addFields(&sum, l.Stats(), reflect.Int, reflect.Int64, reflect.Uint64)
	}
	return sum
}

// DRCStats returns the counters of the duplicate request cache.
func (s *Server) DRCStats() DRCStats { return s.drc.stats() }

// Serve registers with rpcbind (see RpcbindConfig) and serves until ctx
// is done or Close is called; it then closes the Server. It returns
// ErrClosed after Close, ctx's error when ctx ended it, and fails at
// once if called twice.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.serving {
		s.mu.Unlock()
		return errors.New("nfs: Serve called twice")
	}
	s.serving = true
	s.wg.Add(len(s.ls.rdma) + len(s.ls.tcp))
	s.mu.Unlock()

	for _, l := range s.ls.rdma {
		go func() {
			defer s.wg.Done()
			s.acceptRDMA(l)
		}()
	}
	for _, l := range s.ls.tcp {
		go func() {
			defer s.wg.Done()
			s.acceptTCP(l)
		}()
	}
	s.log.Info("nfs: serving", "rdma", s.RDMAAddrs(), "tcp", s.TCPAddrs(), "nfs_over_tcp", s.cfg.NFSOverTCP)
	rpcb := s.registerRpcbind()
	s.mu.Lock()
	s.rpcb = rpcb
	s.mu.Unlock()
	close(s.registered)
	select {
	case <-ctx.Done():
		_ = s.Close()
		return ctx.Err()
	case <-s.done:
		return ErrClosed
	}
}

func (s *Server) acceptRDMA(l *transport.Listener) {
	for {
		c, err := l.AcceptRDMA()
		if err != nil {
			s.acceptFailed(NetRDMA, err)
			return
		}
		s.startSession(NetRDMA, c, c)
	}
}

func (s *Server) acceptTCP(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			s.acceptFailed(NetTCP, err)
			return
		}
		s.startSession(NetTCP, &recordConn{Conn: c, max: s.maxMsg}, c)
	}
}

func (s *Server) acceptFailed(network string, err error) {
	select {
	case <-s.done:
	default:
		s.log.Error("nfs: accept failed; listener stopped", "network", network, "err", err)
	}
}

// startSession serves the calls of the connection c (nc as OnConn gets
// it).
func (s *Server) startSession(network string, c msgConn, nc net.Conn) {
	if s.cfg.OnConn != nil {
		s.cfg.OnConn(network, nc)
	}
	ss := &session{s: s, network: network, c: c, client: clientHost(c.RemoteAddr()),
		done: make(chan struct{}), concurrent: s.concurrentCalls(), workers: 1, started: time.Now(),
		addr: addrOf(c.RemoteAddr())}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = c.Close()
		return
	}
	s.sessions[ss] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	if tc, ok := c.(*transport.Conn); ok && !s.cfg.NoInlineCalls && ss.concurrent > 1 {
		tc.SetInlineHandler(&inlineCalls{ss: ss, w: worker{out: make([]byte, 0, workerReply), inline: true}})
	}
	go func() {
		defer s.wg.Done()
		ss.readCalls()
	}()
}

// DefaultConcurrentCalls is Config.ConcurrentCalls's default.
const DefaultConcurrentCalls = 16

// concurrentCalls is Config.ConcurrentCalls (New checked its range), or
// its default.
func (s *Server) concurrentCalls() int {
	if n := s.cfg.ConcurrentCalls; n > 0 {
		return n
	}
	return DefaultConcurrentCalls
}

func (s *Server) removeSession(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss)
	if st, ok := ss.c.(interface{ Stats() transport.Stats }); ok {
		addStats(&s.endedStats, st.Stats())
	}
	s.mu.Unlock()
}

// ReplyStats is what the Server's RDMA connections counted of the calls
// they received (transport.Stats): Calls received, SlowReplies posted or
// dropped later than transport.Config.SlowReply after their call
// arrived, and calls left Unanswered when their connection closed.
type ReplyStats struct {
	Calls, SlowReplies, Unanswered uint64
}

// ReplyStats sums the ReplyStats of the Server's RDMA connections, open
// and closed.
func (s *Server) ReplyStats() ReplyStats {
	st, _, _ := s.transportTotals()
	return ReplyStats{Calls: st.Recvs, SlowReplies: st.SlowReplies, Unanswered: st.Unanswered}
}

// Close stops the listeners, unregisters from rpcbind, closes every
// connection and waits for everything the Server started to end.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		serving := s.serving
		sessions := make([]*session, 0, len(s.sessions))
		for ss := range s.sessions {
			sessions = append(sessions, ss)
		}
		s.mu.Unlock()
		close(s.done)
		errL := s.ls.close()
		for _, ss := range sessions {
			ss.close(nil)
		}
		if serving {
			<-s.registered // bounded by RpcbindConfig.Timeout
			s.unregisterRpcbind(s.rpcb)
		}
		s.wg.Wait()
		err = errL
	})
	return err
}
