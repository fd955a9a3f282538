package transport

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Tests of RPC-over-RDMA credit flow control (RFC 8166 §3.3) under load:
// the requester never has more calls outstanding than the responder
// granted, measured where it matters, at the responder.

// crServer is a responder whose calls are answered by a separate goroutine,
// so that nothing in the test serialises calls: if the requester sent more
// than it was granted, the responder would hold more than the grant.
type crServer struct {
	c *Conn
	// outstanding counts calls read and not yet answered; max is its
	// largest value. A call counts as answered just before its reply is
	// posted: the requester may send the next call as soon as the reply
	// arrives, possibly before WriteMsg has returned.
	outstanding, max atomic.Int64
	// backlogMax is the largest backlog the responder's credit state
	// showed (calls received and not answered), and grantMax the largest
	// grant it sent; grantBelowBacklog says a grant was smaller than the
	// calls then outstanding (a shrink that cancels nothing).
	backlogMax, grantMax atomic.Int64
	grantBelowBacklog    atomic.Bool
	errs                 chan error
}

// checkCredits records the responder's credit state.
func (s *crServer) checkCredits() {
	s.c.mu.Lock()
	st := &s.c.svcState
	backlog := int64(st.credits.Backlog())
	grant := int64(st.lastGrant)
	s.c.mu.Unlock()
	crMax(&s.backlogMax, backlog)
	crMax(&s.grantMax, grant)
	if grant > 0 && grant < backlog {
		s.grantBelowBacklog.Store(true)
	}
}

func crMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// crStart listens with scfg, dials with ccfg and serves the connection:
// one goroutine reads calls as they come, another answers them in order,
// first calling gate (if not nil) with the call's number (from 1), which
// may block to hold that call and every later one.
func crStart(t *testing.T, scfg, ccfg *Config, gate func(s *crServer, n int)) (*crServer, *Conn) {
	t.Helper()
	l := rcListen(t, "127.0.0.1:0", scfg)
	accepted := rcAccept(l)
	client := rcDial(t, l.Addr().String(), ccfg)
	sc := rcRecvGuard(t, "the accept", accepted)
	require.NotNil(t, sc)
	s := &crServer{c: sc, errs: make(chan error, 2)}
	calls := make(chan []byte, 1<<16)
	var wg sync.WaitGroup
	wg.Add(2)
	t.Cleanup(func() {
		_ = sc.Close()
		wg.Wait()
	})
	go func() { // reader
		defer wg.Done()
		defer close(calls)
		for {
			msg, err := sc.ReadMsg(nil)
			if err != nil {
				s.errs <- err
				return
			}
			crMax(&s.max, s.outstanding.Add(1))
			s.checkCredits()
			calls <- msg
		}
	}()
	go func() { // answerer
		defer wg.Done()
		var out []byte
		n := 0
		for msg := range calls {
			n++
			if gate != nil {
				gate(s, n)
			}
			var h xdr.CallHeader
			args, err := h.Unmarshal(msg)
			if err != nil {
				s.errs <- err
				return
			}
			out = appendReply(out[:0], h.XID)
			if h.Proc == procEcho {
				r := xdr.NewReader(msg[args:])
				p, _ := r.Opaque(testMaxReply)
				out = xdr.AppendOpaque(out, p)
			}
			s.outstanding.Add(-1)
			if err := sc.WriteMsg(out); err != nil {
				s.errs <- err
				return
			}
			s.checkCredits()
		}
	}()
	return s, client
}

