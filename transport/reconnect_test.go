package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Tests of the requester's reconnection (Config.Reconnect): a connection
// that dies is re-established with a fresh RFC 8797 exchange, and the calls
// it carried are retransmitted with their XIDs or failed. Shared helpers of
// the reconnect, credit and fault tests live here; they all start with rc.

// rcGuard bounds every wait of these tests. It guards against hangs and is
// never a timing assertion: each wait ends on a condition long before.
const rcGuard = 20 * time.Second

// procHold is a procedure of the test program with procEcho's argument and
// result that the rcServer may leave unanswered, to keep a call in flight
// while its connection dies.
const procHold = 7

// rcBinding is testBinding with procHold sized as procEcho.
type rcBinding struct{ testBinding }

func (b rcBinding) Call(h *xdr.CallHeader, msg []byte, args int) CallInfo {
	if h.Proc == procHold {
		e := *h
		e.Proc = procEcho
		return b.testBinding.Call(&e, msg, args)
	}
	return b.testBinding.Call(h, msg, args)
}

// rcPolicy is a reconnection policy with short waits and attempts enough to
// outlast any test.
func rcPolicy(retransmit bool) ReconnectPolicy {
	return ReconnectPolicy{Enabled: true, Retransmit: retransmit,
		Backoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, MaxAttempts: 1000}
}

// rcRunning reports whether a goroutine is running fn (e.g.
// "(*requester).reconnect").
func rcRunning(fn string) bool {
	for _, g := range hpGoroutines() {
		if strings.Contains(g, fn+"(") {
			return true
		}
	}
	return false
}

// rcReconnecting reports whether a reconnection goroutine exists (started
// or not yet scheduled).
func rcReconnecting() bool {
	return rcRunning("(*requester).reconnect") || rcRunning("(*requester).lostLocked.func1")
}

// rcNoLeaks fails t if a goroutine started during the test outlives it. It
// runs after every cleanup registered later (connections, listeners), and
// polls because the poll loops and the software provider's goroutines end
// asynchronously after a dead connection is torn down.
func rcNoLeaks(t *testing.T) {
	before := hpGoroutines()
	t.Cleanup(func() { checkLeaks(t, before, rcGuard) })
}

// rcEventually waits until cond holds.
func rcEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(rcGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// rcRecvGuard receives from ch, failing t if nothing comes.
func rcRecvGuard[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(rcGuard):
		t.Fatalf("gave up waiting for %s", what)
		panic("unreachable")
	}
}

func rcListen(t *testing.T, addr string, cfg *Config) *Listener {
	t.Helper()
	l, err := Listen(addr, softConfig(cfg))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// rcAccept accepts one connection on l in the background: the channel
// gets it, or is closed if the accept fails.
func rcAccept(l *Listener) <-chan *Conn { return acceptInBackground(l.AcceptRDMA) }

// acceptInBackground calls accept once in a goroutine: the channel gets
// what it returns, or is closed if it fails.
func acceptInBackground[T any](accept func() (T, error)) <-chan T {
	accepted := make(chan T, 1)
	go func() {
		c, err := accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	return accepted
}

func rcDial(t *testing.T, addr string, cfg *Config) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
	defer cancel()
	c, err := Dial(ctx, addr, softConfig(cfg))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rcHeld is a procHold call the rcServer left unanswered.
type rcHeld struct {
	conn int // the connection's number, from 1 in accept order
	xid  uint32
}

// rcServer serves the test program (NULL, procEcho, procHold) on every
// connection its listeners accept, counts how many times each XID arrived
// (across connections: a retransmission counts again) and leaves a procHold
// call unanswered when hold says so.
type rcServer struct {
	hold func(conn, seen int) bool
	held chan rcHeld
	wg   sync.WaitGroup

	mu      sync.Mutex
	seen    map[uint32]int
	conns   []*Conn
	ends    []chan error      // why each connection's serving ended
	pending map[uint32][]byte // the arguments of each held call
}

func newRCServer(t *testing.T, hold func(conn, seen int) bool) *rcServer {
	s := &rcServer{hold: hold, held: make(chan rcHeld, 1024), seen: map[uint32]int{}, pending: map[uint32][]byte{}}
	// Registered before any listener: runs after they are closed.
	t.Cleanup(func() {
		s.mu.Lock()
		conns := slices.Clone(s.conns)
		s.mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
		s.wg.Wait()
	})
	return s
}

// serve accepts connections from l until it is closed.
func (s *rcServer) serve(l *Listener) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.AcceptRDMA()
			if err != nil {
				return
			}
			end := make(chan error, 1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.ends = append(s.ends, end)
			n := len(s.conns)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				err := s.serveConn(c, n)
				_ = c.Close() // a test that went wrong fails instead of hanging
				end <- err
			}()
		}
	}()
}

