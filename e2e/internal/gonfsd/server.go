package gonfsd

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"

	"github.com/go-git/go-billy/v5"
	rpcnfs "github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	nfs "github.com/willscott/go-nfs"
	nfshelper "github.com/willscott/go-nfs/helpers"
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
	// rpcnfs.Binding{} (the NFSv3 binding of RFC 8267).
	Binding transport.Binding
	// Logger receives the transport's events (at debug level: every
	// refused header and ERR_CHUNK) and the private data of each
	// connection request; nil discards them.
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

// Server serves one go-nfs handler over an RPC-over-RDMA listener and a TCP
// listener and counts the calls each one carries.
type Server struct {
	rdma, tcp *countingListener
	served    chan error

	mu       sync.Mutex
	counts   map[countKey]uint64
	accepted []Accepted
	requests []ConnRequest
	conns    []net.Conn
}

type countKey struct {
	transport string
	id        CallID
}

// Start listens on both addresses and serves cfg.FS with go-nfs (a
// caching handler over a null-auth handler, as go-nfs's own examples) on
// each, until Close.
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
		binding = rpcnfs.Binding{}
	}
	s := &Server{counts: map[countKey]uint64{}, served: make(chan error, 2)}
	provider := cfg.Provider
	if provider == nil {
		provider = &soft.Provider{}
	}
	provider = &recordingProvider{Provider: provider, s: s, log: logger}
	rl, err := transport.Listen(cfg.RDMAAddr, &transport.Config{Provider: provider, Binding: binding, Logger: logger})
	if err != nil {
		return nil, err
	}
	tl, err := net.Listen("tcp", cfg.TCPAddr)
	if err != nil {
		_ = rl.Close()
		return nil, err
	}
	s.rdma = &countingListener{Listener: rl, rdma: rl, name: RDMA, s: s}
	s.tcp = &countingListener{Listener: tl, name: TCP, s: s}
	logger.Info("gonfsd: serving", "rdma", rl.Addr(), "tcp", tl.Addr())

	// One handler for both listeners: the handle MNT returns over TCP must
	// be valid over RDMA.
	handler := nfshelper.NewCachingHandler(nfshelper.NewNullAuthHandler(cfg.FS), 1024)
	for _, l := range []net.Listener{s.rdma, s.tcp} {
		go func() { s.served <- nfs.Serve(l, handler) }()
	}
	return s, nil
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

// Close stops both listeners, waits for both go-nfs servers to return and
// closes every connection they accepted.
func (s *Server) Close() error {
	errR := s.rdma.Close()
	errT := s.tcp.Close()
	for range 2 {
		if err := <-s.served; err != nil && !errors.Is(err, net.ErrClosed) {
			errR = cmp.Or(errR, err)
		}
	}
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	if errors.Is(errR, net.ErrClosed) {
		errR = nil // go-nfs closed it first
	}
	if errors.Is(errT, net.ErrClosed) {
		errT = nil
	}
	return errors.Join(errR, errT)
}

// countingListener hands out countingConns.
type countingListener struct {
	net.Listener
	rdma *transport.Listener // nil for TCP
	name string
	s    *Server
}

// Accept implements net.Listener.
func (l *countingListener) Accept() (net.Conn, error) {
	var c net.Conn
	var err error
	if l.rdma != nil {
		var rc *transport.Conn
		if rc, err = l.rdma.AcceptRDMA(); err == nil {
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
	l.s.mu.Lock()
	l.s.conns = append(l.s.conns, c)
	l.s.mu.Unlock()
	return &countingConn{Conn: c, name: l.name, s: l.s}, nil
}

// countingConn counts the calls go-nfs reads from the connection.
type countingConn struct {
	net.Conn
	name string
	s    *Server
	scan CallScanner
}

// Read implements net.Conn.
func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.scan.Scan(p[:n], c.count)
	return n, err
}

func (c *countingConn) count(id CallID) {
	c.s.mu.Lock()
	c.s.counts[countKey{c.name, id}]++
	c.s.mu.Unlock()
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
