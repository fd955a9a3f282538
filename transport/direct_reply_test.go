package transport

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Tests of Conn.WriteMsgDirect: a reply's DDP-eligible result written to
// the requester's Write chunk from the caller's buffer, in place, and the
// buffer handed back (done) only once nothing can read it.

// directReply reads one procRead call on server and answers it with
// WriteMsgDirect from buf (see replyDirect).
func directReply(t *testing.T, server *Conn, buf []byte, dones *atomic.Int32) (reply []byte, early bool, done chan struct{}) {
	t.Helper()
	xid, n := readCall(t, server)
	return replyDirect(t, server, buf, xid, n, dones)
}

// readCall reads one procRead call on server: its XID and count.
func readCall(t *testing.T, server *Conn) (xid uint32, n int) {
	t.Helper()
	call, err := server.ReadMsg(nil)
	require.NoError(t, err)
	var h xdr.CallHeader
	args, err := h.Unmarshal(call)
	require.NoError(t, err)
	r := xdr.NewReader(call[args:])
	count, err := r.Uint32()
	require.NoError(t, err)
	return h.XID, int(count)
}

// replyDirect answers call xid with n bytes of the xid's pattern, built in
// buf and written with WriteMsgDirect. It returns the reply, whether done
// ran before WriteMsgDirect returned, and a channel closed by done, which
// also counts its calls in dones.
func replyDirect(t *testing.T, server *Conn, buf []byte, xid uint32, n int, dones *atomic.Int32) (reply []byte, early bool, done chan struct{}) {
	t.Helper()
	reply = xdr.AppendOpaque(appendReply(buf[:0], xid), pattern(n, byte(xid)))
	require.True(t, unsafe.SliceData(buf) == unsafe.SliceData(reply), "the reply is built in buf")
	done = make(chan struct{})
	var returned, ranEarly atomic.Bool
	require.NoError(t, server.WriteMsgDirect(reply, func() {
		ranEarly.Store(!returned.Load())
		dones.Add(1)
		close(done)
	}))
	returned.Store(true)
	select {
	case <-done:
		early = ranEarly.Load()
	default:
	}
	return reply, early, done
}

// waitDone waits for done to be closed; the limit guards against a hang.
func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(rcGuard):
		t.Fatalf("%s: done was never called", what)
	}
}