func (s *rcServer) serveConn(c *Conn, n int) error {
	echo := echoOpaque(procHold)
	return serveCalls(c, nil, nil, func(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
		s.mu.Lock()
		s.seen[h.XID]++
		seen := s.seen[h.XID]
		s.mu.Unlock()
		if h.Proc == procHold && s.hold != nil && s.hold(n, seen) {
			s.mu.Lock()
			s.pending[h.XID] = slices.Clone(args)
			s.mu.Unlock()
			s.held <- rcHeld{conn: n, xid: h.XID}
			return out, false, nil
		}
		return echo(h, args, out)
	})
}

// answer answers the held call h (on its connection), echoing its argument.
func (s *rcServer) answer(t *testing.T, h rcHeld) {
	t.Helper()
	s.mu.Lock()
	args := s.pending[h.xid]
	s.mu.Unlock()
	r := xdr.NewReader(args)
	p, err := r.Opaque(testMaxReply)
	require.NoError(t, err)
	require.NoError(t, s.conn(t, h.conn).WriteMsg(xdr.AppendOpaque(appendReply(nil, h.xid), p)))
}

// conn returns the n-th accepted connection, waiting for it.
func (s *rcServer) conn(t *testing.T, n int) *Conn {
	t.Helper()
	var c *Conn
	rcEventually(t, "connection "+strconv.Itoa(n), func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.conns) >= n {
			c = s.conns[n-1]
		}
		return c != nil
	})
	return c
}

// end waits until the n-th connection's serving ends and returns why.
func (s *rcServer) end(t *testing.T, n int) error {
	t.Helper()
	s.conn(t, n)
	s.mu.Lock()
	ch := s.ends[n-1]
	s.mu.Unlock()
	return rcRecvGuard(t, "the end of connection "+strconv.Itoa(n), ch)
}

func (s *rcServer) waitHeld(t *testing.T) rcHeld {
	t.Helper()
	return rcRecvGuard(t, "a held call", s.held)
}

func (s *rcServer) seenCount(xid uint32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[xid]
}

func (s *rcServer) seenTotal() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range s.seen {
		n += k
	}
	return n
}

// rcSend writes one call of proc with the given encoded arguments.
func rcSend(t *testing.T, c *Conn, xid, proc uint32, args []byte) {
	t.Helper()
	require.NoError(t, c.WriteMsg(append(appendCall(nil, xid, proc), args...)))
}

// rcRecv reads the next message, a reply, and returns its header and results.
func rcRecv(t *testing.T, c *Conn) (xdr.ReplyHeader, []byte) {
	t.Helper()
	return rcRecvErr(t, c, nil)
}

// rcRecvErr is rcRecv for a reply ReadMsg returns with an error matching
// target (nil: no error).
func rcRecvErr(t *testing.T, c *Conn, target error) (xdr.ReplyHeader, []byte) {
	t.Helper()
	// A guard against hangs, not a timing assertion.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(rcGuard)))
	reply, err := c.ReadMsg(nil)
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	if target == nil {
		require.NoError(t, err)
	} else {
		require.ErrorIs(t, err, target)
	}
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	require.NoError(t, err)
	return rh, reply[off:]
}

// rcEcho makes one procEcho call of data and checks the reply.
func rcEcho(t *testing.T, c *Conn, xid uint32, data []byte) {
	t.Helper()
	rcSend(t, c, xid, procEcho, xdr.AppendOpaque(nil, data))
	rh, res := rcRecv(t, c)
	require.Equal(t, xid, rh.XID)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	require.Equal(t, xdr.AppendOpaque(nil, data), res, "echo of %d bytes", len(data))
}

// rcSent waits until the Send of the call xid has completed: the responder
// holds it, and a link that breaks now fails no Send of ours.
func rcSent(t *testing.T, c *Conn, xid uint32) {
	t.Helper()
	rcEventually(t, "the Send of the call", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		slot, ok := c.reqState.byXID[xid]
		return ok && !c.reqState.calls[slot].sending
	})
}

