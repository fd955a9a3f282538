package transport

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Fault injection through soft.Faults: slow completions, lost Sends, lying
// Receive lengths and failing posts. Each case names its expected outcome:
// the affected call or connection fails with an error that says why (or
// recovers, when reconnection is on), nothing panics, hangs or leaks.

// errRCBoom is the error the fault tests inject into failing posts.
var errRCBoom = errors.New("injected post failure")

// rcFaultPair is a requester and a responder (an rcServer) on providers
// with their own Faults.
type rcFaultPair struct {
	srv    *rcServer
	l      *Listener
	c      *Conn
	sf, cf *soft.Faults
}

func newRCFaultPair(t *testing.T, scfg, ccfg Config) *rcFaultPair {
	t.Helper()
	p := &rcFaultPair{sf: &soft.Faults{}, cf: &soft.Faults{}}
	p.srv = newRCServer(t, nil)
	scfg.Provider = &soft.Provider{Faults: p.sf}
	p.l = rcListen(t, "127.0.0.1:0", &scfg)
	p.srv.serve(p.l)
	ccfg.Provider = &soft.Provider{Faults: p.cf}
	if ccfg.Binding == nil {
		ccfg.Binding = rcBinding{}
	}
	p.c = rcDial(t, p.l.Addr().String(), &ccfg)
	return p
}

