package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Tests of Conn.Call: per-call contexts, replies routed to their callers,
// and the errors of calls that lost their connection (issue 9).

// callOK makes one Call and returns the reply's results, failing t on
// an error or an unsuccessful reply.
func callOK(t *testing.T, c *Conn, xid, proc uint32, args []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
	defer cancel()
	reply, err := c.Call(ctx, append(appendCall(nil, xid, proc), args...), nil)
	require.NoError(t, err)
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	require.NoError(t, err)
	require.Equal(t, xid, rh.XID)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	return reply[off:]
}

// TestCallConcurrent: many goroutines Call at once over one Conn with few
// credits, in every chunk form (inline, DDP READ through the Write chunk,
// DDP WRITE through the Read chunk, Long Call and Reply chunk); each gets
// its own reply, byte for byte. Meanwhile the byte-stream side of the same
// Conn (WriteMsg/ReadMsg) keeps getting its own replies, never a Call's.
func TestCallConcurrent(t *testing.T) {
	rcNoLeaks(t)
	b := testBinding{ddp: true}
	p := newPair(t, &Config{Binding: b}, &Config{Binding: b, Credits: 8})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				xid := uint32(1000 + g*100 + i)
				n := []int{100, 3000, 64 << 10, 200 << 10}[i%4]
				switch i % 3 {
				case 0:
					data := pattern(n, byte(xid))
					got := callOK(t, p.client, xid, procEcho, xdr.AppendOpaque(nil, data))
					assert.True(t, bytes.Equal(xdr.AppendOpaque(nil, data), got), "echo xid %d", xid)
				case 1:
					got := callOK(t, p.client, xid, procRead, xdr.AppendUint32(nil, uint32(n)))
					assert.True(t, bytes.Equal(xdr.AppendOpaque(nil, pattern(n, byte(xid))), got), "read xid %d", xid)
				case 2:
					got := callOK(t, p.client, xid, procWrite, xdr.AppendOpaque(nil, pattern(n, byte(xid))))
					assert.Equal(t, xdr.AppendUint32(nil, uint32(n)), got, "write xid %d", xid)
				}
			}
		}()
	}
	// The stream side: its replies only.
	for i := range 20 {
		got := p.call(t, uint32(1+i), procRead, xdr.AppendUint32(nil, 5000))
		require.True(t, bytes.Equal(xdr.AppendOpaque(nil, pattern(5000, byte(1+i))), got))
	}
	wg.Wait()
	require.NoError(t, p.client.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err := p.client.ReadMsg(nil)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a Call's reply reached ReadMsg")
}

// TestCallCancel: a Call whose context ends while it waits for a credit
// returns at once with the context's error and sends nothing; one whose
// context ends after its call was sent returns at once too, and its reply,
// when it comes, is dropped (its credit comes back with it).
func TestCallCancel(t *testing.T) {
	rcNoLeaks(t)
	srv := newRCServer(t, func(conn, seen int) bool { return true })
	l := rcListen(t, "127.0.0.1:0", nil)
	srv.serve(l)
	c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}, Credits: 1})

	// The one credit is taken by a held call.
	ctx1, cancel1 := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx1, append(appendCall(nil, 1, procHold), xdr.AppendOpaque(nil, []byte("held"))...), nil)
		first <- err
	}()
	held := srv.waitHeld(t)

	// Waiting for a credit: the deadline ends the wait.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_, err := c.Call(ctx2, appendCall(nil, 2, 0), nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Zero(t, srv.seenCount(2), "a cancelled call waiting for a credit was sent")

	// Cancelled after it was sent: returns at once.
	cancel1()
	require.ErrorIs(t, rcRecvGuard(t, "the cancelled Call", first), context.Canceled)
	assert.Equal(t, uint32(1), c.Stats().Negotiated.Credits)

	// Its reply comes later and is dropped; the credit is free again.
	srv.answer(t, held)
	assert.Equal(t, []byte{0, 0, 0, 0}, callOK(t, c, 3, procEcho, xdr.AppendOpaque(nil, nil)))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = c.ReadMsg(nil)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the abandoned call's reply reached ReadMsg")
}

// TestCallLost: the connection dies with Calls in flight and no
// reconnection: each Call fails with an error wrapping ErrCallLost (the
// outcome is unknown), and so does a Call made after.
func TestCallLost(t *testing.T) {
	rcNoLeaks(t)
	srv := newRCServer(t, func(conn, seen int) bool { return true })
	l := rcListen(t, "127.0.0.1:0", nil)
	srv.serve(l)
	c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}})
	callOK(t, c, 1, 0, nil) // a reply grants the credits for four calls in flight
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
			defer cancel()
			_, err := c.Call(ctx, append(appendCall(nil, uint32(10+i), procHold), xdr.AppendOpaque(nil, nil)...), nil)
			errs <- err
		}()
	}
	for range 4 {
		srv.waitHeld(t)
	}
	require.NoError(t, srv.conn(t, 1).Close())
	for range 4 {
		err := rcRecvGuard(t, "a lost Call", errs)
		require.ErrorIs(t, err, ErrCallLost)
	}
	_, err := c.Call(context.Background(), appendCall(nil, 20, 0), nil)
	require.Error(t, err)
}