// rcCheckIdle checks that a requester with no call outstanding has every
// slot and credit back: nothing leaked through the paths a test took.
func rcCheckIdle(t *testing.T, c *Conn) {
	t.Helper()
	var state string
	idle := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		s := &c.reqState
		busy := 0
		for i := range s.calls {
			if !s.calls[i].free || s.calls[i].busy || s.calls[i].sending || s.calls[i].invPending > 0 || s.calls[i].queued {
				busy++
			}
		}
		onList := map[int]bool{}
		for _, i := range s.free {
			onList[i] = true
		}
		state = "free " + strconv.Itoa(len(s.free)) + "/" + strconv.Itoa(len(s.calls)) +
			", distinct " + strconv.Itoa(len(onList)) + ", busy " + strconv.Itoa(busy) +
			", by xid " + strconv.Itoa(len(s.byXID)) + ", in flight " + strconv.Itoa(int(s.credits.InFlight())) +
			", resend " + strconv.Itoa(s.resend.size) + ", read queue " + strconv.Itoa(c.readQ.size)
		return len(s.free) == len(s.calls) && len(onList) == len(s.calls) && busy == 0 &&
			len(s.byXID) == 0 && s.credits.InFlight() == 0 && s.resend.size == 0 && c.readQ.size == 0
	}
	deadline := time.Now().Add(rcGuard)
	for !idle() {
		if time.Now().After(deadline) {
			t.Fatalf("requester not idle: %s", state)
		}
		time.Sleep(time.Millisecond)
	}
}

