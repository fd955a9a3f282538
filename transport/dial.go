package transport

import (
	"context"
	"net"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// reconnectDialTimeout bounds one reconnection attempt.
const reconnectDialTimeout = 10 * time.Second

// Dial connects to an RPC-over-RDMA responder at addr ("host:port"; NFS
// over RDMA listens on port 20049) and returns a requester Conn. It sends
// our RFC 8797 private data with the connect request and sizes the
// connection from the responder's answer. cfg and cfg.Provider are
// required: without them Dial fails with an error wrapping ErrNoProvider;
// with a field out of its range (Config.Check), with an error wrapping a
// *ConfigError (ErrConfig), before anything is allocated or sent.
func Dial(ctx context.Context, addr string, cfg *Config) (*Conn, error) {
	if err := cfg.checkAt("dial", addr); err != nil {
		return nil, err
	}
	c := newConn(cfg.withDefaults(cmpriv.Requester), cmpriv.Requester)
	c.reqState.init()
	c.dial = func() (*endpoint, error) {
		ctx, cancel := context.WithTimeout(context.Background(), reconnectDialTimeout)
		defer cancel()
		// Close cancels a reconnection attempt in progress.
		go func() {
			select {
			case <-c.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		return c.dialEndpoint(ctx, addr)
	}
	ep, err := c.dialEndpoint(ctx, addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "rdma", Addr: stringAddr(addr), Err: err}
	}
	c.laddr, c.raddr = ep.vc.LocalAddr(), ep.vc.RemoteAddr()
	c.lock()
	c.ep = ep
	if ep.grant > 0 {
		c.reqState.credits.Update(ep.grant)
	}
	c.startEndpoint(ep)
	if c.cfg.Reconnect.CallTimeout > 0 {
		c.bg.Add(1)
		go c.reqState.watchCalls()
	}
	c.unlock()
	return c, nil
}

// local is the RFC 8797 message the peer believes we sent: our offer, or the
// RFC 8166 defaults when we send none.
func (c *Config) local() (cmpriv.Message, []byte) {
	if c.NoPrivateData {
		return cmpriv.Default(), nil
	}
	m := c.offer()
	return m, m.Append(nil)
}

// maxSendQueue is the largest send queue both providers take (and what
// MaxCredits credits would ask for beyond it only throttles posting).
const maxSendQueue = 1 << 16

func (c *Config) caps(nRecv int) verbs.QueueCaps {
	caps := verbs.DefaultQueueCaps
	caps.SendQueue = min(max(caps.SendQueue, 4*int(c.Credits)+8), maxSendQueue)
	caps.RecvQueue = nRecv
	return caps
}

// dialEndpoint makes one connection: Receives are posted (in Setup) before
// the connect request goes out, sized by our own offer since the
// responder's is not known yet (RFC 8797 §4.2).
func (c *Conn) dialEndpoint(ctx context.Context, addr string) (*endpoint, error) {
	local, pd := c.cfg.local()
	n := int(c.cfg.Credits)
	sendSize := max(local.SendSize, c.cfg.offer().SendSize)
	recvSize := max(local.RecvSize, c.cfg.offer().RecvSize)
	ep := c.newEndpoint(cmpriv.Settings{})
	// Reverse-direction calls, if we offer to serve them, take Receives
	// and Send buffers of their own (reverse_serve.go).
	rev := 0
	if c.cfg.OfferVersion2 && c.cfg.ReverseHandler != nil {
		rev = reverseCredits
	}
	caps := c.cfg.caps(n + rev)
	vc, err := c.cfg.Provider.Dial(ctx, addr, &verbs.ConnOptions{PrivateData: pd, Caps: caps,
		Setup: func(vc verbs.Conn) error { return ep.setup(vc, n, n+rev, sendSize, n+rev, recvSize, n+rev) }})
	if err != nil {
		return nil, err
	}
	ep.sqCap = caps.SendQueue
	ep.settings = cmpriv.Negotiate(cmpriv.Requester, local, vc.PeerPrivateData())
	ep.vers = chunks.Version1
	if _, refused := v2Refused.Load(addr); c.cfg.OfferVersion2 && !refused {
		nctx, cancel := context.WithTimeout(ctx, negotiationTimeout)
		err := c.negotiateV2(nctx, ep, addr)
		cancel()
		if err != nil {
			_ = vc.Close()
			return nil, err
		}
	}
	c.cfg.Logger.Info("rpcrdma: connected", "role", "requester", "remote", addr,
		"peer_private_data", ep.settings.PeerStatus.String(), "peer", ep.settings.Peer.String(),
		"send_inline", ep.settings.SendInline, "recv_inline", ep.settings.RecvInline,
		"expect_remote_invalidate", ep.settings.ExpectRemoteInvalidate, "version", ep.vers)
	return ep, nil
}

type stringAddr string

func (a stringAddr) Network() string { return "rdma" }
func (a stringAddr) String() string  { return string(a) }

var _ net.Conn = (*Conn)(nil)
