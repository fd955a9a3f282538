package transport

import (
	"container/list"
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Listener accepts RPC-over-RDMA connections; each is a responder Conn. It
// is a net.Listener, so RPC servers written for TCP (net/rpc-style loops,
// github.com/willscott/go-nfs's Serve) use it unchanged.
//
// As a TCP listener in the kernel does, a Listener completes handshakes in
// the background, from Listen on, and queues the established connections
// for Accept. Its limits keep a flood of hostile or broken peers from
// stalling or exhausting it:
//
//   - Handshakes run concurrently, each bounded by
//     Config.HandshakeTimeout: a peer that sends a connection request and
//     never confirms the accept delays no other peer, and loses its place
//     after the timeout.
//   - Config.AcceptBacklog bounds, as listen(2)'s backlog does, the
//     handshakes in progress plus the connections waiting for Accept.
//   - Config.HandshakeMemory bounds the registered memory of the
//     handshakes, and so their number (ListenerLimits.Handshakes), below
//     the backlog if need be.
//   - Config.MaxConns, if set, caps the connections: those of the backlog
//     plus those returned by Accept and not yet closed. Closing a
//     connection frees its place.
//
// A connection request that finds a limit reached takes the place of a
// handshake in progress, if there is one: the oldest handshake of the
// source (the requester's IP address) that holds the most handshakes in
// progress, the requester's own source first if it is one of those. That
// handshake is abandoned (its queue pair and buffers freed; its dialer
// sees the connection fail: a verbs.ErrDisconnected, or a reject where
// the IB CM answers the abandoned accept with a REJ) and the new
// request's begins. A flood from a few sources so churns its own
// handshakes: a source holding no more handshakes than any other loses
// none of them to a heavier one, and a legitimate client that dials
// during a flood from other addresses gets in (Stats counts in
// HandshakesDisplaced the handshakes that gave their place to another
// source). A flood spread over as many source addresses as there are
// places (one handshake each) falls back to evicting the oldest
// handshakes.
// The IB CM gives no sign that a peer is live before its RTU (IBA 12.6),
// and the accept (REP) must already carry the queue pair, whose Receives
// RFC 8797 §4.2 and RFC 8166 §3.3.3 want posted before the peer may send;
// so, as the kernel's SYN queue drops entries, the handshakes in progress
// are a queue of bounded size that a flood of half-open peers (requests
// that are never confirmed) can churn but never fill: a peer that
// completes its handshake within the time the flood takes to send
// ListenerLimits.Handshakes further requests always gets in, and so does,
// however long its handshake, a peer whose source holds fewer handshakes
// than the flood's sources. A request that finds the
// limits taken by established connections only is rejected at once (the
// dialer's error is a *verbs.RejectedError), never queued. Stats counts
// the handshakes, the connections, the evictions and the rejects.
//
// An abandoned handshake frees its queue pair and buffers as it ends,
// which a busy device may take a while to do; the resources of at most
// 2 x ListenerLimits.Handshakes handshakes (those in progress and as many
// ending) exist at once, and a handshake beyond them waits, within its
// timeout, for one to end before it creates its own. A half-open flood so
// holds at most Config.HandshakeMemory registered, whatever its rate
// (ListenerLimits).
type Listener struct {
	cfg Config
	vl  verbs.Listener
	// host is vl's IP (listenHost), parsed once: the address requests
	// must be sent to; invalid when every address is (addressedHere).
	host   netip.Addr
	ctx    context.Context // cancelled by Close: ends the handshakes
	cancel context.CancelFunc
	// calls and replies are the MemoryLimits.ListenerCalls and
	// ListenerReplies budgets its connections share.
	calls, replies *sharedBudget
	// regs meters the callers' buffers its connections hold registered,
	// within MemoryLimits.ListenerRegistered.
	regs *regMeter
	// ready holds the established connections waiting for Accept; its
	// capacity is the backlog, which handshakes+queued never exceeds, so
	// a handshake never blocks on it.
	ready chan *Conn
	// setups holds a token for each handshake whose queue pair and
	// buffers exist (see Listener); capacity 2 x limits.Handshakes.
	setups   chan struct{}
	limits   ListenerLimits
	loopDone chan struct{} // closed when the accept loop ended
	wg       sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	mu  sync.Mutex
	err error // why the accept loop ended
	// sources holds the handshakes in progress by source (see
	// sourceLoads); handshakes is their number.
	sources    sourceLoads
	handshakes int // handshakes in progress
	queued     int // connections in ready
	conns      int // connections established and not closed
	n          ListenerStats
}

// ListenerStats are a Listener's counters.
type ListenerStats struct {
	// Handshakes is the number of handshakes in progress, Queued the
	// number of connections established and waiting for Accept (the two
	// make up the backlog), Conns the number of connections established
	// and not yet closed (Queued included).
	Handshakes, Queued, Conns int
	// Accepted counts the connections established.
	Accepted uint64
	// RejectedBacklog and RejectedCap count the connection requests
	// rejected because the backlog was full (Config.AcceptBacklog) and
	// because the connections were at their cap (Config.MaxConns).
	RejectedBacklog, RejectedCap uint64
	// HandshakeTimeouts counts the handshakes abandoned after
	// Config.HandshakeTimeout; HandshakeFailures the ones that failed
	// otherwise (the peer went away or refused our accept, setup failed,
	// the Listener was closed).
	HandshakeTimeouts, HandshakeFailures uint64
	// Registered is the bytes of the RPC server's buffers its
	// connections hold registered now (Config.CallBuffers' and
	// WriteMsgDirect's, in use or cached: the sum of their
	// Stats.Registered), within MemoryLimits.ListenerRegistered.
	Registered int64
	// CallBytes and ReplyBytes are the bytes of the MemoryLimits.
	// ListenerCalls and ListenerReplies budgets its connections hold now:
	// Read chunk data of calls not yet read by the RPC server, and
	// replies staged for RDMA Write whose Send has not completed.
	CallBytes, ReplyBytes int
	// HandshakesEvicted counts the handshakes abandoned to make room for
	// a newer connection request (see Listener); HandshakesDisplaced
	// counts those of them whose place went to a request from another
	// source (one holding fewer handshakes in progress), the others
	// having given theirs to a newer request of their own source.
	HandshakesEvicted, HandshakesDisplaced uint64
	// RejectedAddr counts the connection requests rejected because they
	// were sent to another address than the Listener's (see Listen).
	RejectedAddr uint64
}

// halfOpen is a handshake in progress, an element of its source's list
// (sourceLoads).
type halfOpen struct {
	cancel context.CancelFunc // ends the handshake
	src    *sourceLoad
	elem   *list.Element // in src.handshakes
	// evicted says the handshake gave its place to a newer request (under
	// Listener.mu): it no longer counts, and it ends in failure.
	evicted bool
}

// Listen listens for RPC-over-RDMA connections on addr ("host:port").
// With a host other than the unspecified address, the Listener accepts
// only connection requests sent to that address and rejects the others:
// the RDMA CM hands a listener bound to a loopback address the requests
// sent to the other addresses of the device it picked, which would serve
// the network from a listener meant for the host alone.
// cfg and cfg.Provider are required: without them Listen fails with an
// error wrapping ErrNoProvider; with a field out of its range
// (Config.Check), with an error wrapping a *ConfigError (ErrConfig),
// before it listens.
func Listen(addr string, cfg *Config) (*Listener, error) {
	if err := cfg.checkAt("listen", addr); err != nil {
		return nil, err
	}
	c := cfg.withDefaults(cmpriv.Responder)
	limits := listenerLimits(&c)
	vl, err := c.Provider.Listen(addr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "rdma", Addr: stringAddr(addr), Err: err}
	}
	l := &Listener{
		cfg:      c,
		vl:       vl,
		host:     listenHost(vl.Addr()),
		ready:    make(chan *Conn, c.AcceptBacklog),
		setups:   make(chan struct{}, 2*limits.Handshakes),
		limits:   limits,
		loopDone: make(chan struct{}),
		calls:    newSharedBudget(c.Memory.ListenerCalls, c.MaxRPCSize),
		replies:  newSharedBudget(c.Memory.ListenerReplies, c.MaxRPCSize),
		regs:     &regMeter{limit: int64(c.Memory.ListenerRegistered)},
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Add(1)
	go l.acceptLoop()
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
	if l.ctx.Err() != nil {
		return nil, l.opError(net.ErrClosed)
	}
	select {
	case c := <-l.ready:
		return l.take(c), nil
	case <-l.ctx.Done():
		return nil, l.opError(net.ErrClosed)
	case <-l.loopDone:
		// The verbs listener failed: the connections established
		// before still go out, then its error.
		select {
		case c := <-l.ready:
			return l.take(c), nil
		default:
		}
		l.mu.Lock()
		err := l.err
		l.mu.Unlock()
		return nil, l.opError(err)
	}
}

// take hands out c, taken from ready.
func (l *Listener) take(c *Conn) *Conn {
	l.mu.Lock()
	l.queued--
	l.mu.Unlock()
	return c
}

func (l *Listener) opError(err error) error {
	return &net.OpError{Op: "accept", Net: "rdma", Addr: l.vl.Addr(), Err: err}
}

// acceptLoop takes the connection requests of the verbs listener, rejects
// those beyond the limits and starts a handshake for each other one.
func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	defer close(l.loopDone)
	for {
		req, err := l.vl.Accept(l.ctx)
		if err != nil {
			if errors.Is(err, verbs.ErrClosed) || l.ctx.Err() != nil {
				err = net.ErrClosed
			}
			l.mu.Lock()
			l.err = err
			l.mu.Unlock()
			return
		}
		l.admit(req)
	}
}