// rcCheckResponderIdle checks that a responder with no call outstanding has
// every slot, Receive, Send buffer and credit back.
func rcCheckResponderIdle(t *testing.T, c *Conn) {
	t.Helper()
	var state string
	idle := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		s := &c.svcState
		ep := c.ep
		if ep == nil {
			state = "connection gone"
			return false
		}
		notFree := 0
		for i := range s.calls {
			if s.calls[i].state != svcFree {
				notFree++
			}
		}
		nRecv := int(c.cfg.GrantPolicy.Max)
		state = "free " + strconv.Itoa(len(s.free)) + "/" + strconv.Itoa(len(s.calls)) + ", not free " + strconv.Itoa(notFree) +
			", by xid " + strconv.Itoa(len(s.byXID)) + ", backlog " + strconv.Itoa(int(s.credits.Backlog())) +
			", posted " + strconv.Itoa(int(s.credits.Posted())) + "/" + strconv.Itoa(nRecv) +
			", receive buffers not posted " + strconv.Itoa(len(ep.recvFree)) +
			", send buffers free " + strconv.Itoa(len(ep.sendFree)) + ", read queue " + strconv.Itoa(c.readQ.size)
		return len(s.free) == len(s.calls) && notFree == 0 && len(s.byXID) == 0 && s.credits.Backlog() == 0 &&
			int(s.credits.Posted()) == nRecv && len(ep.recvFree) == 0 && len(ep.sendFree) == nRecv && c.readQ.size == 0
	}
	deadline := time.Now().Add(rcGuard)
	for !idle() {
		if time.Now().After(deadline) {
			t.Fatalf("responder not idle: %s", state)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReconnectSettingsChange: the responder offers 4096, then 1024, then no
// private data at all; the requester reconnects each time with a fresh RFC
// 8797 exchange, takes the new settings (a call that was inline becomes a
// Long Call) and retransmits the call in flight at each loss with its XID.
// The first loss is the responder closing, the second a broken link.
func TestReconnectSettingsChange(t *testing.T) {
	rcNoLeaks(t)
	faults := &soft.Faults{}
	prov := &soft.Provider{Faults: faults}
	srv := newRCServer(t, func(conn, seen int) bool { return seen == 1 })
	l1 := rcListen(t, "127.0.0.1:0", &Config{Provider: prov}) // 4096 both ways
	addr := l1.Addr().String()
	srv.serve(l1)
	c := rcDial(t, addr, &Config{Binding: rcBinding{}, Reconnect: rcPolicy(true)})

	// 3000 bytes go inline with 4096-byte thresholds, as a Long Call with
	// a Reply chunk with 1024-byte ones.
	mid := pattern(3000, 1)

	// Connection 1: 4096 both ways.
	rcEcho(t, c, 1, mid)
	s := c.Stats()
	assert.Equal(t, "found", s.Negotiated.PeerPrivateData)
	assert.Equal(t, 4096, s.Negotiated.SendInline)
	assert.Equal(t, 4096, s.Negotiated.RecvInline)
	assert.True(t, s.Negotiated.PeerR)
	assert.True(t, s.Negotiated.ExpectRemoteInvalidate)
	assert.Zero(t, s.LongCalls)
	assert.Zero(t, s.Reconnects)
	assert.True(t, srv.conn(t, 1).Stats().Negotiated.SendWithInvalidate)

	// A call in flight when the responder closes the connection; the next
	// listener on the address offers 1024 both ways.
	rcSend(t, c, 2, procHold, xdr.AppendOpaque(nil, pattern(3000, 2)))
	require.Equal(t, rcHeld{conn: 1, xid: 2}, srv.waitHeld(t))
	require.NoError(t, l1.Close())
	l2 := rcListen(t, addr, &Config{Provider: prov, InlineSend: 1024, InlineRecv: 1024})
	srv.serve(l2)
	require.NoError(t, srv.conn(t, 1).Close())

	// A call written during the reconnection waits for it and goes after
	// the retransmission.
	rcSend(t, c, 3, procEcho, xdr.AppendOpaque(nil, []byte("after")))
	got := map[uint32][]byte{}
	for range 2 {
		rh, res := rcRecv(t, c)
		require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat, "xid %d", rh.XID)
		got[rh.XID] = res
	}
	assert.Equal(t, map[uint32][]byte{2: xdr.AppendOpaque(nil, pattern(3000, 2)), 3: xdr.AppendOpaque(nil, []byte("after"))}, got)
	assert.Equal(t, 2, srv.seenCount(2), "the responder sees the call again, with its XID")
	assert.Equal(t, 1, srv.seenCount(3))

	// Connection 2: 1024 both ways.
	s = c.Stats()
	assert.Equal(t, uint64(1), s.Reconnects)
	assert.Equal(t, "found", s.Negotiated.PeerPrivateData)
	assert.Equal(t, 1024, s.Negotiated.SendInline)
	assert.Equal(t, 1024, s.Negotiated.RecvInline)
	assert.Equal(t, uint64(1), s.LongCalls, "the retransmission is planned for the new thresholds")
	rcEcho(t, c, 4, mid)
	s2 := c.Stats()
	assert.Equal(t, uint64(2), s2.LongCalls)
	assert.Greater(t, s2.ReplyChunks, s.ReplyChunks)

	// Connection 3: the listener sends no private data (RFC 8797 §5.1:
	// 1024 both ways, no remote invalidation); the link breaks this time.
	rcSend(t, c, 5, procHold, xdr.AppendOpaque(nil, pattern(3000, 5)))
	require.Equal(t, rcHeld{conn: 2, xid: 5}, srv.waitHeld(t))
	require.NoError(t, l2.Close())
	srv.serve(rcListen(t, addr, &Config{Provider: prov, NoPrivateData: true}))
	faults.Drop()
	rh, res := rcRecv(t, c)
	require.Equal(t, uint32(5), rh.XID)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	require.Equal(t, xdr.AppendOpaque(nil, pattern(3000, 5)), res)
	assert.Equal(t, 2, srv.seenCount(5))
	s = c.Stats()
	assert.Equal(t, uint64(2), s.Reconnects)
	assert.Equal(t, "empty", s.Negotiated.PeerPrivateData)
	assert.Equal(t, 1024, s.Negotiated.SendInline)
	assert.Equal(t, 1024, s.Negotiated.RecvInline)
	assert.True(t, s.Negotiated.LocalR)
	assert.False(t, s.Negotiated.PeerR)
	// The responder, whose R is off, must not use Send With Invalidate
	// (RFC 8797 §4.1): the requester invalidates its chunk memory itself.
	assert.False(t, srv.conn(t, 3).Stats().Negotiated.SendWithInvalidate)
	rcEcho(t, c, 6, mid)
	rcEcho(t, c, 7, pattern(70000, 7))
	s2 = c.Stats()
	assert.Equal(t, uint64(2), s2.Reconnects)
	assert.Equal(t, s.RemoteInvalidations, s2.RemoteInvalidations)
	assert.Equal(t, s.LocalInvalidations+2, s2.LocalInvalidations)
	rcCheckIdle(t, c)
}

// TestReconnectRetransmitsLostReply: the responder's reply is lost with the
// link (its Send never arrives); the requester reconnects and retransmits
// the call with its XID, which the responder executes a second time, as
// over TCP (a duplicate request cache is the upper layer's business).
func TestReconnectRetransmitsLostReply(t *testing.T) {
	rcNoLeaks(t)
	faults := &soft.Faults{}
	srv := newRCServer(t, nil)
	l := rcListen(t, "127.0.0.1:0", &Config{Provider: &soft.Provider{Faults: faults}})
	srv.serve(l)
	c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}, Reconnect: rcPolicy(true)})

	rcEcho(t, c, 1, []byte("one"))
	faults.DropAtSend(1) // the responder's next Send: the reply to call 2
	rcEcho(t, c, 2, []byte("two"))
	assert.Equal(t, 2, srv.seenCount(2))
	assert.Equal(t, uint64(1), c.Stats().Reconnects)
	// The responder's Send failed as a real RC requester's would.
	assert.ErrorIs(t, srv.end(t, 1), verbs.ErrRetryExceeded)
	rcEcho(t, c, 3, []byte("three"))
	rcCheckIdle(t, c)
}