// TestWriteMsgDirect: a 64 KiB result with a Write chunk is written from
// the server's buffer (DirectPlacements, one registration for three
// replies from the same buffer) and done runs only after the reply's Send
// completed: the server's completions are delayed, and done has not run
// while they are held, though WriteMsgDirect returned long before. Below
// DirectPlacementMin, without a Write chunk, with direct placement turned
// off or from a provider's view of a requester, the reply is copied and
// done runs before WriteMsgDirect returns. In every case the requester gets
// the result byte for byte and done runs exactly once.
func TestWriteMsgDirect(t *testing.T) {
	for _, tc := range []struct {
		name   string
		min, n int
		ddp    bool
		direct bool
	}{
		{"direct-64KiB", 0, 64 << 10, true, true},
		{"direct-8KiB-min-4KiB", 4 << 10, 8 << 10, true, true},
		{"copied-4KiB", 0, 4 << 10, true, false},
		{"copied-no-write-chunk", 0, 64 << 10, false, false},
		{"copied-off", -1, 64 << 10, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults := &soft.Faults{}
			sprov := &soft.Provider{Faults: faults}
			client, server := netconvPair(t,
				&Config{Provider: sprov, Binding: testBinding{ddp: tc.ddp}, DirectPlacementMin: tc.min},
				&Config{Binding: testBinding{ddp: tc.ddp}})
			buf := make([]byte, 0, tc.n+1024)
			var dones atomic.Int32
			for i := range 3 {
				xid := uint32(20 + i)
				got := make(chan []byte, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
					defer cancel()
					reply, err := client.Call(ctx, xdr.AppendUint32(appendCall(nil, xid, procRead), uint32(tc.n)), nil)
					assert.NoError(t, err)
					got <- reply
				}()
				const hold = 300 * time.Millisecond
				var held time.Time
				if tc.direct && i == 1 {
					faults.DelayCompletions(hold)
					held = time.Now()
				}
				_, early, done := directReply(t, server, buf, &dones)
				if tc.direct {
					// done may run before WriteMsgDirect returns (a
					// quick Send completion), but not before that.
					if i == 1 {
						// The Send completion is queued after held,
						// so Poll returns it no sooner than held+hold:
						// done before then ran without it. (On a host
						// that stalled this goroutine past held+hold,
						// done may rightly have run.)
						select {
						case <-done:
							if since := time.Since(held); since < hold {
								t.Fatalf("done ran %v after the reply's Send completion was held back for %v", since, hold)
							}
						case <-time.After(100 * time.Millisecond):
						}
						faults.DelayCompletions(0)
					}
				} else {
					require.True(t, early, "a copied reply's done runs before WriteMsgDirect returns")
				}
				waitDone(t, done, tc.name)
				// The buffer is the caller's again: scribbling on it
				// must not reach the requester (it would, had done run
				// before the RDMA Write read it).
				for j := range buf[:cap(buf)] {
					buf[:cap(buf)][j] = 0xff
				}
				reply := <-got
				var rh xdr.ReplyHeader
				off, err := rh.Unmarshal(reply)
				require.NoError(t, err)
				require.Equal(t, xid, rh.XID)
				require.True(t, bytes.Equal(xdr.AppendOpaque(nil, pattern(tc.n, byte(xid))), reply[off:]), "the result, byte for byte")
			}
			assert.Equal(t, int32(3), dones.Load(), "one done per reply")
			st := server.Stats()
			if tc.direct {
				assert.Equal(t, uint64(3), st.DirectPlacements, "results written in place")
				assert.Equal(t, uint64(1), st.DirectRegistrations, "one registration of the reused buffer")
				assert.Equal(t, uint64(3), st.WriteChunks)
			} else {
				assert.Zero(t, st.DirectPlacements)
				assert.Zero(t, st.DirectRegistrations)
			}
			assert.Zero(t, st.DirectPlacementErrors)
		})
	}
}

// TestWriteMsgDirectErrors: done runs exactly once, before WriteMsgDirect
// returns, when the write fails without taking msg: not a reply, an
// unknown XID, a closed Conn; and a requester's WriteMsgDirect is WriteMsg
// followed by done.
func TestWriteMsgDirectErrors(t *testing.T) {
	client, server := netconvPair(t, &Config{Binding: testBinding{ddp: true}}, &Config{Binding: testBinding{ddp: true}})
	var n atomic.Int32
	done := func() { n.Add(1) }
	err := server.WriteMsgDirect(appendCall(nil, 1, procRead), done)
	require.ErrorIs(t, err, ErrNotReply)
	require.Equal(t, int32(1), n.Load())
	err = server.WriteMsgDirect(xdr.AppendOpaque(appendReply(nil, 99), make([]byte, 64<<10)), done)
	require.ErrorIs(t, err, ErrUnknownXID)
	require.Equal(t, int32(2), n.Load())

	require.NoError(t, client.WriteMsgDirect(xdr.AppendUint32(appendCall(nil, 5, procRead), 64<<10), done))
	require.Equal(t, int32(3), n.Load())
	var dones atomic.Int32
	_, _, d := directReply(t, server, make([]byte, 0, 65<<10), &dones)
	waitDone(t, d, "reply to the requester's WriteMsgDirect")
	_, err = client.ReadMsg(nil)
	require.NoError(t, err)

	require.NoError(t, server.Close())
	err = server.WriteMsgDirect(appendReply(nil, 5), done)
	require.Error(t, err)
	require.Equal(t, int32(4), n.Load())
}

