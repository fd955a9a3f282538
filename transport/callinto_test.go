package transport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Tests of Conn.CallInto: the reply's DDP-eligible result placed in the
// caller's buffer (issue 11), directly by the responder's RDMA Write from
// Config.DirectPlacementMin, copied once below it.

// callInto makes one CallInto of procRead for n bytes into dst and checks
// the reply's shape: the result cut out, its length word just before
// item.Off, nothing after it (procRead has no other results).
func callInto(t *testing.T, c *Conn, xid uint32, n int, dst []byte) DataItem {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
	defer cancel()
	msg := xdr.AppendUint32(appendCall(nil, xid, procRead), uint32(n))
	reply, item, err := c.CallInto(ctx, msg, nil, dst)
	require.NoError(t, err)
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	require.NoError(t, err)
	require.Equal(t, xid, rh.XID)
	require.True(t, item.Present, "procRead's result is DDP-eligible")
	require.Equal(t, n, item.N)
	require.Equal(t, off+4, item.Off, "the result's length word ends at item.Off")
	require.Equal(t, xdr.AppendUint32(nil, uint32(n)), reply[item.Off-4:item.Off])
	require.Len(t, reply, item.Off, "the result and its pad are cut out of the reply")
	require.True(t, bytes.Equal(pattern(n, byte(xid)), dst[:n]), "the result in the caller's buffer (xid %d, %d bytes)", xid, n)
	return item
}

// TestCallIntoPlacement: a 64 KiB result is written by the responder
// straight into the caller's buffer (DirectPlacements, no copy), and the
// buffer is deregistered when CallInto returns; a 4 KiB result (a Write
// chunk below DirectPlacementMin), a 100-byte one (inline) and a 64 KiB
// one with direct placement turned off are copied once (PlacementCopies).
// A call without a DDP-eligible result returns its whole reply.
func TestCallIntoPlacement(t *testing.T) {
	b := testBinding{ddp: true}
	for _, tc := range []struct {
		name           string
		min, cache, n  int
		noReconnect    bool
		direct, copies uint64
	}{
		{"direct-64KiB", 0, 0, 64 << 10, false, 1, 0},
		{"direct-1MiB-min-4KiB", 4 << 10, 0, 1 << 20, false, 1, 0},
		{"direct-64KiB-uncached", 0, -1, 64 << 10, false, 1, 0},
		{"writechunk-4KiB", 0, 0, 4 << 10, false, 0, 1},
		{"inline-100B", 0, 0, 100, false, 0, 1},
		{"off-64KiB", -1, 0, 64 << 10, false, 0, 1},
		// A Conn that does not reconnect exposes no caller memory for
		// a call that can be cancelled (callInto's context can).
		{"no-reconnect-64KiB", 0, 0, 64 << 10, true, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ccfg := &Config{Binding: b, DirectPlacementMin: tc.min, DirectPlacementCache: tc.cache, Reconnect: rcPolicy(true)}
			if tc.noReconnect {
				ccfg.Reconnect = ReconnectPolicy{}
			}
			p := newPair(t, &Config{Binding: b}, ccfg)
			before := registered(t, p.client.cfg.Provider)
			// The same buffer three times: registered once and
			// cached, or (uncached) registered for each call and
			// deregistered before CallInto returns.
			dst := make([]byte, tc.n+8)
			for i := range 3 {
				clear(dst)
				callInto(t, p.client, uint32(10+i), tc.n, dst)
				require.Equal(t, make([]byte, 8), dst[tc.n:], "bytes past the result changed")
				if tc.direct > 0 {
					want := before + int64(tc.n)
					if tc.cache < 0 {
						want = before
					}
					require.Equal(t, want, registered(t, p.client.cfg.Provider), "registered bytes after the call")
				}
			}
			st := p.client.Stats()
			assert.Equal(t, 3*tc.direct, st.DirectPlacements, "direct placements")
			regs := tc.direct
			if tc.cache < 0 {
				regs *= 3
			}
			assert.Equal(t, regs, st.DirectRegistrations, "registrations")
			assert.Equal(t, 3*tc.copies, st.PlacementCopies, "copies")
			assert.Zero(t, st.DirectPlacementErrors)
			if tc.direct > 0 {
				assert.Equal(t, uint64(3), st.WriteChunks)
			}
		})
	}

	t.Run("no-result", func(t *testing.T) {
		p := newPair(t, &Config{Binding: b}, &Config{Binding: b})
		dst := make([]byte, 16)
		msg := append(appendCall(nil, 3, procEcho), xdr.AppendOpaque(nil, []byte("hello"))...)
		reply, item, err := p.client.CallInto(context.Background(), msg, nil, dst)
		require.NoError(t, err)
		require.False(t, item.Present)
		var rh xdr.ReplyHeader
		off, err := rh.Unmarshal(reply)
		require.NoError(t, err)
		require.Equal(t, xdr.AppendOpaque(nil, []byte("hello")), reply[off:])
		require.Equal(t, make([]byte, 16), dst)
	})

	t.Run("too-small", func(t *testing.T) {
		// A buffer smaller than the Write chunk is not registered (the
		// chunk goes to the slot's memory); a result larger than it
		// fails the call.
		p := newPair(t, &Config{Binding: b}, &Config{Binding: b, Reconnect: rcPolicy(true)})
		dst := make([]byte, 1000)
		msg := xdr.AppendUint32(appendCall(nil, 4, procRead), 64<<10)
		_, _, err := p.client.CallInto(context.Background(), msg, nil, dst)
		require.ErrorIs(t, err, errPlacedTooLarge)
		require.Zero(t, p.client.Stats().DirectPlacements)
		callInto(t, p.client, 5, 64<<10, make([]byte, 64<<10)) // the connection still works
	})
}