// TestCallLostRetransmitted: with retransmission on, a Call in flight when
// the connection dies is sent again on the new connection and gets its
// reply; with it off, it fails with ErrCallLost while the Conn reconnects.
func TestCallLostRetransmitted(t *testing.T) {
	for _, retransmit := range []bool{true, false} {
		t.Run(fmt.Sprint("retransmit=", retransmit), func(t *testing.T) {
			rcNoLeaks(t)
			srv := newRCServer(t, func(conn, seen int) bool { return conn == 1 })
			l := rcListen(t, "127.0.0.1:0", nil)
			srv.serve(l)
			c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{}, Reconnect: rcPolicy(retransmit)})
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
				defer cancel()
				reply, err := c.Call(ctx, append(appendCall(nil, 7, procHold), xdr.AppendOpaque(nil, []byte("again"))...), nil)
				if err == nil && !bytes.HasSuffix(reply, xdr.AppendOpaque(nil, []byte("again"))) {
					err = errors.New("wrong reply")
				}
				done <- err
			}()
			srv.waitHeld(t)
			require.NoError(t, srv.conn(t, 1).Close())
			err := rcRecvGuard(t, "the Call", done)
			if retransmit {
				require.NoError(t, err)
				assert.Equal(t, 2, srv.seenCount(7))
			} else {
				require.ErrorIs(t, err, ErrCallLost)
			}
			// The Conn works on the new connection.
			callOK(t, c, 8, 0, nil)
		})
	}
}

// TestCallTimeoutWithoutReconnect: a call without a reply for CallTimeout
// drops the connection even when no reconnection is configured (as the
// Linux client does on an RPC timeout): the Conn fails with ErrCallTimeout,
// and the Call waiting for the reply fails with ErrCallLost. The default
// timeout is Linux's 60 s.
func TestCallTimeoutWithoutReconnect(t *testing.T) {
	rcNoLeaks(t)
	assert.Equal(t, DefaultCallTimeout, (&Config{}).withDefaults(0).Reconnect.CallTimeout)
	assert.Equal(t, 60*time.Second, DefaultCallTimeout)
	assert.Negative(t, (&Config{Reconnect: ReconnectPolicy{CallTimeout: -1}}).withDefaults(0).Reconnect.CallTimeout)

	srv := newRCServer(t, func(conn, seen int) bool { return true })
	l := rcListen(t, "127.0.0.1:0", nil)
	srv.serve(l)
	c := rcDial(t, l.Addr().String(), &Config{Binding: rcBinding{},
		Reconnect: ReconnectPolicy{CallTimeout: 100 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), rcGuard)
	defer cancel()
	_, err := c.Call(ctx, append(appendCall(nil, 1, procHold), xdr.AppendOpaque(nil, nil)...), nil)
	require.ErrorIs(t, err, ErrCallLost)
	require.ErrorIs(t, err, ErrCallTimeout)
	assert.Equal(t, uint64(1), c.Stats().CallTimeouts)
	require.ErrorIs(t, c.WriteMsg(appendCall(nil, 2, 0)), ErrCallTimeout)
}

// TestCallOnResponder: only a requester makes calls.
func TestCallOnResponder(t *testing.T) {
	p := newPair(t, nil, nil)
	_, err := p.server.Call(context.Background(), appendCall(nil, 1, 0), nil)
	require.ErrorIs(t, err, ErrNotRequester)
}

// TestWriteChunkCopiedOnce: the requester keeps a READ's result where the
// responder's RDMA Write placed it, in the slot's chunk memory, until the
// reply is read: the reply it holds is the reduced one, and ReadMsg and
// Call copy the data once, straight into the caller's buffer (before issue
// 9 it was first copied into a rebuilt reply, then again by ReadMsg).
func TestWriteChunkCopiedOnce(t *testing.T) {
	b := testBinding{ddp: true}
	p := newPair(t, &Config{Binding: b}, &Config{Binding: b})
	const n = 64 << 10
	require.NoError(t, p.client.WriteMsg(xdr.AppendUint32(appendCall(nil, 5, procRead), n)))
	c := p.client
	var held struct{ reply, data int }
	rcEventually(t, "the reply", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		idx, ok := c.readQ.buf[c.readQ.head], c.readQ.size > 0
		if !ok {
			return false
		}
		call := &c.reqState.calls[idx]
		mem := c.ep.chunkMem[idx].region.Bytes()
		require.NotEmpty(t, call.data)
		require.Same(t, &mem[call.writeOff], &call.data[0], "the data is not where the responder placed it")
		held.reply, held.data = len(call.reply), len(call.data)
		return true
	})
	assert.Equal(t, n, held.data)
	assert.Less(t, held.reply, 64, "the held reply is the reduced one")
	reply, err := c.ReadMsg(nil)
	require.NoError(t, err)
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	require.NoError(t, err)
	require.Equal(t, xdr.AppendOpaque(nil, pattern(n, 5)), reply[off:])
}

// TestEmptyResultWithWriteChunk: a READ-like call offers a Write chunk for
// its result, and the result is empty (a READ at end of file): the reply
// reports 0 bytes written and carries the empty opaque (before, the
// responder dereferenced reply staging memory it had not taken for zero
// bytes and panicked under its lock, which hung every later call).
func TestEmptyResultWithWriteChunk(t *testing.T) {
	b := testBinding{ddp: true}
	l, err := Listen("127.0.0.1:0", softConfig(&Config{Binding: b}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		c, err := l.AcceptRDMA()
		if err != nil {
			return
		}
		defer c.Close()
		// procRead answers with no data at all, whatever the count.
		_ = serveCalls(c, nil, nil, func(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
			if h.Proc == procRead {
				return xdr.AppendOpaque(out, nil), true, nil
			}
			return testResults(h, args, out)
		})
	}()
	c := rcDial(t, l.Addr().String(), &Config{Binding: b})
	for i := range 3 {
		got := callOK(t, c, uint32(1+i), procRead, xdr.AppendUint32(nil, 64<<10))
		require.Equal(t, []byte{0, 0, 0, 0}, got, "an empty opaque")
	}
	require.NotZero(t, c.Stats().WriteChunks, "the calls offered a Write chunk")
}
