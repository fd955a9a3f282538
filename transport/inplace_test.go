package transport

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Tests of Read chunks exposed in place: a Call's DDP-eligible argument
// (or its whole message, for a Long Call) exposed where it is in the
// caller's message, not copied into the slot's chunk memory.

// writeCall returns a procWrite call of xid with n bytes of the xid's
// pattern, in a buffer of its own.
func writeCall(xid uint32, n int) []byte {
	return append(appendCall(nil, xid, procWrite), xdr.AppendOpaque(nil, pattern(n, byte(xid)))...)
}

// callWrite makes the procWrite call msg with Call and checks that the
// server saw the xid's pattern (testResults fails otherwise) of n bytes.
func callWrite(t *testing.T, c *Conn, msg []byte, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
	defer cancel()
	reply, err := c.Call(ctx, msg, nil)
	require.NoError(t, err)
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	require.NoError(t, err)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	require.Equal(t, xdr.AppendUint32(nil, uint32(n)), reply[off:])
}

// TestCallReadChunkInPlace: a 64 KiB WRITE-like call exposes its data in
// place, registered once for three calls from the same buffer; so does a
// Long Call (no binding: the whole message); a 4 KiB one, under
// DirectPlacementMin, and any call made with WriteMsg (whose message is
// not the Conn's after it returns) are copied.
func TestCallReadChunkInPlace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ddp     bool
		n       int
		inPlace uint64
	}{
		{"readchunk-64KiB", true, 64 << 10, 3},
		{"long-64KiB", false, 64 << 10, 3},
		{"readchunk-4KiB", true, 4 << 10, 0},
		// Inline at 64 KiB: no Read chunk at all, nothing exposed.
		{"inline-48KiB", true, 48 << 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBinding{ddp: tc.ddp}
			scfg, ccfg := &Config{Binding: b}, &Config{Binding: b, Reconnect: rcPolicy(true)}
			inline := tc.name == "inline-48KiB"
			if inline {
				scfg.InlineSend, scfg.InlineRecv = 64<<10, 64<<10
				ccfg.InlineSend, ccfg.InlineRecv = 64<<10, 64<<10
			}
			p := newPair(t, scfg, ccfg)
			msg := writeCall(21, tc.n)
			for range 3 {
				callWrite(t, p.client, msg, tc.n)
				msg[3]++ // the next xid: the same buffer, the data unchanged
				copy(msg[len(msg)-tc.n:], pattern(tc.n, msg[3]))
			}
			st := p.client.Stats()
			assert.Equal(t, tc.inPlace, st.ReadChunksInPlace)
			if tc.inPlace > 0 {
				assert.Equal(t, uint64(1), st.DirectRegistrations, "registered once, then cached")
			}
			switch {
			case inline:
				assert.Equal(t, uint64(3), st.InlineCalls)
				assert.Zero(t, st.ReadChunks)
				assert.Zero(t, st.Reconnects)
			case tc.ddp:
				assert.Equal(t, uint64(3), st.ReadChunkCalls)
			default:
				assert.Equal(t, uint64(3), st.LongCalls)
			}
			// The byte stream: never in place.
			require.NoError(t, p.client.WriteMsg(writeCall(99, tc.n)))
			_, err := p.client.ReadMsg(nil)
			require.NoError(t, err)
			assert.Equal(t, tc.inPlace, p.client.Stats().ReadChunksInPlace)
		})
	}
}

// TestCallReadChunkInPlaceConcurrent: many Calls at once, each with its
// own message exposed in place, over few credits.
func TestCallReadChunkInPlaceConcurrent(t *testing.T) {
	rcNoLeaks(t)
	b := testBinding{ddp: true}
	p := newPair(t, &Config{Binding: b}, &Config{Binding: b, Credits: 4, Reconnect: rcPolicy(true)})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 8 {
				n := []int{64 << 10, 100 << 10, 40 << 10, 2 << 10}[(g+i)%4]
				callWrite(t, p.client, writeCall(uint32(1000+g*100+i), n), n)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, uint64(48), p.client.Stats().ReadChunksInPlace)
}