// TestFaultDelayedCompletions: every completion on both sides is held back
// (a slow NIC); concurrent calls of every form still complete with the
// right data, and Close while completions are pending neither hangs nor
// leaks.
func TestFaultDelayedCompletions(t *testing.T) {
	rcNoLeaks(t)
	sf, cf := &soft.Faults{}, &soft.Faults{}
	sf.DelayCompletions(time.Millisecond)
	cf.DelayCompletions(time.Millisecond)
	p := newPair(t, &Config{Provider: &soft.Provider{Faults: sf}, Binding: testBinding{ddp: true}, Credits: 4},
		&Config{Provider: &soft.Provider{Faults: cf}, Binding: testBinding{ddp: true}, Credits: 8})

	type call struct {
		xid, proc uint32
		n         int
	}
	var calls []call
	for i := range 48 {
		xid := uint32(1 + i)
		switch i % 4 {
		case 0:
			calls = append(calls, call{xid, procEcho, 100}) // inline
		case 1:
			calls = append(calls, call{xid, procEcho, 6000}) // Long Call, Reply chunk
		case 2:
			calls = append(calls, call{xid, procWrite, 10000}) // Read chunk
		case 3:
			calls = append(calls, call{xid, procRead, 10000}) // Write chunk
		}
	}
	want := map[uint32][]byte{}
	for _, cl := range calls {
		switch cl.proc {
		case procEcho:
			want[cl.xid] = xdr.AppendOpaque(nil, pattern(cl.n, byte(cl.xid)))
		case procWrite:
			want[cl.xid] = xdr.AppendUint32(nil, uint32(cl.n))
		case procRead:
			want[cl.xid] = xdr.AppendOpaque(nil, pattern(cl.n, byte(cl.xid)))
		}
	}
	got := map[uint32][]byte{}
	done := make(chan error, 1)
	go func() {
		for range calls {
			reply, err := p.client.ReadMsg(nil)
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
			got[rh.XID] = reply[off:]
		}
		done <- nil
	}()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(calls); i += 4 {
				cl := calls[i]
				msg := appendCall(nil, cl.xid, cl.proc)
				switch cl.proc {
				case procEcho, procWrite:
					msg = xdr.AppendOpaque(msg, pattern(cl.n, byte(cl.xid)))
				case procRead:
					msg = xdr.AppendUint32(msg, uint32(cl.n))
				}
				if err := p.client.WriteMsg(msg); err != nil {
					t.Errorf("WriteMsg %d: %v", cl.xid, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, rcRecvGuard(t, "the replies", done))
	assert.Equal(t, want, got)
	rcCheckIdle(t, p.client)
	rcCheckResponderIdle(t, p.server)

	// A call whose completions are still held back when the Conn closes.
	require.NoError(t, p.client.WriteMsg(append(appendCall(nil, 100, procEcho), xdr.AppendOpaque(nil, []byte("x"))...)))
	require.NoError(t, p.client.Close())
	_, err := p.client.ReadMsg(nil)
	assert.ErrorIs(t, err, net.ErrClosed)
}

// TestFaultDropAtSend: the requester's own Send is lost with the link. With
// Retransmit the call goes again on the next connection and is answered
// (the responder sees it once: the lost Send never reached it). Without
// reconnection the Conn fails with the Send's error (see
// TestReconnectDisabled/call-send-lost).
func TestFaultDropAtSend(t *testing.T) {
	rcNoLeaks(t)
	p := newRCFaultPair(t, Config{}, Config{Reconnect: rcPolicy(true)})
	rcEcho(t, p.c, 1, []byte("one"))
	p.cf.DropAtSend(1)
	rcEcho(t, p.c, 2, pattern(5000, 2)) // a Long Call: Bind, then the lost Send
	assert.Equal(t, 1, p.srv.seenCount(2))
	assert.Equal(t, uint64(1), p.c.Stats().Reconnects)
	// The responder saw the link break: the peer went away.
	assert.Equal(t, io.EOF, p.srv.end(t, 1))
	rcEcho(t, p.c, 3, []byte("three"))
	rcCheckIdle(t, p.c)
}

// TestFaultCorruptRecvLength: a Receive completion that reports a wrong
// length (a NIC or peer bug).
func TestFaultCorruptRecvLength(t *testing.T) {
	// A reply cut inside its chunk lists still names its call: that call
	// fails with a synthesized SYSTEM_ERR reply (RFC 5531) and an error
	// wrapping ErrBadReply, the bad reply is counted, the Conn goes on.
	t.Run("reply-cut-in-chunk-lists", func(t *testing.T) {
		rcNoLeaks(t)
		p := newRCFaultPair(t, Config{}, Config{})
		rcEcho(t, p.c, 1, []byte("one"))
		p.cf.CorruptNextRecvLength(func(int) int { return 20 }) // fixed part and an empty Read list
		rcSend(t, p.c, 2, procEcho, xdr.AppendOpaque(nil, []byte("two")))
		rh, res := rcRecvErr(t, p.c, ErrBadReply)
		assert.Equal(t, uint32(2), rh.XID)
		assert.Equal(t, xdr.AcceptSystemErr, rh.AcceptStat)
		assert.Empty(t, res)
		assert.Equal(t, uint64(1), p.c.Stats().BadReplies)
		rcEcho(t, p.c, 3, []byte("three"))
		rcCheckIdle(t, p.c)
		rcCheckResponderIdle(t, p.srv.conn(t, 1))
	})
	// A reply shorter than the fixed part has no trustworthy XID: it is
	// dropped and counted, as Linux drops it (rpcrdma_reply_handler); the
	// Conn goes on and other calls complete. (The call it answered keeps
	// waiting, for its RPC layer to time out: see the package notes.)
	t.Run("reply-shorter-than-fixed-part", func(t *testing.T) {
		rcNoLeaks(t)
		p := newRCFaultPair(t, Config{}, Config{})
		rcEcho(t, p.c, 1, []byte("one"))
		p.cf.CorruptNextRecvLength(func(int) int { return 8 })
		rcSend(t, p.c, 2, procEcho, xdr.AppendOpaque(nil, []byte("two")))
		rcEventually(t, "the bad reply", func() bool { return p.c.Stats().BadReplies == 1 })
		rcEcho(t, p.c, 3, []byte("three"))
	})
	// A call cut inside its chunk lists: the responder answers ERR_CHUNK
	// (RFC 8166 §4.5), which fails that call with a *RemoteError; both
	// sides go on.
	t.Run("call-cut-in-chunk-lists", func(t *testing.T) {
		rcNoLeaks(t)
		p := newRCFaultPair(t, Config{}, Config{})
		rcEcho(t, p.c, 1, []byte("one"))
		p.sf.CorruptNextRecvLength(func(int) int { return 20 })
		rcSend(t, p.c, 2, procEcho, xdr.AppendOpaque(nil, []byte("two")))
		reply, err := p.c.ReadMsg(nil)
		var re *RemoteError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, uint32(2), re.XID)
		assert.Equal(t, uint32(2), re.Code, "ERR_CHUNK")
		var rh xdr.ReplyHeader
		_, perr := rh.Unmarshal(reply)
		require.NoError(t, perr)
		assert.Equal(t, xdr.AcceptSystemErr, rh.AcceptStat)
		assert.Equal(t, uint64(1), p.srv.conn(t, 1).Stats().ErrChunkSent)
		rcEcho(t, p.c, 3, []byte("three"))
		rcCheckIdle(t, p.c)
		rcCheckResponderIdle(t, p.srv.conn(t, 1))
	})
}

// TestFaultFailPostSend: posting a Send fails.
func TestFaultFailPostSend(t *testing.T) {
	// The requester's post fails: posting happens after the call is
	// queued (postQueue), so the write succeeds and the connection
	// ends with the cause, as if the work request had failed; the call
	// fails with it, and so does the Conn, which does not reconnect.
	t.Run("requester", func(t *testing.T) {
		rcNoLeaks(t)
		p := newRCFaultPair(t, Config{}, Config{Credits: 2})
		rcEcho(t, p.c, 1, []byte("one"))
		p.cf.FailPostSend(1, errRCBoom)
		rcSend(t, p.c, 2, procEcho, xdr.AppendOpaque(nil, []byte("lost")))
		_, err := p.c.ReadMsg(nil)
		require.ErrorIs(t, err, errRCBoom)
		require.Error(t, p.c.WriteMsg(appendCall(nil, 3, procEcho)))
		assert.Equal(t, 0, p.srv.seenCount(2))
	})
	// With reconnection and retransmission, the call whose post failed
	// is sent again on the next connection and answered once, inline or
	// with chunks.
	t.Run("requester-reconnect", func(t *testing.T) {
		rcNoLeaks(t)
		p := newRCFaultPair(t, Config{}, Config{Credits: 2, Reconnect: rcPolicy(true)})
		rcEcho(t, p.c, 1, []byte("one"))
		for i, data := range [][]byte{[]byte("inline"), pattern(6000, 1)} {
			xid := uint32(2 + i)
			p.cf.FailPostSend(1, errRCBoom)
			rcEcho(t, p.c, xid, data)
			assert.Equal(t, 1, p.srv.seenCount(xid))
			assert.Equal(t, uint64(i+1), p.c.Stats().Reconnects)
		}
		rcCheckIdle(t, p.c)
	})
	// The responder's post of a reply fails: its connection fails with
	// the cause (its WriteMsg says so) and disconnects; the requester
	// reads io.EOF.
	t.Run("responder", func(t *testing.T) {
		rcNoLeaks(t)
		p := newRCFaultPair(t, Config{}, Config{})
		rcEcho(t, p.c, 1, []byte("one"))
		p.sf.FailPostSend(1, errRCBoom)
		rcSend(t, p.c, 2, 0, nil)
		assert.ErrorIs(t, p.srv.end(t, 1), errRCBoom)
		_, err := p.c.ReadMsg(nil)
		assert.Equal(t, io.EOF, err)
	})
	// The same with reconnection: the call is retransmitted and answered
	// on the next connection.
	t.Run("responder-reconnect", func(t *testing.T) {
		rcNoLeaks(t)
		p := newRCFaultPair(t, Config{}, Config{Reconnect: rcPolicy(true)})
		rcEcho(t, p.c, 1, []byte("one"))
		p.sf.FailPostSend(1, errRCBoom)
		rcEcho(t, p.c, 2, []byte("two"))
		assert.ErrorIs(t, p.srv.end(t, 1), errRCBoom)
		assert.Equal(t, 2, p.srv.seenCount(2))
		assert.Equal(t, uint64(1), p.c.Stats().Reconnects)
		rcCheckIdle(t, p.c)
	})
}

// TestFaultFailLocalInvalidate: the reply to a call with chunks arrives
// without remote invalidation and the requester cannot post the Local
// Invalidate of the call's memory. The connection fails with the cause, but
// the reply, complete and already copied out of that memory, is still
// delivered, and its slot comes back.
func TestFaultFailLocalInvalidate(t *testing.T) {
	for _, reconnect := range []bool{false, true} {
		name := "no-reconnect"
		if reconnect {
			name = "reconnect"
		}
		t.Run(name, func(t *testing.T) {
			rcNoLeaks(t)
			ccfg := Config{}
			if reconnect {
				ccfg.Reconnect = rcPolicy(true)
			}
			// The responder does not use Send With Invalidate.
			p := newRCFaultPair(t, Config{NoRemoteInvalidate: true}, ccfg)
			p.srv.hold = func(conn, seen int) bool { return true }
			rcEcho(t, p.c, 1, []byte("one"))
			data := pattern(6000, 2) // a Long Call with a Reply chunk
			rcSend(t, p.c, 2, procHold, xdr.AppendOpaque(nil, data))
			h := p.srv.waitHeld(t)
			rcSent(t, p.c, 2)
			p.cf.FailPostSend(1, errRCBoom) // the Local Invalidate
			p.srv.answer(t, h)
			rh, res := rcRecv(t, p.c)
			assert.Equal(t, uint32(2), rh.XID)
			assert.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
			assert.Equal(t, xdr.AppendOpaque(nil, data), res)
			if reconnect {
				rcEcho(t, p.c, 3, []byte("three"))
				assert.Equal(t, 1, p.srv.seenCount(2), "a call answered is not retransmitted")
				assert.Equal(t, uint64(1), p.c.Stats().Reconnects)
				rcCheckIdle(t, p.c)
				return
			}
			_, err := p.c.ReadMsg(nil)
			assert.ErrorIs(t, err, errRCBoom)
			p.c.mu.Lock()
			free, slots := len(p.c.reqState.free), len(p.c.reqState.calls)
			p.c.mu.Unlock()
			assert.Equal(t, slots, free, "every slot back")
		})
	}
}

// TestFaultFailPostRecv: posting Receives fails.
func TestFaultFailPostRecv(t *testing.T) {
	// Dial's Receives cannot be posted: Dial fails with the cause; the
	// next Dial works.
	t.Run("requester-setup", func(t *testing.T) {
		rcNoLeaks(t)
		srv := newRCServer(t, nil)
		l := rcListen(t, "127.0.0.1:0", nil)
		srv.serve(l)
		cf := &soft.Faults{}
		cf.FailPostRecv(1, errRCBoom)
		c, err := Dial(t.Context(), l.Addr().String(), &Config{Provider: &soft.Provider{Faults: cf}})
		require.ErrorIs(t, err, errRCBoom)
		require.Nil(t, c)
		c = rcDial(t, l.Addr().String(), &Config{Provider: &soft.Provider{Faults: cf}, Binding: rcBinding{}})
		rcEcho(t, c, 1, []byte("one"))
	})
	// The listener's Receives cannot be posted for one connection request:
	// it is rejected, the listener goes on, the next Dial works.
	t.Run("responder-setup", func(t *testing.T) {
		rcNoLeaks(t)
		srv := newRCServer(t, nil)
		sf := &soft.Faults{}
		l := rcListen(t, "127.0.0.1:0", &Config{Provider: &soft.Provider{Faults: sf}})
		srv.serve(l)
		sf.FailPostRecv(1, errRCBoom)
		_, err := Dial(t.Context(), l.Addr().String(), &Config{Provider: &soft.Provider{}})
		require.ErrorIs(t, err, verbs.ErrRejected)
		c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}})
		rcEcho(t, c, 1, []byte("one"))
	})
	// The requester cannot repost the Receive of a reply: the reply is
	// still delivered, then the Conn fails with the cause (not io.EOF:
	// the peer did not go away).
	t.Run("requester-repost", func(t *testing.T) {
		rcNoLeaks(t)
		p := newRCFaultPair(t, Config{}, Config{})
		rcEcho(t, p.c, 1, []byte("one"))
		p.cf.FailPostRecv(1, errRCBoom)
		rcEcho(t, p.c, 2, []byte("two"))
		_, err := p.c.ReadMsg(nil)
		assert.ErrorIs(t, err, errRCBoom)
		assert.NotErrorIs(t, err, io.EOF)
		assert.ErrorIs(t, p.c.WriteMsg(appendCall(nil, 3, 0)), errRCBoom)
		assert.Equal(t, io.EOF, p.srv.end(t, 1))
	})
	// The responder cannot repost a Receive before replying: it must not
	// grant credits it cannot back, so its connection fails with the
	// cause; the requester reads io.EOF.
	t.Run("responder-repost", func(t *testing.T) {
		rcNoLeaks(t)
		p := newRCFaultPair(t, Config{}, Config{})
		rcEcho(t, p.c, 1, []byte("one"))
		p.sf.FailPostRecv(1, errRCBoom)
		rcSend(t, p.c, 2, 0, nil)
		assert.ErrorIs(t, p.srv.end(t, 1), errRCBoom)
		_, err := p.c.ReadMsg(nil)
		assert.Equal(t, io.EOF, err)
	})
}