// admit starts the handshake of req, in the place of a handshake in
// progress (evictFor) if a limit is reached, or rejects it if the limit is
// taken by established connections only.
func (l *Listener) admit(req verbs.ConnRequest) {
	var why string
	src := sourceOf(req.RemoteAddr())
	l.mu.Lock()
	capFull := l.cfg.MaxConns > 0 && l.handshakes+l.conns >= l.cfg.MaxConns
	backlogFull := l.handshakes+l.queued >= l.cfg.AcceptBacklog ||
		l.handshakes >= l.limits.Handshakes
	switch {
	case l.ctx.Err() != nil:
		why = "listener closed"
	case !l.addressedHere(req.LocalAddr()):
		why = "sent to " + req.LocalAddr().String() + ", not to the listener's address"
		l.n.RejectedAddr++
	case capFull && l.handshakes == 0:
		why = "connection cap reached"
		l.n.RejectedCap++
	case backlogFull && l.handshakes == 0:
		why = "backlog full"
		l.n.RejectedBacklog++
	default:
		if capFull || backlogFull {
			// Each sum was at its limit (never over it): one place
			// freed is room for req under all of them.
			l.evictForLocked(src)
		}
		ctx, cancel := context.WithTimeout(l.ctx, l.cfg.HandshakeTimeout)
		h := &halfOpen{cancel: cancel}
		l.sources.add(src, h)
		l.handshakes++
		l.wg.Add(1)
		l.mu.Unlock()
		go l.handshake(ctx, req, h)
		return
	}
	l.mu.Unlock()
	err := req.Reject(nil)
	l.cfg.Logger.Debug("rpcrdma: connection request rejected", "remote", req.RemoteAddr(), "reason", why, "err", err)
}

