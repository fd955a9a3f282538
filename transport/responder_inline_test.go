package transport

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// echoInline is an InlineHandler that takes NULL and procEcho calls and
// answers them as echoOpaque does, counting them; its reply buffer is
// reused, as a server's would be.
type echoInline struct {
	c      *Conn
	served atomic.Int64
	out    []byte
	err    atomic.Pointer[error]
	// hold, if not nil, is waited for before each reply is written, and
	// entered told first.
	hold    chan struct{}
	entered chan struct{}
}

// Inline takes NULL and procEcho; msg must be the call h was parsed from.
func (e *echoInline) Inline(h *xdr.CallHeader, msg []byte) bool {
	var m xdr.CallHeader
	if _, err := m.Unmarshal(msg); err != nil || m.XID != h.XID || m.Proc != h.Proc {
		err := fmt.Errorf("Inline: msg (xid %#x proc %d, %v) is not the call of h (xid %#x proc %d)", m.XID, m.Proc, err, h.XID, h.Proc)
		e.err.CompareAndSwap(nil, &err)
	}
	return h.Proc == 0 || h.Proc == procEcho
}

func (e *echoInline) ServeInline(msg []byte, arrived time.Time) {
	var h xdr.CallHeader
	args, err := h.Unmarshal(msg)
	if now := time.Now(); err == nil && (arrived.IsZero() || arrived.After(now)) {
		err = fmt.Errorf("ServeInline: arrived %v, now %v", arrived, now)
	}
	if err == nil {
		e.out, _, err = echoOpaque()(&h, msg[args:], appendReply(e.out[:0], h.XID))
	}
	if e.hold != nil {
		e.entered <- struct{}{}
		<-e.hold
	}
	if err == nil {
		err = e.c.WriteMsg(e.out)
	}
	if err != nil {
		e.err.CompareAndSwap(nil, &err)
	}
	e.served.Add(1)
}

// inlinePair returns a requester connected to a responder whose inline
// handler is h (made for the responder's Conn) and whose other calls are
// served by a ReadMsg loop (echoOpaque), counting those in *read.
func inlinePair(t *testing.T, cfg *Config, h func(*Conn) InlineHandler, read *atomic.Int64) *Conn {
	t.Helper()
	cfg = softConfig(cfg)
	l, err := Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	served, set := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(served)
		c, err := l.AcceptRDMA()
		if err != nil {
			close(set)
			return
		}
		defer c.Close()
		c.SetInlineHandler(h(c))
		close(set)
		echo := echoOpaque()
		_ = serveCalls(c, nil, nil, func(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
			read.Add(1)
			return echo(h, args, out)
		})
	}()
	c, err := Dial(t.Context(), l.Addr().String(), cfg)
	require.NoError(t, err)
	<-set // a call that arrives before the handler is set goes to ReadMsg
	t.Cleanup(func() {
		_ = c.Close()
		_ = l.Close()
		<-served
	})
	return c
}

