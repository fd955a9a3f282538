package gonfsd

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"

	"github.com/go-git/go-billy/v5"
	gonfs "github.com/willscott/go-nfs"
	nfshelper "github.com/willscott/go-nfs/helpers"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// Transport names used by the counters.
const (
	RDMA = "rdma"
	TCP  = "tcp"
)

// Config configures a Server.
type Config struct {
	// FS is the exported file system (required).
	FS billy.Filesystem
	// Provider is the verbs provider of the RDMA listener; nil means the
	// software provider (transport/verbs/soft).
	Provider verbs.Provider
	// RDMAAddr and TCPAddr are the listen addresses ("host:port"; port 0
	// picks one) of the RPC-over-RDMA and the TCP listener.
	RDMAAddr, TCPAddr string
	// Binding is the upper-layer binding of the RDMA listener; nil means
	// nfs.Binding{} (the NFSv3 binding of RFC 8267).
	Binding transport.Binding
	// Logger receives the RDMA listener's events (at debug level: every
	// refused header and ERR_CHUNK) and the private data of each
	// connection request; nil discards them. go-nfs logs through its own
	// logger (gonfs.Log).
	Logger *slog.Logger
}

// CallCount is how many calls of one procedure arrived on one transport.
type CallCount struct {
	Transport string // RDMA or TCP
	ID        CallID
	N         uint64
}

// Accepted is one connection the RDMA listener accepted.
type Accepted struct {
	// Conn is the responder connection; its Stats stay readable after it
	// closed.
	Conn *transport.Conn
	// Negotiated is what the connection negotiated (RFC 8797), read when
	// it was accepted: a responder Conn's Stats report the settings of
	// its current connection only, none once it is gone.
	Negotiated transport.Negotiated
}

// ConnRequest is one RDMA connection request the listener saw.
type ConnRequest struct {
	Remote string
	// PrivateData is the private data of the request as the CM delivered
	// it (56 bytes on RoCE/IB, zero-padded).
	PrivateData []byte
}

// Server is go-nfs's own server (gonfs.Server, unchanged) serving one
// caching handler on two listeners, with instruments: it counts the calls
// each transport carries and records the RDMA connections and connection
// requests.
type Server struct {
	rdma   *transport.Listener
	tcp    net.Listener
	cancel context.CancelFunc
	served chan error

	mu       sync.Mutex
	closed   bool
	conns    map[net.Conn]struct{}
	counts   map[countKey]uint64
	accepted []Accepted
	requests []ConnRequest
}

type countKey struct {
	transport string
	id        CallID
}

// handleLimit is the number of file handles go-nfs's caching handler
// keeps.
const handleLimit = 1024

// Start serves cfg.FS with go-nfs's server (its caching handler over its
// null-auth handler, which checks no credential) on both addresses, NFS
// and MOUNT on each, until Close. One handler serves both listeners, so
// the handle MNT returns over TCP is valid over RDMA.
func Start(cfg Config) (*Server, error) {
	if cfg.FS == nil {
		return nil, errors.New("gonfsd: Config.FS is nil")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	binding := cfg.Binding
	if binding == nil {
		binding = nfs.Binding{}
	}
	provider := cfg.Provider
	if provider == nil {
		provider = &soft.Provider{}
	}
	s := &Server{counts: map[countKey]uint64{}, conns: map[net.Conn]struct{}{}, served: make(chan error, 2)}
	rl, err := transport.Listen(cfg.RDMAAddr, &transport.Config{
		Provider: &recordingProvider{Provider: provider, s: s, log: logger}, Binding: binding, Logger: logger})
	if err != nil {
		return nil, err
	}
	tl, err := net.Listen("tcp", cfg.TCPAddr)
	if err != nil {
		_ = rl.Close()
		return nil, err
	}
	s.rdma, s.tcp = rl, tl
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	srv := &gonfs.Server{
		Handler: nfshelper.NewCachingHandler(nfshelper.NewNullAuthHandler(cfg.FS), handleLimit),
		Context: ctx,
	}
	// Serve draws a write verifier when it has none: one for both.
	if _, err := rand.Read(srv.ID[:]); err != nil {
		cancel()
		_ = rl.Close()
		_ = tl.Close()
		return nil, err
	}
	go func() { s.served <- srv.Serve(&countingListener{Listener: rl, s: s, network: RDMA}) }()
	go func() { s.served <- srv.Serve(&countingListener{Listener: tl, s: s, network: TCP}) }()
	return s, nil
}

// countingListener hands go-nfs its listener's connections wrapped in a
// countingConn, and keeps them (and an RDMA connection's Accepted) for the
// Server.
type countingListener struct {
	net.Listener
	s       *Server
	network string
}

func (l *countingListener) Accept() (net.Conn, error) {
	var c net.Conn
	var err error
	if tl, ok := l.Listener.(*transport.Listener); ok {
		var rc *transport.Conn
		if rc, err = tl.AcceptRDMA(); err == nil {
			c = rc
			a := Accepted{Conn: rc, Negotiated: rc.Stats().Negotiated}
			l.s.mu.Lock()
			l.s.accepted = append(l.s.accepted, a)
			l.s.mu.Unlock()
		}
	} else {
		c, err = l.Listener.Accept()
	}
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c, s: l.s, network: l.network}
	l.s.mu.Lock()
	closed := l.s.closed
	if !closed {
		l.s.conns[cc] = struct{}{}
	}
	l.s.mu.Unlock()
	if closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	return cc, nil
}