// TestReconnectFailsCallsWithoutRetransmit: without Retransmit, a call in
// flight when the connection dies fails with a synthesized SYSTEM_ERR reply
// for its XID; the responder never sees it again, and later calls go over
// the new connection.
func TestReconnectFailsCallsWithoutRetransmit(t *testing.T) {
	rcNoLeaks(t)
	srv := newRCServer(t, func(conn, seen int) bool { return true })
	l := rcListen(t, "127.0.0.1:0", nil)
	srv.serve(l)
	c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}, Reconnect: rcPolicy(false)})

	rcSend(t, c, 1, procHold, xdr.AppendOpaque(nil, []byte("held")))
	srv.waitHeld(t)
	require.NoError(t, srv.conn(t, 1).Close())
	rh, res := rcRecvErr(t, c, ErrCallLost) // outcome unknown: not retransmitted
	assert.Equal(t, uint32(1), rh.XID)
	assert.Equal(t, xdr.MsgAccepted, rh.Stat)
	assert.Equal(t, xdr.AcceptSystemErr, rh.AcceptStat)
	assert.Empty(t, res)

	rcEcho(t, c, 2, []byte("next"))
	assert.Equal(t, 1, srv.seenCount(1), "a failed call is not retransmitted")
	assert.Equal(t, uint64(1), c.Stats().Reconnects)
	assert.NotNil(t, srv.conn(t, 2))
	rcCheckIdle(t, c)
}

// TestReconnectDisabled: without Reconnect, a requester whose connection
// dies drains what it received, then reads io.EOF when the peer went away
// (disconnect, broken link) and an error naming the cause when one of its
// own work requests failed; writes fail; no reconnection is attempted.
func TestReconnectDisabled(t *testing.T) {
	cases := []struct {
		name string
		// kill ends the connection while the call xid 1 is in flight.
		kill    func(t *testing.T, srv *rcServer, sf, cf *soft.Faults)
		wantErr error // what reads return
	}{
		{"responder-closes", func(t *testing.T, srv *rcServer, sf, cf *soft.Faults) {
			require.NoError(t, srv.conn(t, 1).Close())
		}, io.EOF},
		{"link-breaks", func(t *testing.T, srv *rcServer, sf, cf *soft.Faults) {
			sf.Drop()
		}, io.EOF},
		{"call-send-lost", func(t *testing.T, srv *rcServer, sf, cf *soft.Faults) {
			cf.DropAtSend(1)
		}, verbs.ErrRetryExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rcNoLeaks(t)
			sf, cf := &soft.Faults{}, &soft.Faults{}
			srv := newRCServer(t, func(conn, seen int) bool { return true })
			l := rcListen(t, "127.0.0.1:0", &Config{Provider: &soft.Provider{Faults: sf}})
			srv.serve(l)
			c := rcDial(t, l.Addr().String(), &Config{Provider: &soft.Provider{Faults: cf}, Binding: rcBinding{}})
			rcEcho(t, c, 0, []byte("warm"))

			if tc.wantErr == io.EOF {
				rcSend(t, c, 1, procHold, nil)
				srv.waitHeld(t)
				rcSent(t, c, 1)
				tc.kill(t, srv, sf, cf)
			} else {
				tc.kill(t, srv, sf, cf)
				rcSend(t, c, 1, procHold, nil)
			}
			_, err := c.ReadMsg(nil)
			if tc.wantErr == io.EOF {
				require.Equal(t, io.EOF, err)
			} else {
				require.ErrorIs(t, err, tc.wantErr)
				require.NotErrorIs(t, err, io.EOF)
				var oe *net.OpError
				require.ErrorAs(t, err, &oe)
				assert.Equal(t, "read", oe.Op)
			}
			_, rerr := c.Read(make([]byte, 16))
			assert.Equal(t, err, rerr, "Read and ReadMsg agree")
			werr := c.WriteMsg(appendCall(nil, 2, 0))
			require.Error(t, werr)
			assert.NotErrorIs(t, werr, net.ErrClosed)
			assert.False(t, rcReconnecting(), "no reconnection")
			s := c.Stats()
			assert.Zero(t, s.Reconnects)
			assert.Equal(t, 4096, s.Negotiated.SendInline, "the last connection's settings")
		})
	}
}

