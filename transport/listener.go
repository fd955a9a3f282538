package transport

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// acceptTimeout bounds one connection handshake in Accept.
const acceptTimeout = 10 * time.Second

// Listener accepts RPC-over-RDMA connections; each is a responder Conn. It
// is a net.Listener, so RPC servers written for TCP (net/rpc-style loops,
// github.com/willscott/go-nfs's Serve) use it unchanged.
type Listener struct {
	cfg    Config
	vl     verbs.Listener
	ctx    context.Context
	cancel context.CancelFunc
}

// Listen listens for RPC-over-RDMA connections on addr ("host:port").
// cfg and cfg.Provider are required: without them Listen fails with an
// error wrapping ErrNoProvider.
func Listen(addr string, cfg *Config) (*Listener, error) {
	if err := cfg.checkProvider("listen", addr); err != nil {
		return nil, err
	}
	c := cfg.withDefaults(cmpriv.Responder)
	vl, err := c.Provider.Listen(addr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "rdma", Addr: stringAddr(addr), Err: err}
	}
	l := &Listener{cfg: c, vl: vl}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// Accept waits for and returns the next connection. After Close it returns
// an error wrapping net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.AcceptRDMA()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AcceptRDMA is Accept returning the *Conn.
func (l *Listener) AcceptRDMA() (*Conn, error) {
	for {
		req, err := l.vl.Accept(l.ctx)
		if err != nil {
			if errors.Is(err, verbs.ErrClosed) || l.ctx.Err() != nil {
				err = net.ErrClosed
			}
			return nil, &net.OpError{Op: "accept", Net: "rdma", Addr: l.vl.Addr(), Err: err}
		}
		c, err := l.accept(req)
		if err != nil {
			l.cfg.Logger.Warn("rpcrdma: accept failed", "remote", req.RemoteAddr(), "err", err)
			continue
		}
		return c, nil
	}
}

// accept negotiates (RFC 8797) and accepts one connection request: the
// responder knows the requester's sizes before it posts its Receives.
func (l *Listener) accept(req verbs.ConnRequest) (*Conn, error) {
	cfg := l.cfg
	local, pd := cfg.local()
	settings := cmpriv.Negotiate(cmpriv.Responder, local, req.PrivateData())
	c := newConn(cfg, cmpriv.Responder)
	nRecv := int(cfg.GrantPolicy.Max)
	nSend := nRecv
	c.initResponder(nRecv, nSend)
	ep := &endpoint{c: c, settings: settings}
	caps := cfg.caps(nRecv)
	sendSize := max(settings.SendInline, local.SendSize)
	ctx, cancel := context.WithTimeout(l.ctx, acceptTimeout)
	defer cancel()
	vc, err := req.Accept(ctx, &verbs.ConnOptions{PrivateData: pd, Caps: caps,
		Setup: func(vc verbs.Conn) error {
			return ep.setup(vc, nRecv+nSend, nSend, sendSize, nRecv, settings.RecvBuffer, nRecv)
		}})
	if err != nil {
		return nil, err
	}
	ep.sqCap = caps.SendQueue
	cfg.Logger.Info("rpcrdma: accepted", "role", "responder", "remote", vc.RemoteAddr(),
		"peer_private_data", settings.PeerStatus.String(), "peer", settings.Peer.String(),
		"send_inline", settings.SendInline, "recv_inline", settings.RecvInline,
		"send_with_invalidate", settings.SendWithInvalidate)
	c.laddr, c.raddr = vc.LocalAddr(), vc.RemoteAddr()
	c.mu.Lock()
	c.ep = ep
	ep.start()
	c.mu.Unlock()
	return c, nil
}

// Close stops listening; blocked and later Accepts fail with net.ErrClosed.
// Connections already accepted stay open.
func (l *Listener) Close() error {
	l.cancel()
	return l.vl.Close()
}

// Addr returns the listening address.
func (l *Listener) Addr() net.Addr { return l.vl.Addr() }

var _ net.Listener = (*Listener)(nil)