// countingConn counts the calls go-nfs reads from its connection, with a
// CallScanner over the bytes it reads.
type countingConn struct {
	net.Conn
	s       *Server
	network string
	scan    CallScanner // go-nfs reads a connection from one goroutine
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.scan.Scan(b[:n], c.count)
	return n, err
}

func (c *countingConn) count(id CallID) {
	c.s.mu.Lock()
	c.s.counts[countKey{c.network, id}]++
	c.s.mu.Unlock()
}

func (c *countingConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// RDMAAddr returns the address of the RPC-over-RDMA listener.
func (s *Server) RDMAAddr() net.Addr { return s.rdma.Addr() }

// TCPAddr returns the address of the TCP listener.
func (s *Server) TCPAddr() net.Addr { return s.tcp.Addr() }

// Count returns the number of calls of id that arrived on transport (RDMA
// or TCP).
func (s *Server) Count(transport string, id CallID) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[countKey{transport, id}]
}

// Calls returns every procedure called so far with its count, by transport
// then program, version and procedure.
func (s *Server) Calls() []CallCount {
	s.mu.Lock()
	out := make([]CallCount, 0, len(s.counts))
	for k, n := range s.counts {
		out = append(out, CallCount{Transport: k.transport, ID: k.id, N: n})
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b CallCount) int {
		return cmp.Or(cmp.Compare(a.Transport, b.Transport), cmp.Compare(a.ID.Prog, b.ID.Prog),
			cmp.Compare(a.ID.Vers, b.ID.Vers), cmp.Compare(a.ID.Proc, b.ID.Proc))
	})
	return out
}

// Accepted returns the connections accepted on the RDMA listener, in
// accept order.
func (s *Server) Accepted() []Accepted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.accepted)
}

// ConnRequests returns the RDMA connection requests seen, in arrival order.
func (s *Server) ConnRequests() []ConnRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Close closes both listeners and every connection, and waits for go-nfs's
// Serve loops to return. go-nfs's connection goroutines end on their own
// once their connection is closed.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.cancel()
	err := errors.Join(s.rdma.Close(), ignoreClosed(s.tcp.Close()))
	for _, c := range conns {
		_ = c.Close()
	}
	for range 2 {
		err = errors.Join(err, ignoreClosed(<-s.served))
	}
	return err
}

// ignoreClosed is err unless it says that a listener or connection was
// closed.
func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// recordingProvider is the configured verbs provider with its listeners'
// connection requests recorded and logged.
type recordingProvider struct {
	verbs.Provider
	s   *Server
	log *slog.Logger
}

func (p *recordingProvider) Listen(addr string) (verbs.Listener, error) {
	l, err := p.Provider.Listen(addr)
	if err != nil {
		return nil, err
	}
	return &recordingVerbsListener{Listener: l, p: p}, nil
}

type recordingVerbsListener struct {
	verbs.Listener
	p *recordingProvider
}

func (l *recordingVerbsListener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	req, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	pd := slices.Clone(req.PrivateData())
	remote := fmt.Sprint(req.RemoteAddr())
	l.p.s.mu.Lock()
	l.p.s.requests = append(l.p.s.requests, ConnRequest{Remote: remote, PrivateData: pd})
	l.p.s.mu.Unlock()
	l.p.log.Debug("gonfsd: connection request", "remote", remote, "private_data_len", len(pd),
		"private_data", hex.EncodeToString(pd[:min(len(pd), 8)]))
	return req, nil
}