// TestCallIntoConcurrent: many CallIntos at once over few credits, direct
// and copied, each gets its own result in its own buffer.
func TestCallIntoConcurrent(t *testing.T) {
	rcNoLeaks(t)
	b := testBinding{ddp: true}
	p := newPair(t, &Config{Binding: b}, &Config{Binding: b, Credits: 4, Reconnect: rcPolicy(true)})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 12 {
				n := []int{64 << 10, 300, 8 << 10, 200 << 10}[(g+i)%4]
				callInto(t, p.client, uint32(100+g*100+i), n, make([]byte, n))
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, uint64(48), p.client.Stats().DirectPlacements)
	assert.Equal(t, uint64(48), p.client.Stats().PlacementCopies)
}

// TestCallIntoCancel: a CallInto whose context ends before the responder
// answers returns only once the window over the caller's buffer is
// invalidated; the responder's RDMA Write that comes later fails (the
// connection goes down and is re-established) and never reaches the
// buffer, which the caller has reused in the meantime. Later calls work.
func TestCallIntoCancel(t *testing.T) {
	rcNoLeaks(t)
	b := testBinding{ddp: true}
	l := rcListen(t, "127.0.0.1:0", &Config{Binding: b})
	release := make(chan struct{})
	var held sync.Once
	heldCh := make(chan struct{})
	acceptServing(t, l, nil, func(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
		if h.XID == 7 {
			held.Do(func() { close(heldCh) })
			<-release
		}
		return testResults(h, args, out)
	})
	t.Cleanup(func() { // before acceptServing's: never leave its server held
		select {
		case <-release:
		default:
			close(release)
		}
	})
	cfg := &Config{Binding: b, Reconnect: rcPolicy(true)}
	c := rcDial(t, l.Addr().String(), cfg)

	const n = 64 << 10
	dst := make([]byte, n)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		msg := xdr.AppendUint32(appendCall(nil, 7, procRead), n)
		_, _, err := c.CallInto(ctx, msg, nil, dst)
		errc <- err
	}()
	rcRecvGuard(t, "the held call", heldCh)
	cancel()
	err := rcRecvGuard(t, "the cancelled CallInto", errc)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, uint64(1), c.Stats().DirectPlacements)
	// The buffer is the caller's again: reuse it, then let the responder
	// write.
	for i := range dst {
		dst[i] = 0xee
	}
	close(release)
	rcEventually(t, "the reconnection after the refused RDMA Write", func() bool { return c.Stats().Reconnects > 0 })
	require.Equal(t, bytes.Repeat([]byte{0xee}, n), dst, "the responder wrote the buffer after CallInto returned")
	// Later calls work, into the same buffer.
	callInto(t, c, 8, n, dst)
}