// addressedHere reports whether a connection request sent to local is
// for the Listener: its address is unspecified (every address), or
// local's IP is its own, or the provider cannot tell (local nil or
// unparsable).
func (l *Listener) addressedHere(local net.Addr) bool {
	if !l.host.IsValid() || local == nil {
		return true
	}
	ra, err := netip.ParseAddrPort(local.String())
	return err != nil || ra.Addr().Unmap().WithZone("") == l.host
}

// listenHost returns the IP of a listener's address a, unmapped and
// without its zone: the zero Addr if a is nil, unparsable or unspecified
// (every address).
func listenHost(a net.Addr) netip.Addr {
	if a == nil {
		return netip.Addr{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil || ap.Addr().IsUnspecified() {
		return netip.Addr{}
	}
	return ap.Addr().Unmap().WithZone("")
}

// evictForLocked abandons a handshake in progress to make room for a
// newer request from src (see sourceLoads.victim): its place is free at
// once, and its goroutine ends it in failure. There is one (l.handshakes
// > 0). l.mu is held.
func (l *Listener) evictForLocked(src netip.Addr) {
	h := l.sources.victim(src)
	if h.src.addr != src {
		l.n.HandshakesDisplaced++
	}
	l.sources.remove(h)
	h.evicted = true
	l.handshakes--
	l.n.HandshakesEvicted++
	h.cancel()
}

// handshake accepts req within ctx (the handshake timeout, or h's
// eviction) and queues the connection for Accept.
func (l *Listener) handshake(ctx context.Context, req verbs.ConnRequest, h *halfOpen) {
	defer l.wg.Done()
	var c *Conn
	var err error
	select {
	case l.setups <- struct{}{}:
		c, err = l.accept(ctx, req) // its resources are freed on failure
		<-l.setups
	case <-ctx.Done():
		err = ctx.Err()
		_ = req.Reject(nil)
	}
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	h.cancel()
	l.mu.Lock()
	if h.evicted {
		// Its place went to a newer request; a confirmation that
		// raced the eviction is too late.
		l.mu.Unlock()
		if err == nil {
			_ = c.Close()
		}
		l.cfg.Logger.Debug("rpcrdma: handshake evicted", "remote", req.RemoteAddr())
		return
	}
	l.sources.remove(h)
	l.handshakes--
	if err != nil {
		if timedOut {
			l.n.HandshakeTimeouts++
		} else {
			l.n.HandshakeFailures++
		}
		l.mu.Unlock()
		if l.ctx.Err() == nil {
			l.cfg.Logger.Warn("rpcrdma: accept failed", "remote", req.RemoteAddr(), "timed_out", timedOut, "err", err)
		}
		return
	}
	l.queued++
	l.conns++
	l.n.Accepted++
	l.mu.Unlock()
	// The connection's place is freed when it is closed, by whoever
	// closes it (the Accept caller, or Close for one never taken), and
	// before its Close returns: Conn.Close waits for c.bg (a responder
	// has no other use for it).
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		<-c.done
		l.mu.Lock()
		l.conns--
		l.mu.Unlock()
	}()
	l.ready <- c // never blocks: see ready
}

// accept negotiates (RFC 8797) and accepts one connection request: the
// responder knows the requester's sizes before it posts its Receives.
func (l *Listener) accept(ctx context.Context, req verbs.ConnRequest) (*Conn, error) {
	cfg := l.cfg
	local, pd := cfg.local()
	settings := cmpriv.Negotiate(cmpriv.Responder, local, req.PrivateData())
	c := newConn(cfg, cmpriv.Responder)
	nRecv := int(cfg.GrantPolicy.Max)
	nSend := nRecv
	c.svcState.init(nRecv, nSend, l.calls, l.replies, l.regs)
	ep := c.newEndpoint(settings)
	// A version 2 connection may carry reverse-direction calls: their
	// answers and the calls themselves take Receives and Send buffers of
	// their own (reverse_call.go).
	rev := 0
	if cfg.AcceptVersion2 {
		rev = reverseCredits
	}
	caps := cfg.caps(nRecv + rev)
	sendSize := max(settings.SendInline, local.SendSize)
	vc, err := req.Accept(ctx, &verbs.ConnOptions{PrivateData: pd, Caps: caps,
		Setup: func(vc verbs.Conn) error {
			return ep.setup(vc, nRecv+nSend, nSend+rev, sendSize, nRecv+rev, settings.RecvBuffer, nRecv+rev)
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
	c.lock()
	c.ep = ep
	c.startEndpoint(ep)
	c.unlock()
	return c, nil
}

// Stats returns the Listener's counters.
func (l *Listener) Stats() ListenerStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.n
	s.Handshakes, s.Queued, s.Conns = l.handshakes, l.queued, l.conns
	s.Registered = l.regs.inUse()
	s.CallBytes, s.ReplyBytes = l.calls.inUse(), l.replies.inUse()
	return s
}

// ListenerLimits are the limits of a Listener's Config, as it applies
// them (defaults filled in): what ListenerStats' gauges are measured
// against.
type ListenerLimits struct {
	// Backlog bounds Handshakes plus Queued (Config.AcceptBacklog);
	// MaxConns, if positive, bounds Handshakes plus Conns
	// (Config.MaxConns; 0: no cap).
	Backlog, MaxConns int
	// HandshakeBytes is the memory one handshake registers before it
	// sends its accept: a Receive and a Send buffer of the inline sizes
	// offered for each credit it may grant (GrantPolicy.Max). At most
	// 2 x Handshakes handshakes hold it at once (those in progress and as
	// many evicted ones ending), within HandshakeMemory
	// (Config.HandshakeMemory): Handshakes is HandshakeMemory /
	// (2 x HandshakeBytes), at least 1 and at most Backlog, and bounds
	// ListenerStats.Handshakes.
	HandshakeBytes, HandshakeMemory, Handshakes int
	// Calls, Replies and Registered bound CallBytes, ReplyBytes and
	// Registered (MemoryLimits.ListenerCalls, ListenerReplies and
	// ListenerRegistered).
	Calls, Replies, Registered int
}

// Limits returns the limits the Listener applies.
func (l *Listener) Limits() ListenerLimits { return l.limits }

// ListenerLimits returns the limits a Listener with c applies
// (Listener.Limits), without listening: a program can check its settings
// against them first.
func (c *Config) ListenerLimits() ListenerLimits {
	d := c.withDefaults(cmpriv.Responder)
	return listenerLimits(&d)
}

// listenerLimits returns the limits of c, whose defaults are filled in.
func listenerLimits(c *Config) ListenerLimits {
	m := c.Memory
	local, _ := c.local()
	per := int(c.GrantPolicy.Max) * (local.RecvSize + local.SendSize)
	return ListenerLimits{Backlog: c.AcceptBacklog, MaxConns: max(c.MaxConns, 0),
		HandshakeBytes: per, HandshakeMemory: c.HandshakeMemory,
		Handshakes: min(max(c.HandshakeMemory/(2*max(per, 1)), 1), c.AcceptBacklog),
		Calls:      m.ListenerCalls, Replies: m.ListenerReplies, Registered: m.ListenerRegistered}
}

// Close stops listening; blocked and later Accepts fail with net.ErrClosed.
// Handshakes in progress are abandoned and connections not yet returned
// by Accept are closed; connections already accepted stay open.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.cancel()
		l.closeErr = l.vl.Close()
		l.wg.Wait()
		for {
			select {
			case c := <-l.ready:
				_ = l.take(c).Close()
			default:
				return
			}
		}
	})
	return l.closeErr
}

// Addr returns the listening address.
func (l *Listener) Addr() net.Addr { return l.vl.Addr() }

var _ net.Listener = (*Listener)(nil)
