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
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Transport names used by the counters.
const (
	RDMA = nfs.NetRDMA
	TCP  = nfs.NetTCP
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

// Server is an nfs.Server with instruments: it counts the calls each
// transport carries and records the RDMA connections and connection
// requests.
type Server struct {
	srv    *nfs.Server
	served chan error

	mu       sync.Mutex
	counts   map[countKey]uint64
	accepted []Accepted
	requests []ConnRequest
}

type countKey struct {
	transport string
	id        CallID
}

// Start serves cfg.FS with an nfs.Server (go-nfs's caching handler over
// its null-auth handler, NFS over TCP too, no rpcbind registration) on
// both addresses, until Close.
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
	s := &Server{counts: map[countKey]uint64{}, served: make(chan error, 1)}
	provider := cfg.Provider
	if provider == nil {
		provider = &soft.Provider{}
	}
	srv, err := nfs.NewServer(nfs.ServerConfig{
		FS:         cfg.FS,
		Transport:  transport.Config{Provider: &recordingProvider{Provider: provider, s: s, log: logger}, Binding: binding},
		RDMAAddr:   cfg.RDMAAddr,
		TCPAddr:    cfg.TCPAddr,
		NFSOverTCP: true,
		Rpcbind:    nfs.RpcbindConfig{Disable: true},
		Logger:     logger,
		OnConn:     s.onConn,
		OnCall:     s.onCall,
	})
	if err != nil {
		return nil, err
	}
	s.srv = srv
	go func() { s.served <- srv.Serve(context.Background()) }()
	return s, nil
}

func (s *Server) onConn(network string, c net.Conn) {
	rc, ok := c.(*transport.Conn)
	if network != nfs.NetRDMA || !ok {
		return
	}
	a := Accepted{Conn: rc, Negotiated: rc.Stats().Negotiated}
	s.mu.Lock()
	s.accepted = append(s.accepted, a)
	s.mu.Unlock()
}

func (s *Server) onCall(network string, h *xdr.CallHeader) {
	id := CallID{Prog: h.Prog, Vers: h.Vers, Proc: h.Proc}
	s.mu.Lock()
	s.counts[countKey{network, id}]++
	s.mu.Unlock()
}

// NFS returns the nfs.Server.
func (s *Server) NFS() *nfs.Server { return s.srv }

// RDMAAddr returns the address of the RPC-over-RDMA listener.
func (s *Server) RDMAAddr() net.Addr { return s.srv.RDMAAddr() }

// TCPAddr returns the address of the TCP listener.
func (s *Server) TCPAddr() net.Addr { return s.srv.TCPAddr() }

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

// Close closes the nfs.Server: its listeners and every connection.
func (s *Server) Close() error {
	err := s.srv.Close()
	if e := <-s.served; !errors.Is(e, nfs.ErrServerClosed) {
		err = errors.Join(err, e)
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