// TestCallIntoConnectionLost: a CallInto in flight when its connection is
// lost (without retransmission) fails with ErrCallLost, and only after
// that connection was closed; with retransmission it completes on the next
// connection, its buffer registered again.
func TestCallIntoConnectionLost(t *testing.T) {
	for _, retransmit := range []bool{false, true} {
		t.Run(map[bool]string{false: "fail", true: "retransmit"}[retransmit], func(t *testing.T) {
			rcNoLeaks(t)
			b := testBinding{ddp: true}
			l, first, conns := holdFirst(t, b, 9)
			c := rcDial(t, l.Addr().String(), &Config{Binding: b, Reconnect: rcPolicy(retransmit)})
			const n = 128 << 10
			dst := make([]byte, n)
			errc := make(chan error, 1)
			go func() {
				msg := xdr.AppendUint32(appendCall(nil, 9, procRead), n)
				_, _, err := c.CallInto(context.Background(), msg, nil, dst)
				errc <- err
			}()
			rcRecvGuard(t, "the unanswered call", first)
			srvConn := rcRecvGuard(t, "the server connection", conns)
			_ = srvConn.Close()
			err := rcRecvGuard(t, "the CallInto", errc)
			if !retransmit {
				require.ErrorIs(t, err, ErrCallLost)
				return
			}
			require.NoError(t, err)
			require.Equal(t, pattern(n, 9), dst)
			require.Equal(t, uint64(2), c.Stats().DirectPlacements, "registered again on the new connection")
		})
	}
}

// TestCallIntoClose: Close while a CallInto waits fails it with
// net.ErrClosed once the connection, and so the registration, is gone.
func TestCallIntoClose(t *testing.T) {
	b := testBinding{ddp: true}
	l := rcListen(t, "127.0.0.1:0", &Config{Binding: b})
	got := make(chan struct{})
	go func() {
		c, err := l.AcceptRDMA()
		if err != nil {
			return
		}
		defer c.Close()
		_ = serveCalls(c, nil, nil, func(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
			close(got)
			return out, false, nil
		})
	}()
	c := rcDial(t, l.Addr().String(), &Config{Binding: b})
	errc := make(chan error, 1)
	go func() {
		msg := xdr.AppendUint32(appendCall(nil, 1, procRead), 64<<10)
		_, _, err := c.CallInto(context.Background(), msg, nil, make([]byte, 64<<10))
		errc <- err
	}()
	rcRecvGuard(t, "the call", got)
	require.NoError(t, c.Close())
	select {
	case err := <-errc:
		require.True(t, errors.Is(err, ErrCallLost) || errors.Is(err, net.ErrClosed), "got %v", err)
	case <-time.After(rcGuard):
		t.Fatal("CallInto did not return after Close")
	}
}

// acceptServing accepts every connection of l until l closes and serves
// each with results (serveCalls), sending it to conns first if conns is
// not nil. The test's cleanup closes l and every connection, and waits for
// the servers.
func acceptServing(t *testing.T, l *Listener, conns chan<- *Conn, results callResults) {
	var mu sync.Mutex
	var all []*Conn
	var srv sync.WaitGroup
	srv.Add(1)
	go func() {
		defer srv.Done()
		for {
			c, err := l.AcceptRDMA()
			if err != nil {
				return
			}
			mu.Lock()
			all = append(all, c)
			mu.Unlock()
			if conns != nil {
				conns <- c
			}
			srv.Add(1)
			go func() {
				defer srv.Done()
				_ = serveCalls(c, nil, nil, results)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range all {
			_ = c.Close()
		}
		mu.Unlock()
		srv.Wait()
	})
}

// holdFirst listens and serves the test program on every connection with
// binding b, leaving the first call of xid unanswered; it returns the
// listener, a channel closed when that call arrived, and the accepted
// connections.
func holdFirst(t *testing.T, b Binding, xid uint32) (*Listener, <-chan struct{}, <-chan *Conn) {
	l := rcListen(t, "127.0.0.1:0", &Config{Binding: b})
	conns := make(chan *Conn, 4)
	first := make(chan struct{})
	var once sync.Once
	acceptServing(t, l, conns, func(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
		if h.XID == xid {
			fresh := false
			once.Do(func() { close(first); fresh = true })
			if fresh {
				return out, false, nil
			}
		}
		return testResults(h, args, out)
	})
	return l, first, conns
}