// TestWriteMsgDirectLost: the link breaks at the reply's Send, so the
// reply's RDMA Write was posted from the caller's buffer but its Send
// never completes. done still runs, once, and only after the server's
// connection was closed (its registered memory, the caller's buffer's
// registration with it, is gone): no late Write can read the buffer.
func TestWriteMsgDirectLost(t *testing.T) {
	faults := &soft.Faults{}
	sprov := &soft.Provider{Faults: faults}
	client, server := netconvPair(t, &Config{Provider: sprov, Binding: testBinding{ddp: true}},
		&Config{Binding: testBinding{ddp: true}})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
		defer cancel()
		_, _ = client.Call(ctx, xdr.AppendUint32(appendCall(nil, 7, procRead), 64<<10), nil)
	}()
	faults.DropAtSend(1)
	var dones atomic.Int32
	var regAtDone atomic.Int64
	regAtDone.Store(-1)
	call, err := server.ReadMsg(nil)
	require.NoError(t, err)
	var h xdr.CallHeader
	_, err = h.Unmarshal(call)
	require.NoError(t, err)
	buf := make([]byte, 0, 65<<10)
	reply := xdr.AppendOpaque(appendReply(buf, h.XID), pattern(64<<10, byte(h.XID)))
	done := make(chan struct{})
	err = server.WriteMsgDirect(reply, func() {
		regAtDone.Store(registered(t, sprov))
		dones.Add(1)
		close(done)
	})
	if err != nil {
		t.Logf("WriteMsgDirect: %v (the link broke first)", err)
	}
	waitDone(t, done, "lost connection")
	assert.Equal(t, int64(0), regAtDone.Load(), "the server's memory was freed before done")
	assert.Equal(t, uint64(1), server.Stats().DirectPlacements)
	_ = server.Close()
	assert.Equal(t, int32(1), dones.Load(), "done runs once")
}

// TestWriteMsgDirectBudget: a result written from the caller's buffer
// counts against MemoryLimits.Replies as a staged one would: with room for
// one 64 KiB result, the second reply's WriteMsgDirect waits until the
// first one's Send completed (held back here), and both arrive whole.
func TestWriteMsgDirectBudget(t *testing.T) {
	faults := &soft.Faults{}
	sprov := &soft.Provider{Faults: faults}
	const size = 96 << 10
	client, server := netconvPair(t,
		&Config{Provider: sprov, Binding: testBinding{ddp: true}, MaxRPCSize: size, Memory: MemoryLimits{Replies: size}},
		&Config{Binding: testBinding{ddp: true}, MaxRPCSize: size})
	// A first call, for the credits that two calls in flight need (a
	// requester starts with one).
	go func() {
		_, _ = client.Call(context.Background(), xdr.AppendUint32(appendCall(nil, 9, procRead), 64<<10), nil)
	}()
	var dones atomic.Int32
	_, _, done := directReply(t, server, make([]byte, 0, 65<<10), &dones)
	waitDone(t, done, "first call")
	replies := make(chan error, 2)
	for xid := uint32(1); xid <= 2; xid++ {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
			defer cancel()
			reply, err := client.Call(ctx, xdr.AppendUint32(appendCall(nil, xid, procRead), 64<<10), nil)
			if err == nil && !bytes.HasSuffix(reply, pattern(64<<10, byte(xid))) {
				err = errors.New("result corrupted")
			}
			replies <- err
		}()
	}
	// Both calls in first: delayed completions hold Receives too.
	xid1, n1 := readCall(t, server)
	xid2, n2 := readCall(t, server)
	const hold = 400 * time.Millisecond
	faults.DelayCompletions(hold)
	held := time.Now()
	_, _, done1 := replyDirect(t, server, make([]byte, 0, 65<<10), xid1, n1, &dones)
	second, done2 := make(chan struct{}), make(chan chan struct{}, 1)
	go func() {
		defer close(second) // WriteMsgDirect returned
		_, _, d := replyDirect(t, server, make([]byte, 0, 65<<10), xid2, n2, &dones)
		done2 <- d
	}()
	// The first reply's Send completion, which frees its budget, is
	// queued after held, so Poll returns it no sooner than held+hold: the
	// second reply going out before then did not wait for it. (On a host
	// that stalled this goroutine past held+hold, it may rightly have.)
	select {
	case <-second:
		if since := time.Since(held); since < hold {
			t.Fatalf("the second reply went out %v after the first's completion was held back for %v, while the first held the Replies budget", since, hold)
		}
	case <-time.After(150 * time.Millisecond):
	}
	faults.DelayCompletions(0)
	waitDone(t, done1, "first reply")
	waitDone(t, second, "second reply")
	waitDone(t, <-done2, "second reply")
	for range 2 {
		require.NoError(t, <-replies)
	}
	assert.Equal(t, uint64(3), server.Stats().DirectPlacements)
}