// crWait polls cond until it holds or the guard passes (it runs on the
// server's goroutines, where the test cannot fail; the test then fails on
// what it observes).
func crWait(cond func() bool) {
	deadline := time.Now().Add(rcGuard)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// crLoad sends n calls (xids 1..n, NULL and small echoes) from writers
// goroutines and reads the replies on one goroutine, checking every reply
// and, after each, the requester's own credit state. It returns once every
// reply was read.
func crLoad(t *testing.T, c *Conn, n, writers int, limit uint32) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		seen := make([]bool, n+1)
		for range n {
			reply, err := c.ReadMsg(nil)
			if err != nil {
				done <- err
				return
			}
			var rh xdr.ReplyHeader
			off, err := rh.Unmarshal(reply)
			if err != nil {
				done <- err
				return
			}
			if rh.XID == 0 || int(rh.XID) > n || seen[rh.XID] || rh.AcceptStat != xdr.AcceptSuccess {
				t.Errorf("reply %+v: unexpected, duplicate or failed", rh)
				done <- nil
				return
			}
			seen[rh.XID] = true
			if rh.XID%10 == 0 {
				if want := xdr.AppendOpaque(nil, pattern(int(rh.XID%97), byte(rh.XID))); string(reply[off:]) != string(want) {
					t.Errorf("reply %d: wrong results", rh.XID)
				}
			}
			c.mu.Lock()
			inFlight, lim := c.reqState.credits.InFlight(), c.reqState.credits.Limit()
			c.mu.Unlock()
			if lim > limit {
				t.Errorf("requester credit limit %d above %d", lim, limit)
			}
			if got := c.Stats().Negotiated.Credits; got > limit {
				t.Errorf("Stats().Negotiated.Credits = %d, above %d", got, limit)
			}
			if inFlight > limit {
				t.Errorf("requester has %d calls in flight, above %d", inFlight, limit)
			}
		}
		done <- nil
	}()
	var next atomic.Uint32
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var msg []byte
			for {
				xid := next.Add(1)
				if int(xid) > n {
					return
				}
				if xid%10 == 0 {
					msg = append(appendCall(msg[:0], xid, procEcho), xdr.AppendOpaque(nil, pattern(int(xid%97), byte(xid)))...)
				} else {
					msg = appendCall(msg[:0], xid, 0)
				}
				if err := c.WriteMsg(msg); err != nil {
					t.Errorf("WriteMsg %d: %v", xid, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, rcRecvGuard(t, "the replies", done))
}

// TestCreditsGrantOfOne: 10 000 calls from 64 writers against a responder
// that grants a single credit. The responder never holds more than one
// call, its credit state never shows a backlog above one, every call is
// answered, and the requester saw its limit at 1 and stalled on it.
func TestCreditsGrantOfOne(t *testing.T) {
	rcNoLeaks(t)
	// The first call is answered once a second writer has stalled for want
	// of a credit, which makes the stall certain rather than likely.
	var c *Conn
	var ready sync.WaitGroup
	ready.Add(1)
	srv, c := crStart(t, &Config{Credits: 1}, &Config{Binding: testBinding{}}, func(s *crServer, n int) {
		if n == 1 {
			ready.Wait()
			crWait(func() bool { return c.Stats().CreditStalls > 0 })
		}
	})
	ready.Done()
	crLoad(t, c, 10000, 64, 1)

	assert.LessOrEqual(t, srv.max.Load(), int64(1), "calls outstanding at the responder")
	assert.Equal(t, int64(1), srv.max.Load())
	assert.Equal(t, int64(1), srv.backlogMax.Load(), "the responder's credit backlog")
	assert.Equal(t, int64(1), srv.grantMax.Load(), "the responder's grants")
	s := c.Stats()
	assert.Equal(t, uint32(1), s.Negotiated.Credits)
	assert.Positive(t, s.CreditStalls)
	assert.Equal(t, uint32(1), srv.c.Stats().Negotiated.Credits)
	assert.Zero(t, srv.c.Stats().Dropped)
	rcCheckIdle(t, c)
	rcCheckResponderIdle(t, srv.c)
}

// TestCreditsShrinkingGrant: a responder whose grant adapts to load
// (GrantPolicy HighWater/LowWater) shrinks it while the requester has more
// calls in flight than the new grant. Nothing is cancelled: every call is
// answered once and successfully, the responder never holds more than its
// largest grant, and the requester waits until it is back under the limit.
func TestCreditsShrinkingGrant(t *testing.T) {
	rcNoLeaks(t)
	const grant = 32
	// Call 2 waits until the requester has used the whole first grant, so
	// that the first reply after it sees a backlog of 32 (above HighWater)
	// and halves the grant with 31 calls still in flight.
	srv, c := crStart(t, &Config{Credits: grant, GrantPolicy: credits.Policy{HighWater: 4, LowWater: 2}},
		&Config{Binding: testBinding{}, Credits: 64}, func(s *crServer, n int) {
			if n == 2 {
				crWait(func() bool { return s.outstanding.Load() == grant })
			}
		})
	crLoad(t, c, 3000, 64, grant)

	assert.Equal(t, int64(grant), srv.max.Load(), "calls outstanding at the responder")
	assert.Equal(t, int64(grant), srv.backlogMax.Load())
	assert.Equal(t, int64(grant), srv.grantMax.Load())
	assert.True(t, srv.grantBelowBacklog.Load(), "a grant below the calls in flight")
	srv.c.mu.Lock()
	shrinks := srv.c.svcState.credits.Stats().Shrinks
	srv.c.mu.Unlock()
	assert.Positive(t, shrinks)
	assert.Zero(t, c.Stats().BadReplies)
	assert.Zero(t, srv.c.Stats().Dropped)
	rcCheckIdle(t, c)
	rcCheckResponderIdle(t, srv.c)
}

// TestCreditsRequesterAsksFewer: a requester that asks for 3 credits from a
// responder willing to grant 64 gets 3 (RFC 8166 §3.3.1: the grant never
// exceeds the request) and never has more outstanding.
func TestCreditsRequesterAsksFewer(t *testing.T) {
	rcNoLeaks(t)
	const asked = 3
	srv, c := crStart(t, nil, &Config{Binding: testBinding{}, Credits: asked}, func(s *crServer, n int) {
		if n == 2 {
			crWait(func() bool { return s.outstanding.Load() == asked })
		}
	})
	crLoad(t, c, 2000, 16, asked)

	assert.Equal(t, int64(asked), srv.max.Load(), "calls outstanding at the responder")
	assert.Equal(t, int64(asked), srv.grantMax.Load())
	assert.Equal(t, uint32(asked), c.Stats().Negotiated.Credits)
	assert.Equal(t, uint32(asked), srv.c.Stats().Negotiated.Credits)
	rcCheckIdle(t, c)
	rcCheckResponderIdle(t, srv.c)
}