// TestReconnectTwoLosses: the connection dies again while calls still wait
// for their retransmission (after a reconnection the credit limit is back
// to 1, so one call goes first); every call is retransmitted once per new
// connection and answered once.
func TestReconnectTwoLosses(t *testing.T) {
	rcNoLeaks(t)
	// Connections 1 and 2 hold every call; connection 3 answers.
	srv := newRCServer(t, func(conn, seen int) bool { return conn <= 2 })
	l := rcListen(t, "127.0.0.1:0", nil)
	srv.serve(l)
	c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}, Credits: 4, Reconnect: rcPolicy(true)})
	rcEcho(t, c, 100, nil) // the first grant: two calls may be in flight

	rcSend(t, c, 1, procHold, xdr.AppendOpaque(nil, []byte("one")))
	rcSend(t, c, 2, procHold, xdr.AppendOpaque(nil, []byte("two")))
	srv.waitHeld(t)
	srv.waitHeld(t)
	require.NoError(t, srv.conn(t, 1).Close())
	first := srv.waitHeld(t) // one retransmission on connection 2 (limit 1)
	require.Equal(t, 2, first.conn)
	require.NoError(t, srv.conn(t, 2).Close())

	got := map[uint32][]byte{}
	for range 2 {
		rh, res := rcRecv(t, c)
		require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
		got[rh.XID] = res
	}
	assert.Equal(t, map[uint32][]byte{1: xdr.AppendOpaque(nil, []byte("one")), 2: xdr.AppendOpaque(nil, []byte("two"))}, got)
	other := uint32(3) - first.xid
	assert.Equal(t, 3, srv.seenCount(first.xid))
	assert.Equal(t, 2, srv.seenCount(other))
	assert.Equal(t, 1+3+2, srv.seenTotal(), "no call sent twice on one connection")
	s := c.Stats()
	assert.Zero(t, s.BadXIDs)
	assert.Equal(t, uint64(2), s.Reconnects)
	rcEcho(t, c, 3, []byte("three"))
	rcCheckIdle(t, c)
}

// TestReconnectMaxAttempts: when every attempt fails (the listener rejects
// each connection request), the Conn fails after MaxAttempts with an error
// that says so and wraps the last attempt's; the call in flight and later
// writes fail with it.
func TestReconnectMaxAttempts(t *testing.T) {
	rcNoLeaks(t)
	sf := &soft.Faults{}
	srv := newRCServer(t, func(conn, seen int) bool { return true })
	l := rcListen(t, "127.0.0.1:0", &Config{Provider: &soft.Provider{Faults: sf}})
	srv.serve(l)
	c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}, Reconnect: ReconnectPolicy{
		Enabled: true, Retransmit: true, Backoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxAttempts: 3}})

	rcSend(t, c, 1, procHold, nil)
	srv.waitHeld(t)
	// Every accept's Setup fails to post its Receives: the request is
	// rejected.
	sf.FailPostRecv(1<<30, nil)
	t.Cleanup(func() { sf.FailPostRecv(0, nil) })
	require.NoError(t, srv.conn(t, 1).Close())

	_, err := c.ReadMsg(nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, verbs.ErrRejected)
	assert.NotErrorIs(t, err, io.EOF)
	assert.Contains(t, err.Error(), "reconnect failed after 3 attempts")
	werr := c.WriteMsg(appendCall(nil, 2, 0))
	assert.ErrorIs(t, werr, verbs.ErrRejected)
	assert.Zero(t, c.Stats().Reconnects)
	rcEventually(t, "the reconnection to stop", func() bool { return !rcReconnecting() })
	srv.mu.Lock()
	assert.Len(t, srv.conns, 1)
	srv.mu.Unlock()
}