// TestInlineHandler: calls the handler takes are executed by it (on the
// poll loop), the others reach ReadMsg, each call gets its own reply,
// with many calls in flight of both kinds at once.
func TestInlineHandler(t *testing.T) {
	var read atomic.Int64
	var eh *echoInline
	c := inlinePair(t, &Config{Binding: testBinding{}}, func(c *Conn) InlineHandler {
		eh = &echoInline{c: c}
		return eh
	}, &read)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const workers, calls = 8, 50
	var g errgroup.Group
	var xid atomic.Uint32
	for w := range workers {
		g.Go(func() error {
			var reply []byte
			for i := range calls {
				arg := bytes.Repeat([]byte{byte(w), byte(i)}, 100)
				proc := []uint32{0, procEcho, procWrite}[i%3]
				msg := appendCall(nil, xid.Add(1), proc)
				if proc != 0 {
					msg = xdr.AppendOpaque(msg, arg)
				}
				var err error
				if reply, err = c.Call(ctx, msg, reply); err != nil {
					return err
				}
				want := appendReply(nil, uint32(msg[0])<<24|uint32(msg[1])<<16|uint32(msg[2])<<8|uint32(msg[3]))
				if proc == procEcho {
					want = xdr.AppendOpaque(want, arg)
				}
				if !bytes.Equal(reply, want) {
					t.Errorf("proc %d: reply %x, want %x", proc, reply, want)
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	if p := eh.err.Load(); p != nil {
		require.NoError(t, *p)
	}
	inline := int64(0)
	for i := range calls {
		if i%3 != 2 {
			inline += workers
		}
	}
	require.Equal(t, inline, eh.served.Load(), "calls executed by the inline handler")
	require.Equal(t, int64(workers*calls)-inline, read.Load(), "calls read by ReadMsg")
}

// TestInlineHandlerHoldsPollLoop: while the inline handler executes a
// call, no other completion of the connection is handled (the contract
// of ServeInline): a call for ReadMsg sent meanwhile is answered only
// once the handler returns.
func TestInlineHandlerHoldsPollLoop(t *testing.T) {
	var read atomic.Int64
	var mu sync.Mutex
	var eh *echoInline
	hold, entered := make(chan struct{}), make(chan struct{}, 1)
	c := inlinePair(t, &Config{Binding: testBinding{}}, func(c *Conn) InlineHandler {
		mu.Lock()
		defer mu.Unlock()
		eh = &echoInline{c: c, hold: hold, entered: entered}
		return eh
	}, &read)
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release) // before inlinePair's: its Close waits for the poll loop
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, appendCall(nil, 1, 0), nil)
		done <- err
	}()
	// The inline handler is executing the call (it waits on hold): a
	// call for ReadMsg meanwhile is not read until the poll loop is free
	// again, since the loop is the one that handles its Receive.
	<-entered
	second := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, xdr.AppendOpaque(appendCall(nil, 2, procWrite), nil), nil)
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("a call was answered while the poll loop executed another: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	require.NoError(t, <-done)
	require.NoError(t, <-second)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, int64(1), eh.served.Load())
	require.Equal(t, int64(1), read.Load())
}

// stealSends is an InlineHandler whose ServeInline takes every free Send
// buffer away before it replies, so that the reply finds no room: it
// must not wait (the poll loop, which would free room, is the one
// running it), and is posted once the buffers are given back.
type stealSends struct {
	echoInline
	returned chan time.Time // when WriteMsg returned
}

func (e *stealSends) ServeInline(msg []byte, arrived time.Time) {
	c := e.c
	c.lock()
	ep := c.ep
	stolen := ep.sendFree
	ep.sendFree = nil
	c.unlock()
	go func() {
		time.Sleep(200 * time.Millisecond)
		c.lock()
		ep.sendFree = append(ep.sendFree, stolen...)
		c.unlock()
		wake(c.writeWake)
	}()
	e.echoInline.ServeInline(msg, arrived)
	e.returned <- time.Now()
}

// TestInlineReplyLater: a reply of an inline call that finds no Send
// buffer is copied and posted by a goroutine of its own once there is
// room; WriteMsg returns at once.
func TestInlineReplyLater(t *testing.T) {
	var read atomic.Int64
	var eh *stealSends
	c := inlinePair(t, &Config{Binding: testBinding{}}, func(c *Conn) InlineHandler {
		eh = &stealSends{echoInline: echoInline{c: c}, returned: make(chan time.Time, 1)}
		return eh
	}, &read)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	start := time.Now()
	msg := xdr.AppendOpaque(appendCall(nil, 7, procEcho), []byte("later"))
	reply, err := c.Call(ctx, msg, nil)
	require.NoError(t, err)
	answered := time.Since(start)
	require.Equal(t, xdr.AppendOpaque(appendReply(nil, 7), []byte("later")), reply)
	returned := (<-eh.returned).Sub(start)
	if p := eh.err.Load(); p != nil {
		require.NoError(t, *p)
	}
	require.Less(t, returned, 150*time.Millisecond, "WriteMsg waited for room on the poll loop")
	require.GreaterOrEqual(t, answered, 200*time.Millisecond, "the reply was posted before the Send buffers were back")
}

// readInline is an InlineHandler that takes procRead and answers it with
// n bytes of pattern(n, 3), which go to the call's Write chunk.
type readInline struct {
	echoInline
	data []byte
}

func (e *readInline) Inline(h *xdr.CallHeader, _ []byte) bool { return h.Proc == procRead }

func (e *readInline) ServeInline(msg []byte, _ time.Time) {
	var h xdr.CallHeader
	args, err := h.Unmarshal(msg)
	if err == nil {
		r := xdr.NewReader(msg[args:])
		var n uint32
		if n, err = r.Uint32(); err == nil {
			e.out = xdr.AppendOpaque(appendReply(e.out[:0], h.XID), e.data[:n])
			err = e.c.WriteMsg(e.out)
		}
	}
	if err != nil {
		e.err.CompareAndSwap(nil, &err)
	}
	e.served.Add(1)
}

// TestInlineHandlerWriteChunk: a call offering a Write chunk is executed
// inline too, its result written to the chunk by RDMA Write before the
// reply's Send, from the poll loop.
func TestInlineHandlerWriteChunk(t *testing.T) {
	var read atomic.Int64
	var eh *readInline
	c := inlinePair(t, &Config{Binding: testBinding{ddp: true}}, func(c *Conn) InlineHandler {
		eh = &readInline{echoInline: echoInline{c: c}, data: pattern(64<<10, 3)}
		return eh
	}, &read)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var reply []byte
	for i := range 20 {
		n := 1 << (10 + i%7) // 1 KiB to 64 KiB
		msg := xdr.AppendUint32(appendCall(nil, uint32(i+1), procRead), uint32(n))
		var err error
		reply, err = c.Call(ctx, msg, reply)
		require.NoError(t, err)
		require.Equal(t, xdr.AppendOpaque(appendReply(nil, uint32(i+1)), pattern(64<<10, 3)[:n]), reply, "READ of %d bytes", n)
	}
	if p := eh.err.Load(); p != nil {
		require.NoError(t, *p)
	}
	require.Equal(t, int64(20), eh.served.Load())
	require.Zero(t, read.Load())
	require.NotZero(t, c.Stats().WriteChunks, "Write chunks offered")
}

// writeInline takes procWrite calls (an opaque, then a marker word) and
// answers each with the opaque's length once it checked the data and the
// marker: what Inline was shown and what ServeInline executes must both be
// the whole call, its Read chunk's data in place.
type writeInline struct {
	echoInline
	marker uint32
}

// check parses msg, a procWrite call, and returns its data's length.
func (e *writeInline) check(msg []byte) (uint32, error) {
	var h xdr.CallHeader
	args, err := h.Unmarshal(msg)
	if err != nil {
		return 0, err
	}
	r := xdr.NewReader(msg[args:])
	data, err := r.Opaque(testMaxReply)
	if err != nil {
		return 0, err
	}
	if want := pattern(len(data), byte(len(data)>>10)); !bytes.Equal(data, want) {
		return 0, fmt.Errorf("xid %#x: data of %d bytes is not the pattern sent", h.XID, len(data))
	}
	if m, err := r.Uint32(); err != nil || m != e.marker || r.Len() != 0 {
		return 0, fmt.Errorf("xid %#x: the call's tail is not the marker (%#x, %v)", h.XID, m, err)
	}
	return uint32(len(data)), nil
}

func (e *writeInline) Inline(h *xdr.CallHeader, msg []byte) bool {
	if _, err := e.check(msg); err != nil {
		err = fmt.Errorf("Inline: %w", err)
		e.err.CompareAndSwap(nil, &err)
	}
	return h.Proc == procWrite
}

func (e *writeInline) ServeInline(msg []byte, _ time.Time) {
	n, err := e.check(msg)
	if err == nil {
		var h xdr.CallHeader
		_, _ = h.Unmarshal(msg)
		e.out = xdr.AppendUint32(appendReply(e.out[:0], h.XID), n)
		err = e.c.WriteMsg(e.out)
	}
	if err != nil {
		e.err.CompareAndSwap(nil, &err)
	}
	e.served.Add(1)
}

// TestInlineHandlerReadChunk: a call whose Read chunk was pulled into the
// connection's memory (its data in the middle of the message) is shown to
// Inline and executed inline whole, its chunk up to InlineCallMax bytes; a
// larger one goes to ReadMsg.
func TestInlineHandlerReadChunk(t *testing.T) {
	const marker = 0xfeedface
	var read atomic.Int64
	var eh *writeInline
	c := inlinePair(t, &Config{Binding: testBinding{ddp: true}}, func(c *Conn) InlineHandler {
		eh = &writeInline{echoInline: echoInline{c: c}, marker: marker}
		return eh
	}, &read)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sizes := []int{4 << 10, 8 << 10, 16 << 10, 32 << 10, InlineCallMax - 1024, InlineCallMax, InlineCallMax + 4, InlineCallMax + 4096, 4 << 10}
	inline := 0
	var reply []byte
	for i, n := range sizes {
		xid := uint32(i + 1)
		msg := xdr.AppendOpaque(appendCall(nil, xid, procWrite), pattern(n, byte(n>>10)))
		msg = xdr.AppendUint32(msg, marker)
		var err error
		reply, err = c.Call(ctx, msg, reply)
		require.NoError(t, err)
		want := appendReply(nil, xid) // ReadMsg's echoOpaque: no results for procWrite
		if n <= InlineCallMax {
			want = xdr.AppendUint32(want, uint32(n))
			inline++
		}
		require.Equal(t, want, reply, "WRITE of %d bytes (a call of %d)", n, len(msg))
	}
	if p := eh.err.Load(); p != nil {
		require.NoError(t, *p)
	}
	require.Equal(t, int64(inline), eh.served.Load(), "calls executed by the inline handler")
	require.Equal(t, int64(len(sizes)-inline), read.Load(), "calls read by ReadMsg")
	require.GreaterOrEqual(t, c.Stats().ReadChunks, uint64(len(sizes)), "Read chunks offered")
}

// lentInline is a writeInline that counts the calls it was shown in a
// buffer of pool, in Inline and in ServeInline.
type lentInline struct {
	writeInline
	pool              *testCallBufs
	shownLent, served atomic.Int64
}

func (e *lentInline) Inline(h *xdr.CallHeader, msg []byte) bool {
	if e.pool.isLent(msg) {
		e.shownLent.Add(1)
	}
	return e.writeInline.Inline(h, msg)
}

func (e *lentInline) ServeInline(msg []byte, arrived time.Time) {
	if e.pool.isLent(msg) {
		e.served.Add(1)
	}
	e.writeInline.ServeInline(msg, arrived)
}

// TestInlineHandlerCallBuffers: a call pulled into a buffer of
// Config.CallBuffers (its Read chunk at least DirectPlacementMin) is shown
// to Inline and executed inline in that buffer, without a copy, when its
// chunk is at most InlineCallMax bytes, and the buffer goes back to
// CallBuffers once ServeInline returns; a larger one goes to ReadMsg (whose
// copy gives the buffer back), a smaller one through the connection's
// memory.
func TestInlineHandlerCallBuffers(t *testing.T) {
	const marker = 0xfeedface
	var read atomic.Int64
	pool := &testCallBufs{}
	var eh *lentInline
	c := inlinePair(t, &Config{Binding: testBinding{ddp: true}, CallBuffers: pool}, func(c *Conn) InlineHandler {
		eh = &lentInline{writeInline: writeInline{echoInline: echoInline{c: c}, marker: marker}, pool: pool}
		return eh
	}, &read)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// inline: executed by the handler; lent: in a buffer of the pool.
	sizes := []struct {
		n            int
		inline, lent bool
	}{
		{DefaultDirectPlacementMin, true, true},
		{InlineCallMax, true, true},
		{8 << 10, true, false},
		{InlineCallMax + 4096, false, true},
		{40 << 10, true, true},
		{InlineCallMax, true, true},
	}
	var inline, inlineLent, lent int64
	var reply []byte
	for i, sz := range sizes {
		xid := uint32(i + 1)
		msg := xdr.AppendOpaque(appendCall(nil, xid, procWrite), pattern(sz.n, byte(sz.n>>10)))
		msg = xdr.AppendUint32(msg, marker)
		var err error
		reply, err = c.Call(ctx, msg, reply)
		require.NoError(t, err)
		want := appendReply(nil, xid) // ReadMsg's echoOpaque: no results for procWrite
		if sz.inline {
			want = xdr.AppendUint32(want, uint32(sz.n))
			inline++
		}
		if sz.lent {
			lent++
			if sz.inline {
				inlineLent++
			}
		}
		require.Equal(t, want, reply, "WRITE of %d bytes", sz.n)
		// Given back before the next call is served.
		require.Eventually(t, func() bool { gets, puts := pool.counts(); return gets == puts }, time.Minute, time.Millisecond,
			"buffers taken and given back after the WRITE of %d bytes", sz.n)
	}
	if p := eh.err.Load(); p != nil {
		require.NoError(t, *p)
	}
	require.Equal(t, inline, eh.echoInline.served.Load(), "calls executed by the inline handler")
	require.Equal(t, inlineLent, eh.shownLent.Load(), "calls Inline was shown in the pool's buffer")
	require.Equal(t, inlineLent, eh.served.Load(), "calls ServeInline was shown in the pool's buffer")
	require.Equal(t, int64(len(sizes))-inline, read.Load(), "calls read by ReadMsg")
	gets, puts := pool.counts()
	require.Equal(t, int(lent), gets, "buffers taken")
	require.Equal(t, int(lent), puts, "buffers given back")
}

// runEnder is an echoInline told the end of each run (InlineRunEnder): it
// counts the runs, checks each ended at least one call, and waits wait in
// each end before noting its time.
type runEnder struct {
	echoInline
	wait     atomic.Int64 // a time.Duration
	sinceEnd atomic.Int64 // calls served since the last end
	runs     atomic.Int64
	empty    atomic.Int64 // ends with no call served since the last
	ended    atomic.Int64 // UnixNano of the last end's return
}

func (e *runEnder) ServeInline(msg []byte, arrived time.Time) {
	e.echoInline.ServeInline(msg, arrived)
	e.sinceEnd.Add(1)
}

func (e *runEnder) InlineRunDone() {
	if e.sinceEnd.Swap(0) == 0 {
		e.empty.Add(1)
	}
	e.runs.Add(1)
	time.Sleep(time.Duration(e.wait.Load()))
	e.ended.Store(time.Now().UnixNano())
}

// TestInlineRunEnder: an InlineRunEnder is told the end of every run of
// inline calls, each after at least one call and before the run's
// replies are posted (a reply reaches the requester only after its run's
// end returned), with one call in flight and with many.
func TestInlineRunEnder(t *testing.T) {
	var read atomic.Int64
	var eh *runEnder
	c := inlinePair(t, &Config{Binding: testBinding{}}, func(c *Conn) InlineHandler {
		eh = &runEnder{echoInline: echoInline{c: c}}
		eh.wait.Store(int64(100 * time.Millisecond))
		return eh
	}, &read)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// One call: its reply is posted after its run's end returned.
	_, err := c.Call(ctx, appendCall(nil, 1, 0), nil)
	require.NoError(t, err)
	answered := time.Now().UnixNano()
	require.Equal(t, int64(1), eh.runs.Load(), "runs ended after one call")
	require.NotZero(t, eh.ended.Load())
	require.GreaterOrEqual(t, answered, eh.ended.Load(), "the reply was posted before its run ended")

	// Many in flight: every run ends, none empty.
	eh.wait.Store(0)
	const workers, calls = 8, 50
	var g errgroup.Group
	var xid atomic.Uint32
	xid.Store(1)
	for range workers {
		g.Go(func() error {
			var reply []byte
			for range calls {
				var err error
				if reply, err = c.Call(ctx, appendCall(nil, xid.Add(1), 0), reply); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	if p := eh.err.Load(); p != nil {
		require.NoError(t, *p)
	}
	require.Equal(t, int64(1+workers*calls), eh.served.Load())
	require.Zero(t, eh.sinceEnd.Load(), "calls served in a run that was never ended")
	require.Zero(t, eh.empty.Load(), "runs ended without a call")
	runs := eh.runs.Load()
	require.True(t, runs >= 2 && runs <= 1+workers*calls, "runs %d", runs)
	t.Logf("%d calls in %d runs", 1+workers*calls, runs)
}