// TestCallReadChunkInPlaceRetransmit: a Call with its data in place, in
// flight when its connection is lost, is retransmitted on the next one
// from the caller's message (kept by reference, not copied) and exposed in
// place again; the server sees the data intact.
func TestCallReadChunkInPlaceRetransmit(t *testing.T) {
	rcNoLeaks(t)
	b := testBinding{ddp: true}
	l, first, conns := holdFirst(t, b, 33)
	c := rcDial(t, l.Addr().String(), &Config{Binding: b, Reconnect: rcPolicy(true)})
	const n = 80 << 10
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
		defer cancel()
		_, err := c.Call(ctx, writeCall(33, n), nil)
		errc <- err
	}()
	rcRecvGuard(t, "the unanswered call", first)
	_ = rcRecvGuard(t, "the server connection", conns).Close()
	require.NoError(t, rcRecvGuard(t, "the retransmitted call", errc))
	st := c.Stats()
	assert.Equal(t, uint64(2), st.ReadChunksInPlace, "exposed in place on both connections")
	assert.Equal(t, uint64(1), st.Reconnects)
}

// TestCallReadChunkInPlaceCancel: a Call whose context ends while its
// data is exposed in place returns only once the read window is
// invalidated (the responder can no longer read the caller's message); the
// connection keeps working.
func TestCallReadChunkInPlaceCancel(t *testing.T) {
	rcNoLeaks(t)
	b := testBinding{ddp: true}
	l := rcListen(t, "127.0.0.1:0", &Config{Binding: b})
	release, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	acceptServing(t, l, nil, func(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
		if h.XID == 41 {
			once.Do(func() { close(held) })
			<-release
		}
		return testResults(h, args, out)
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	c := rcDial(t, l.Addr().String(), &Config{Binding: b, Reconnect: rcPolicy(true)})
	const n = 64 << 10
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, writeCall(41, n), nil)
		errc <- err
	}()
	rcRecvGuard(t, "the held call", held)
	cancel()
	require.ErrorIs(t, rcRecvGuard(t, "the cancelled Call", errc), context.Canceled)
	c.mu.Lock()
	for slot := range c.reqState.calls {
		assert.Nil(t, c.reqState.calls[slot].placedOn, "slot %d still exposes caller memory", slot)
		if c.ep != nil {
			assert.False(t, c.ep.chunkMem[slot].read.bound, "slot %d's read window still bound", slot)
		}
	}
	c.mu.Unlock()
	close(release)
	// The reply's Send With Invalidate names the window we invalidated:
	// it fails, and the connection is re-established.
	rcEventually(t, "the reconnection", func() bool { return c.Stats().Reconnects == 1 })
	callWrite(t, c, writeCall(42, n), n)
}

// TestCallInPlaceNeedsReconnect: on a Conn that does not reconnect and
// retransmit, a Call whose context can end exposes no caller memory
// (cancelling it would cost the Conn, or the other calls in flight); one
// whose context cannot end does.
func TestCallInPlaceNeedsReconnect(t *testing.T) {
	b := testBinding{ddp: true}
	p := newPair(t, &Config{Binding: b}, &Config{Binding: b, Reconnect: ReconnectPolicy{Enabled: true}})
	const n = 64 << 10
	callWrite(t, p.client, writeCall(1, n), n) // callWrite's context has a timeout
	require.Zero(t, p.client.Stats().ReadChunksInPlace)
	reply, err := p.client.Call(context.Background(), writeCall(2, n), nil)
	require.NoError(t, err)
	require.NotEmpty(t, reply)
	require.Equal(t, uint64(1), p.client.Stats().ReadChunksInPlace)
	dst := make([]byte, n)
	_, item, err := p.client.CallInto(context.Background(), xdr.AppendUint32(appendCall(nil, 3, procRead), n), nil, dst)
	require.NoError(t, err)
	require.Equal(t, n, item.N)
	require.Equal(t, pattern(n, 3), dst)
	require.Equal(t, uint64(1), p.client.Stats().DirectPlacements)
}