// TestReconnectCloseDuringBackoff: Close stops a reconnection waiting out
// its backoff and returns once it has ended; a writer blocked on the
// reconnection fails with net.ErrClosed.
func TestReconnectCloseDuringBackoff(t *testing.T) {
	rcNoLeaks(t)
	srv := newRCServer(t, func(conn, seen int) bool { return true })
	l := rcListen(t, "127.0.0.1:0", nil)
	srv.serve(l)
	c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}, Reconnect: ReconnectPolicy{
		Enabled: true, Backoff: time.Hour, MaxBackoff: time.Hour}})

	rcSend(t, c, 1, procHold, nil)
	srv.waitHeld(t)
	require.NoError(t, srv.conn(t, 1).Close())
	rh, _ := rcRecvErr(t, c, ErrCallLost) // the call failed: the reconnection has begun
	require.Equal(t, xdr.AcceptSystemErr, rh.AcceptStat)
	require.True(t, rcReconnecting())

	werr := make(chan error, 1)
	go func() { werr <- c.WriteMsg(appendCall(nil, 2, 0)) }()
	rcEventually(t, "the writer to wait", func() bool { return rcRunning("(*Conn).waitWriteOr") })
	require.NoError(t, c.Close())
	rcEventually(t, "the reconnection to stop", func() bool { return !rcReconnecting() })
	assert.ErrorIs(t, rcRecvGuard(t, "the writer", werr), net.ErrClosed)
	_, err := c.ReadMsg(nil)
	assert.ErrorIs(t, err, net.ErrClosed)
	assert.Zero(t, c.Stats().Reconnects)
}

// TestReconnectCloseDuringDial: Close cancels a reconnection attempt whose
// connect request is unanswered (the address now belongs to a plain TCP
// listener that never answers): the attempt's connection is closed by the
// time Close returns.
func TestReconnectCloseDuringDial(t *testing.T) {
	rcNoLeaks(t)
	srv := newRCServer(t, nil)
	l := rcListen(t, "127.0.0.1:0", nil)
	addr := l.Addr().String()
	srv.serve(l)
	c := rcDial(t, addr, &Config{Binding: rcBinding{}, Reconnect: rcPolicy(true)})
	rcEcho(t, c, 1, nil)

	require.NoError(t, l.Close())
	raw, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close() })
	accepted := acceptInBackground(raw.Accept)
	require.NoError(t, srv.conn(t, 1).Close())
	nc := rcRecvGuard(t, "the reconnection's TCP connection", accepted)
	require.NotNil(t, nc)
	defer nc.Close()
	require.True(t, rcReconnecting())

	require.NoError(t, c.Close())
	rcEventually(t, "the reconnection to stop", func() bool { return !rcReconnecting() })
	// The dialer closed its connection (after its connect request, or
	// before it could send it): EOF, not the guard's deadline.
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(rcGuard)))
	_, err = io.ReadAll(nc)
	assert.NoError(t, err)
	assert.Zero(t, c.Stats().Reconnects)
}

// TestReconnectCloseAfterDial: a Close that lands after an attempt's
// connection was made but before it was installed closes that connection
// (which was never started) instead of installing it.
func TestReconnectCloseAfterDial(t *testing.T) {
	rcNoLeaks(t)
	srv := newRCServer(t, nil)
	l := rcListen(t, "127.0.0.1:0", nil)
	srv.serve(l)
	c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}, Reconnect: rcPolicy(true)})
	rcEcho(t, c, 1, nil)

	closed := make(chan struct{})
	c.mu.Lock()
	dial := c.dial
	c.dial = func() (*endpoint, error) {
		ep, err := dial()
		go func() {
			_ = c.Close()
			close(closed)
		}()
		for {
			c.mu.Lock()
			done := c.closed
			c.mu.Unlock()
			if done {
				return ep, err
			}
			time.Sleep(time.Millisecond)
		}
	}
	c.mu.Unlock()
	require.NoError(t, srv.conn(t, 1).Close())
	rcRecvGuard(t, "Close", closed)
	// The responder accepted the attempt's connection, then saw it go.
	assert.Equal(t, io.EOF, srv.end(t, 2))
	assert.Zero(t, c.Stats().Reconnects)
	_, err := c.ReadMsg(nil)
	assert.ErrorIs(t, err, net.ErrClosed)
}