// tailBinding is testBinding's procRead with a second, non-DDP opaque
// after the result: procRead's arguments are the result's length and the
// tail's, so that a long tail sends the reply, less its result, through
// the Reply chunk (RDMA_NOMSG) while the result goes to the Write chunk.
type tailBinding struct{}

func (tailBinding) Call(h *xdr.CallHeader, msg []byte, args int) CallInfo {
	r := xdr.NewReader(msg[args:])
	n, _ := r.Uint32()
	tail, _ := r.Uint32()
	return CallInfo{MaxReply: 24 + 8 + xdr.RoundUp(int(n)) + xdr.RoundUp(int(tail)), ReplyData: int(n)}
}

func (tailBinding) ReplyData(h *xdr.CallHeader, reply []byte, results int) DataItem {
	return testBinding{ddp: true}.ReplyData(h, reply, results)
}

// TestWriteMsgDirectReplyChunk: a 64 KiB result written from the caller's
// buffer, and the rest of the reply (8 KiB, over the inline threshold)
// staged and written through the Reply chunk: RDMA_NOMSG with a Write
// chunk, both RDMA Writes from their own memory; the requester gets the
// whole reply back, byte for byte.
func TestWriteMsgDirectReplyChunk(t *testing.T) {
	client, server := netconvPair(t, &Config{Binding: tailBinding{}}, &Config{Binding: tailBinding{}})
	const n, tail = 64 << 10, 8 << 10
	got := make(chan []byte, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
		defer cancel()
		args := xdr.AppendUint32(xdr.AppendUint32(nil, n), tail)
		reply, err := client.Call(ctx, append(appendCall(nil, 3, procRead), args...), nil)
		assert.NoError(t, err)
		got <- reply
	}()
	xid, count := readCall(t, server)
	require.Equal(t, n, count)
	buf := make([]byte, 0, n+tail+1024)
	reply := xdr.AppendOpaque(xdr.AppendOpaque(appendReply(buf, xid), pattern(n, 3)), pattern(tail, 4))
	want := append([]byte(nil), reply...)
	done := make(chan struct{})
	require.NoError(t, server.WriteMsgDirect(reply, func() { close(done) }))
	waitDone(t, done, "reply with a Reply chunk")
	clear(buf[:cap(buf)])
	require.True(t, bytes.Equal(want, <-got), "the reply, result reinserted, byte for byte")
	st := server.Stats()
	assert.Equal(t, uint64(1), st.DirectPlacements, "the result written in place")
	assert.Equal(t, uint64(1), st.WriteChunks)
	assert.Equal(t, uint64(1), st.ReplyChunks, "the rest through the Reply chunk")
}

// TestWriteMsgDirectArena: a reply built in a slice of a buffer larger
// than any message (an arena) registers the reply alone, not the whole
// buffer behind it.
func TestWriteMsgDirectArena(t *testing.T) {
	sprov := &soft.Provider{}
	client, server := netconvPair(t, &Config{Provider: sprov, Binding: testBinding{ddp: true}},
		&Config{Binding: testBinding{ddp: true}})
	called := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
		defer cancel()
		_, err := client.Call(ctx, xdr.AppendUint32(appendCall(nil, 4, procRead), 64<<10), nil)
		called <- err
	}()
	xid, n := readCall(t, server)
	arena := make([]byte, 8<<20)
	before := registered(t, sprov)
	var dones atomic.Int32
	var regDuring atomic.Int64
	reply := xdr.AppendOpaque(appendReply(arena[1<<20:1<<20], xid), pattern(n, byte(xid)))
	done := make(chan struct{})
	require.NoError(t, server.WriteMsgDirect(reply, func() {
		regDuring.Store(registered(t, sprov))
		dones.Add(1)
		close(done)
	}))
	waitDone(t, done, "arena reply")
	require.NoError(t, <-called, "the requester's Call")
	assert.Equal(t, uint64(1), server.Stats().DirectPlacements)
	grown := regDuring.Load() - before
	assert.Positive(t, grown, "the reply registered")
	assert.LessOrEqual(t, grown, int64(len(reply)+4096), "the reply registered, not the arena")
}