// TestReconnectConcurrentLoad: many calls in flight from several writers
// while the link breaks three times; with Retransmit every call is answered
// exactly once and nothing leaks.
func TestReconnectConcurrentLoad(t *testing.T) {
	rcNoLeaks(t)
	sf := &soft.Faults{}
	srv := newRCServer(t, nil)
	l := rcListen(t, "127.0.0.1:0", &Config{Provider: &soft.Provider{Faults: sf}, Credits: 8})
	srv.serve(l)
	c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}, Credits: 16, Reconnect: rcPolicy(true)})

	const writers, perWriter = 8, 150
	replies := make(chan error, 1)
	go func() {
		seen := map[uint32]bool{}
		for len(seen) < writers*perWriter {
			reply, err := c.ReadMsg(nil)
			if err != nil {
				replies <- err
				return
			}
			var rh xdr.ReplyHeader
			if _, err := rh.Unmarshal(reply); err != nil || rh.AcceptStat != xdr.AcceptSuccess || seen[rh.XID] {
				replies <- errors.New("bad or duplicate reply " + strconv.Itoa(int(rh.XID)))
				return
			}
			seen[rh.XID] = true
		}
		replies <- nil
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				xid := uint32(1 + w*perWriter + i)
				msg := append(appendCall(nil, xid, procEcho), xdr.AppendOpaque(nil, pattern(int(xid)%2000, byte(xid)))...)
				if err := c.WriteMsg(msg); err != nil {
					t.Errorf("WriteMsg %d: %v", xid, err)
					return
				}
				if i%50 == 25 && w == 0 {
					sf.Drop()
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, rcRecvGuard(t, "the replies", replies))
	assert.Equal(t, uint64(3), c.Stats().Reconnects)
	assert.GreaterOrEqual(t, srv.seenTotal(), writers*perWriter)
	rcCheckIdle(t, c)
}

// rcAllocPair is a requester with retransmission on, connected to an
// allocation-free responder (benchServe), for the allocation checks.
func rcAllocPair(tb testing.TB) *Conn {
	l, err := Listen("127.0.0.1:0", &Config{Provider: &soft.Provider{}})
	require.NoError(tb, err)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if c, err := l.AcceptRDMA(); err == nil {
			benchServe(c)
			_ = c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
	defer cancel()
	c, err := Dial(ctx, l.Addr().String(), &Config{Provider: &soft.Provider{}, Binding: testBinding{ddp: true}, Reconnect: rcPolicy(true)})
	require.NoError(tb, err)
	tb.Cleanup(func() {
		_ = c.Close()
		_ = l.Close()
		<-served
	})
	return c
}

// rcAllocCall returns a function making one call of proc with n bytes.
func rcAllocCall(tb testing.TB, c *Conn, proc uint32, n int) func() {
	msg := appendCall(nil, 1, proc)
	switch proc {
	case procRead:
		msg = xdr.AppendUint32(msg, uint32(n))
	case procWrite, procEcho:
		msg = xdr.AppendOpaque(msg, pattern(n, 1))
	}
	reply := make([]byte, 0, 2<<20)
	xid := uint32(0)
	return func() {
		xid++
		msg[0], msg[1], msg[2], msg[3] = byte(xid>>24), byte(xid>>16), byte(xid>>8), byte(xid)
		if err := c.WriteMsg(msg); err != nil {
			tb.Fatal(err)
		}
		var err error
		if reply, err = c.ReadMsg(reply); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestReconnectRetransmitNoAllocs: keeping every call for retransmission
// costs no allocation per call in steady state (each slot reuses its copy).
func TestReconnectRetransmitNoAllocs(t *testing.T) {
	c := rcAllocPair(t)
	for _, tc := range []struct {
		proc uint32
		n    int
	}{{0, 0}, {procEcho, 1024}, {procWrite, 64 << 10}, {procEcho, 64 << 10}} {
		call := rcAllocCall(t, c, tc.proc, tc.n)
		for range 200 { // warm up: grow every buffer of every slot used
			call()
		}
		if allocs := testing.AllocsPerRun(200, call); allocs != 0 {
			t.Errorf("proc %d, %d bytes: %v allocations per call", tc.proc, tc.n, allocs)
		}
	}
}

// BenchmarkCallRetransmit is BenchmarkCall's steady-state call path with
// Reconnect.Retransmit on (every call copied for retransmission).
func BenchmarkCallRetransmit(b *testing.B) {
	for _, tc := range []struct {
		name string
		proc uint32
		n    int
	}{
		{"null-inline", 0, 0},
		{"write-64KiB-readchunk", procWrite, 64 << 10},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := rcAllocPair(b)
			call := rcAllocCall(b, c, tc.proc, tc.n)
			for range 100 {
				call()
			}
			b.SetBytes(int64(tc.n))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				call()
			}
		})
	}
}
