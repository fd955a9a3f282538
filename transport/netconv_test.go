package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/nettest"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Tests of the net.Conn and net.Listener conventions (issue 5): deadlines,
// io.EOF, net.ErrClosed, Close from any goroutine, concurrent Read and
// Write, record-marked streams split in any way; and
// golang.org/x/net/nettest.TestConn through the byte-pipe adapter of
// netconv_pipe_test.go.

var netconvPast = time.Unix(1, 0)

// TestNetconvNettestConn runs nettest.TestConn over pipes made of
// requester/responder Conn pairs, in configurations that move the bytes
// inline, in Read chunks at their position, and as Long Calls, with and
// without Send With Invalidate, and with few credits so that Writes block
// on flow control.
func TestNetconvNettestConn(t *testing.T) {
	cases := []struct {
		name   string
		server Config
		client Config
		want   func(t *testing.T, client, server Stats)
	}{
		{
			name:   "inline-4096",
			server: Config{Binding: pipeBinding{}},
			client: Config{Binding: pipeBinding{}},
			want: func(t *testing.T, c, s Stats) {
				assert.NotZero(t, c.InlineCalls, "inline calls")
				assert.Zero(t, c.ReadChunkCalls+c.LongCalls, "chunked calls")
				assert.Zero(t, s.RDMAReads+s.RDMAWrites, "RDMA operations")
			},
		},
		{
			name:   "readchunk-1024-credits2",
			server: Config{Binding: pipeBinding{ddp: true}, InlineSend: 1024, InlineRecv: 1024, Credits: 2},
			client: Config{Binding: pipeBinding{ddp: true}, InlineSend: 1024, InlineRecv: 1024, Credits: 4},
			want: func(t *testing.T, c, s Stats) {
				assert.NotZero(t, c.ReadChunkCalls, "read-chunk calls")
				assert.Zero(t, c.LongCalls, "long calls")
				assert.NotZero(t, s.RDMAReads, "server RDMA Reads")
				// Every chunked call answered is invalidated remotely; calls
				// in flight when a pipe is stopped are not answered.
				assert.NotZero(t, c.RemoteInvalidations, "remote invalidations")
				assert.LessOrEqual(t, c.RemoteInvalidations, c.ReadChunkCalls, "remote invalidations")
				assert.LessOrEqual(t, c.RemoteInvalidations, s.RemoteInvalidations, "Send With Invalidate seen, sent")
				assert.Zero(t, c.LocalInvalidations, "local invalidations")
				assert.LessOrEqual(t, c.Negotiated.Credits, uint32(2), "credit limit")
			},
		},
		{
			name:   "longcall-1024-noR",
			server: Config{Binding: pipeBinding{}, InlineSend: 1024, InlineRecv: 1024, Credits: 3},
			client: Config{Binding: pipeBinding{}, InlineSend: 1024, InlineRecv: 1024, NoRemoteInvalidate: true},
			want: func(t *testing.T, c, s Stats) {
				assert.NotZero(t, c.LongCalls, "long calls")
				assert.Zero(t, c.ReadChunkCalls, "read-chunk calls")
				assert.NotZero(t, s.RDMAReads, "server RDMA Reads")
				assert.NotZero(t, c.LocalInvalidations, "local invalidations")
				assert.LessOrEqual(t, c.LocalInvalidations, c.LongCalls, "local invalidations")
				assert.Zero(t, c.RemoteInvalidations+s.RemoteInvalidations, "remote invalidations")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newPipeFactory(t, &tc.server, &tc.client)
			var mu sync.Mutex
			var client, server Stats
			f.statsCheck = func(c, s Stats) {
				mu.Lock()
				defer mu.Unlock()
				netconvAddStats(&client, c)
				netconvAddStats(&server, s)
				client.Negotiated.Credits = max(client.Negotiated.Credits, c.Negotiated.Credits)
			}
			nettest.TestConn(t, f.makePipe)
			f.check()
			mu.Lock()
			defer mu.Unlock()
			tc.want(t, client, server)
		})
	}
}

func netconvAddStats(dst *Stats, s Stats) {
	dst.InlineCalls += s.InlineCalls
	dst.ReadChunkCalls += s.ReadChunkCalls
	dst.LongCalls += s.LongCalls
	dst.RDMAReads += s.RDMAReads
	dst.RDMAWrites += s.RDMAWrites
	dst.RemoteInvalidations += s.RemoteInvalidations
	dst.LocalInvalidations += s.LocalInvalidations
}

// netconvPair connects a requester to a responder that nothing serves: the
// test drives both Conns.
func netconvPair(t *testing.T, scfg, ccfg *Config) (client, server *Conn) {
	t.Helper()
	l, err := Listen("127.0.0.1:0", softConfig(scfg))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	accepted := make(chan *Conn, 1)
	go func() {
		c, err := l.AcceptRDMA()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err = Dial(ctx, l.Addr().String(), softConfig(ccfg))
	require.NoError(t, err)
	server = <-accepted
	require.NotNil(t, server)
	t.Cleanup(func() {
		_ = client.Close()
		_ = server.Close()
	})
	return client, server
}

// netconvWaitFor waits until cond holds. It guards against a hang, not a
// speed goal: the limit is far beyond what any condition here needs.
func netconvWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// requireTimeout checks that err is what a net.Conn returns when a deadline
// passes: a *net.OpError for op whose Err is os.ErrDeadlineExceeded, a
// net.Error whose Timeout is true.
func requireTimeout(t *testing.T, err error, op string) {
	t.Helper()
	require.Error(t, err)
	var oe *net.OpError
	require.ErrorAs(t, err, &oe, "%T %v", err, err)
	assert.Equal(t, op, oe.Op)
	assert.Equal(t, "rdma", oe.Net)
	assert.True(t, oe.Err == os.ErrDeadlineExceeded, "OpError.Err = %#v, want os.ErrDeadlineExceeded", oe.Err)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "Timeout()")
}

// requireClosed checks that err is what a net.Conn returns after its own
// Close: a *net.OpError for op wrapping net.ErrClosed.
func requireClosed(t *testing.T, err error, op string) {
	t.Helper()
	require.Error(t, err)
	var oe *net.OpError
	require.ErrorAs(t, err, &oe, "%T %v", err, err)
	assert.Equal(t, op, oe.Op)
	assert.ErrorIs(t, err, net.ErrClosed)
}

// netconvRecord returns msg as one record-marked record.
func netconvRecord(msg []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, xdr.LastFragment|uint32(len(msg)))
	return append(b, msg...)
}

// netconvFragments returns msg as one record of several fragments, cut
// after each of the given lengths (RFC 5531 §11).
func netconvFragments(msg []byte, cuts ...int) []byte {
	var b []byte
	for _, n := range cuts {
		b = binary.BigEndian.AppendUint32(b, uint32(n))
		b = append(b, msg[:n]...)
		msg = msg[n:]
	}
	b = binary.BigEndian.AppendUint32(b, xdr.LastFragment|uint32(len(msg)))
	return append(b, msg...)
}

// netconvReadRecord reads one record from a Conn's stream and checks what
// Conn.Read promises: one fragment, the last-fragment bit set.
func netconvReadRecord(r io.Reader) ([]byte, error) {
	var mark [4]byte
	if _, err := io.ReadFull(r, mark[:]); err != nil {
		return nil, err
	}
	v := binary.BigEndian.Uint32(mark[:])
	if v&xdr.LastFragment == 0 {
		return nil, fmt.Errorf("record mark %#x without the last-fragment bit", v)
	}
	msg := make([]byte, v&^xdr.LastFragment)
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, fmt.Errorf("record body: %w", err)
	}
	return msg, nil
}

// netconvEchoCall is a procEcho call carrying data.
func netconvEchoCall(xid uint32, data []byte) []byte {
	return xdr.AppendOpaque(appendCall(nil, xid, procEcho), data)
}

// netconvEchoReply is the reply serveTest and netconvStreamServe give to
// netconvEchoCall(xid, data).
func netconvEchoReply(xid uint32, data []byte) []byte {
	return xdr.AppendOpaque(appendReply(nil, xid), data)
}

// netconvAnswer computes the test program's reply to a call, as serveTest
// does.
func netconvAnswer(call []byte) ([]byte, error) {
	var h xdr.CallHeader
	args, err := h.Unmarshal(call)
	if err != nil {
		return nil, err
	}
	r := xdr.NewReader(call[args:])
	out := appendReply(nil, h.XID)
	switch h.Proc {
	case 0:
	case procEcho:
		p, err := r.Opaque(testMaxReply)
		if err != nil {
			return nil, err
		}
		out = xdr.AppendOpaque(out, p)
	case procRead:
		n, err := r.Uint32()
		if err != nil {
			return nil, err
		}
		out = xdr.AppendOpaque(out, pattern(int(n), byte(h.XID)))
	default:
		return nil, fmt.Errorf("procedure %d", h.Proc)
	}
	return out, nil
}

// netconvStreamServe answers the test program over the record-marked stream
// of c as go-nfs does: calls read through a bufio.Reader (of the smallest
// size, 16 bytes, so that Conn.Read is called with small buffers), each
// reply written through a 4096-byte bufio.Writer in pieces of 1000 bytes
// and flushed, so that a reply over 4 KiB reaches Conn.Write in several
// Writes.
func netconvStreamServe(c *Conn) error {
	br := bufio.NewReaderSize(c, 16)
	bw := bufio.NewWriterSize(c, 4096)
	for {
		call, err := netconvReadRecord(br)
		if err != nil {
			return err
		}
		reply, err := netconvAnswer(call)
		if err != nil {
			return err
		}
		rec := netconvRecord(reply)
		for len(rec) > 0 {
			n := min(len(rec), 1000)
			if _, err := bw.Write(rec[:n]); err != nil {
				return err
			}
			rec = rec[n:]
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
}

// TestNetconvDeadlinePast: a deadline in the past fails every read and
// write at once with a timeout, even when a message is waiting (as
// net.TCPConn and net.Pipe do), and loses nothing: once the deadline is
// cleared the message is there.
func TestNetconvDeadlinePast(t *testing.T) {
	client, server := netconvPair(t, nil, nil)
	call := netconvEchoCall(1, pattern(100, 1))

	require.NoError(t, client.SetWriteDeadline(netconvPast))
	n, err := client.Write(netconvRecord(call))
	assert.Zero(t, n)
	requireTimeout(t, err, "write")
	requireTimeout(t, client.WriteMsg(call), "write")
	n, err = client.Write(nil)
	assert.Zero(t, n)
	requireTimeout(t, err, "write")
	require.NoError(t, client.SetWriteDeadline(time.Time{}))
	require.NoError(t, client.WriteMsg(call))

	netconvWaitFor(t, "the call reached the responder", func() bool { return server.Stats().Recvs == 1 })
	require.NoError(t, server.SetReadDeadline(netconvPast))
	buf := make([]byte, 1000)
	n, err = server.Read(buf)
	assert.Zero(t, n)
	requireTimeout(t, err, "read")
	got, err := server.ReadMsg(buf)
	assert.Empty(t, got)
	requireTimeout(t, err, "read")
	require.NoError(t, server.SetReadDeadline(time.Time{}))
	got, err = server.ReadMsg(buf)
	require.NoError(t, err)
	require.Equal(t, call, got, "the call survives the timeouts")

	reply := netconvEchoReply(1, pattern(100, 1))
	require.NoError(t, server.SetDeadline(netconvPast))
	requireTimeout(t, server.WriteMsg(reply), "write")
	n, err = server.Write(netconvRecord(reply))
	assert.Zero(t, n)
	requireTimeout(t, err, "write")
	require.NoError(t, server.SetDeadline(time.Time{}))
	n, err = server.Write(netconvRecord(reply))
	require.NoError(t, err)
	assert.Equal(t, len(reply)+4, n)

	netconvWaitFor(t, "the reply reached the requester", func() bool { return client.Stats().Recvs == 1 })
	require.NoError(t, client.SetReadDeadline(netconvPast))
	n, err = client.Read(buf)
	assert.Zero(t, n)
	requireTimeout(t, err, "read")
	_, err = client.ReadMsg(nil)
	requireTimeout(t, err, "read")
	require.NoError(t, client.SetDeadline(time.Time{}))
	rec, err := netconvReadRecord(client)
	require.NoError(t, err)
	require.Equal(t, reply, rec, "the reply survives the timeouts")
}

// TestNetconvDeadlineFuture: a deadline in the future fails a blocked read
// (nothing arrives) and a blocked write (no credit: the responder does not
// answer the first call, and a requester starts with one credit, RFC 8166
// §3.3.3) when it passes; clearing it makes both work again.
func TestNetconvDeadlineFuture(t *testing.T) {
	client, server := netconvPair(t, nil, nil)

	require.NoError(t, client.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	n, err := client.Read(make([]byte, 10))
	assert.Zero(t, n)
	requireTimeout(t, err, "read")
	require.NoError(t, client.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err = client.ReadMsg(nil)
	requireTimeout(t, err, "read")
	require.NoError(t, server.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err = server.Read(make([]byte, 10))
	requireTimeout(t, err, "read")
	require.NoError(t, server.SetReadDeadline(time.Time{}))

	require.NoError(t, client.WriteMsg(netconvEchoCall(1, nil)))
	require.NoError(t, client.SetWriteDeadline(time.Now().Add(20*time.Millisecond)))
	requireTimeout(t, client.WriteMsg(netconvEchoCall(2, nil)), "write")
	require.NoError(t, client.SetWriteDeadline(time.Now().Add(20*time.Millisecond)))
	n, err = client.Write(netconvRecord(netconvEchoCall(2, nil)))
	requireTimeout(t, err, "write")
	assert.Equal(t, 4+len(netconvEchoCall(2, nil)), n, "Write consumed the record it could not send")
	assert.NotZero(t, client.Stats().CreditStalls, "the writes waited for a credit")

	// The call that timed out was not sent: the responder has call 1 only.
	go func() { _ = serveTest(server) }()
	require.NoError(t, client.SetDeadline(time.Time{}))
	got, err := client.ReadMsg(nil)
	require.NoError(t, err)
	require.Equal(t, netconvEchoReply(1, nil), got)
	require.NoError(t, client.WriteMsg(netconvEchoCall(2, nil)))
	got, err = client.ReadMsg(nil)
	require.NoError(t, err)
	require.Equal(t, netconvEchoReply(2, nil), got)
	assert.Equal(t, uint64(2), client.Stats().Sends, "two calls sent")
}

// TestNetconvDeadlineChange: a deadline changed while a Read or Write is
// blocked takes effect at once, and a deadline cleared after it passed
// (or before it passes) lets later operations block again.
func TestNetconvDeadlineChange(t *testing.T) {
	client, server := netconvPair(t, nil, &Config{Credits: 1})

	t.Run("past-unblocks", func(t *testing.T) {
		require.NoError(t, client.SetDeadline(time.Time{}))
		readErr := make(chan error, 1)
		go func() {
			_, err := client.Read(make([]byte, 10))
			readErr <- err
		}()
		require.NoError(t, client.WriteMsg(netconvEchoCall(1, nil))) // takes the only credit
		writeErr := make(chan error, 1)
		go func() { writeErr <- client.WriteMsg(netconvEchoCall(2, nil)) }()
		netconvWaitFor(t, "the second call waits for a credit", func() bool { return client.Stats().CreditStalls == 1 })
		require.NoError(t, client.SetReadDeadline(netconvPast))
		requireTimeout(t, <-readErr, "read")
		require.NoError(t, client.SetWriteDeadline(netconvPast))
		requireTimeout(t, <-writeErr, "write")
	})

	t.Run("shortened", func(t *testing.T) {
		require.NoError(t, client.SetDeadline(time.Now().Add(time.Hour)))
		readErr := make(chan error, 1)
		go func() {
			_, err := client.ReadMsg(nil)
			readErr <- err
		}()
		writeErr := make(chan error, 1)
		go func() { writeErr <- client.WriteMsg(netconvEchoCall(2, nil)) }()
		require.NoError(t, client.SetDeadline(time.Now().Add(10*time.Millisecond)))
		requireTimeout(t, <-readErr, "read")
		requireTimeout(t, <-writeErr, "write")
	})

	t.Run("cleared", func(t *testing.T) {
		// Armed, then cleared before it passes.
		require.NoError(t, client.SetDeadline(time.Now().Add(20*time.Millisecond)))
		require.NoError(t, client.SetDeadline(time.Time{}))
		// Passed, then cleared.
		require.NoError(t, server.SetReadDeadline(time.Now().Add(time.Millisecond)))
		time.Sleep(5 * time.Millisecond)
		require.NoError(t, server.SetReadDeadline(time.Time{}))
		time.Sleep(30 * time.Millisecond) // past the first deadline too
		type result struct {
			msg []byte
			err error
		}
		read := make(chan result, 1)
		go func() {
			msg, err := client.ReadMsg(nil)
			read <- result{msg, err}
		}()
		// Call 1 is still unanswered: answer it, and call 2 once it can go.
		go func() { _ = serveTest(server) }()
		r := <-read
		require.NoError(t, r.err)
		require.Equal(t, netconvEchoReply(1, nil), r.msg)
		require.NoError(t, client.WriteMsg(netconvEchoCall(2, nil)))
		r.msg, r.err = client.ReadMsg(nil)
		require.NoError(t, r.err)
		require.Equal(t, netconvEchoReply(2, nil), r.msg)
	})
}

// TestNetconvEOF: once the peer has disconnected, Read and ReadMsg return
// every message received before, then io.EOF itself (not wrapped: io.ReadFull
// and bufio compare with ==), on every later call.
func TestNetconvEOF(t *testing.T) {
	t.Run("requester", func(t *testing.T) {
		client, server := netconvPair(t, nil, &Config{Binding: testBinding{}})
		sizes := []int{0, 100, 10000} // the last reply comes through the Reply chunk
		for i, n := range sizes {
			require.NoError(t, client.WriteMsg(netconvEchoCall(uint32(i+1), pattern(n, byte(i)))))
			call, err := server.ReadMsg(nil)
			require.NoError(t, err)
			reply, err := netconvAnswer(call)
			require.NoError(t, err)
			require.NoError(t, server.WriteMsg(reply))
		}
		netconvWaitFor(t, "every reply arrived", func() bool { return client.Stats().Recvs == uint64(len(sizes)) })
		require.NoError(t, server.Close())
		for i, n := range sizes {
			rec, err := netconvReadRecord(client)
			require.NoError(t, err, "reply %d", i+1)
			require.Equal(t, netconvEchoReply(uint32(i+1), pattern(n, byte(i))), rec)
		}
		for range 2 {
			n, err := client.Read(make([]byte, 10))
			assert.Zero(t, n)
			require.True(t, err == io.EOF, "Read: %v, want io.EOF", err)
			_, err = client.ReadMsg(nil)
			require.True(t, err == io.EOF, "ReadMsg: %v, want io.EOF", err)
		}
		assert.Error(t, client.WriteMsg(netconvEchoCall(9, nil)), "WriteMsg to a peer that left")
	})
	t.Run("responder", func(t *testing.T) {
		client, server := netconvPair(t, nil, nil)
		var calls [][]byte
		for i := range 3 {
			calls = append(calls, netconvEchoCall(uint32(i+1), pattern(100*i, byte(i))))
			_, err := client.Write(netconvRecord(calls[i]))
			require.NoError(t, err)
			if i == 0 {
				// A requester starts with one credit: let the grant arrive.
				msg, err := server.ReadMsg(nil)
				require.NoError(t, err)
				reply, err := netconvAnswer(msg)
				require.NoError(t, err)
				require.NoError(t, server.WriteMsg(reply))
				netconvWaitFor(t, "the grant arrived", func() bool { return client.Stats().Negotiated.Credits > 1 })
			}
		}
		netconvWaitFor(t, "every call arrived", func() bool { return server.Stats().Recvs == 3 })
		require.NoError(t, client.Close())
		for i := 1; i < 3; i++ {
			rec, err := netconvReadRecord(server)
			require.NoError(t, err, "call %d", i+1)
			require.Equal(t, calls[i], rec)
		}
		for range 2 {
			n, err := server.Read(make([]byte, 10))
			assert.Zero(t, n)
			require.True(t, err == io.EOF, "Read: %v, want io.EOF", err)
			_, err = server.ReadMsg(nil)
			require.True(t, err == io.EOF, "ReadMsg: %v, want io.EOF", err)
		}
	})
}

// TestNetconvClosed: after a local Close every operation fails with
// net.ErrClosed inside a *net.OpError, in both roles; Close is idempotent;
// the other methods stay safe.
func TestNetconvClosed(t *testing.T) {
	client, server := netconvPair(t, nil, nil)
	for _, c := range []*Conn{client, server} {
		require.NoError(t, c.Close())
		require.NoError(t, c.Close(), "second Close")
		n, err := c.Read(make([]byte, 10))
		assert.Zero(t, n)
		requireClosed(t, err, "read")
		_, err = c.ReadMsg(nil)
		requireClosed(t, err, "read")
		n, err = c.Write(netconvRecord(netconvEchoCall(1, nil)))
		assert.Zero(t, n)
		requireClosed(t, err, "write")
		requireClosed(t, c.WriteMsg(netconvEchoCall(1, nil)), "write")
		// A deadline in the past does not hide the closed state.
		require.NoError(t, c.SetDeadline(netconvPast))
		_, err = c.Read(make([]byte, 10))
		requireClosed(t, err, "read")
		_ = c.Stats()
		assert.NotNil(t, c.LocalAddr())
		assert.NotNil(t, c.RemoteAddr())
	}
}

// TestNetconvCloseConcurrent closes a Conn from 10 goroutines at once while
// a Read, a ReadMsg and (on the requester) a Write waiting for a credit are
// blocked: every Close returns nil, every blocked call fails with
// net.ErrClosed. Repeated, because the wake-ups race with each other.
func TestNetconvCloseConcurrent(t *testing.T) {
	for i := range 10 {
		t.Run(fmt.Sprint("requester-", i), func(t *testing.T) {
			client, _ := netconvPair(t, nil, nil)
			require.NoError(t, client.WriteMsg(netconvEchoCall(1, nil))) // takes the only credit
			errs := make(chan error, 3)
			go func() {
				_, err := client.Read(make([]byte, 10))
				errs <- err
			}()
			go func() {
				_, err := client.ReadMsg(nil)
				errs <- err
			}()
			go func() { errs <- client.WriteMsg(netconvEchoCall(2, nil)) }()
			netconvWaitFor(t, "the Write waits for a credit", func() bool { return client.Stats().CreditStalls == 1 })
			netconvCloseFrom10(t, client)
			for range 3 {
				err := <-errs
				require.ErrorIs(t, err, net.ErrClosed)
				var oe *net.OpError
				require.ErrorAs(t, err, &oe)
			}
		})
		t.Run(fmt.Sprint("responder-", i), func(t *testing.T) {
			_, server := netconvPair(t, nil, nil)
			errs := make(chan error, 2)
			go func() {
				_, err := server.Read(make([]byte, 10))
				errs <- err
			}()
			go func() {
				_, err := server.ReadMsg(nil)
				errs <- err
			}()
			netconvCloseFrom10(t, server)
			for range 2 {
				requireClosed(t, <-errs, "read")
			}
		})
	}
}

func netconvCloseFrom10(t *testing.T, c *Conn) {
	t.Helper()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			<-start
			assert.NoError(t, c.Close())
		})
	}
	close(start)
	wg.Wait()
}

// TestNetconvListenerClose: Close unblocks a waiting Accept and later
// Accepts fail too, with net.ErrClosed inside a *net.OpError; connections
// accepted before stay open.
func TestNetconvListenerClose(t *testing.T) {
	l, err := Listen("127.0.0.1:0", &Config{Provider: &soft.Provider{}})
	require.NoError(t, err)
	accepted := make(chan *Conn, 1)
	go func() {
		c, _ := l.AcceptRDMA()
		accepted <- c
	}()
	client, err := Dial(context.Background(), l.Addr().String(), &Config{Provider: &soft.Provider{}})
	require.NoError(t, err)
	defer func() { _ = client.Close() }()
	server := <-accepted
	require.NotNil(t, server)
	defer func() { _ = server.Close() }()

	errc := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		errc <- err
	}()
	require.NoError(t, l.Close())
	for _, err := range []error{<-errc, func() error { _, err := l.Accept(); return err }()} {
		require.ErrorIs(t, err, net.ErrClosed)
		var oe *net.OpError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "accept", oe.Op)
	}
	go func() { _ = serveTest(server) }()
	require.NoError(t, client.WriteMsg(netconvEchoCall(1, []byte("still open"))))
	got, err := client.ReadMsg(nil)
	require.NoError(t, err)
	assert.Equal(t, netconvEchoReply(1, []byte("still open")), got)
}

// TestNetconvWriteSplits writes records to a requester in every way a
// stream allows and reads the replies back through one-byte Reads: each
// record is one call, each reply one record with the last-fragment bit set.
// The responder serves as go-nfs does (netconvStreamServe): replies over
// 4 KiB reach its Conn.Write in several pieces.
func TestNetconvWriteSplits(t *testing.T) {
	client, server := netconvPair(t, nil, &Config{Binding: testBinding{}})
	srvErr := make(chan error, 1)
	go func() { srvErr <- netconvStreamServe(server) }()
	in := iotest.OneByteReader(client)
	xid := uint32(0)
	// expect reads the replies to the calls (xid, data) just written, in
	// order (one call in flight at a time, or inline replies).
	expect := func(t *testing.T, calls map[uint32][]byte) {
		t.Helper()
		for range len(calls) {
			rec, err := netconvReadRecord(in)
			require.NoError(t, err)
			rx, _, err := xdr.PeekXID(rec)
			require.NoError(t, err)
			data, ok := calls[rx]
			require.True(t, ok, "reply to unknown xid %d", rx)
			require.Equal(t, netconvEchoReply(rx, data), rec, "reply to xid %d", rx)
			delete(calls, rx)
		}
	}
	write := func(t *testing.T, pieces ...[]byte) {
		t.Helper()
		for _, p := range pieces {
			n, err := client.Write(p)
			require.NoError(t, err)
			require.Equal(t, len(p), n)
		}
	}

	t.Run("one-byte-writes", func(t *testing.T) {
		for _, size := range []int{0, 5, 3000, 9000} {
			xid++
			data := pattern(size, byte(xid))
			rec := netconvRecord(netconvEchoCall(xid, data))
			for i := range rec {
				write(t, rec[i:i+1])
			}
			expect(t, map[uint32][]byte{xid: data})
		}
	})
	t.Run("every-split-point", func(t *testing.T) {
		for _, size := range []int{13, 5000} {
			data := pattern(size, 3)
			probe := netconvRecord(netconvEchoCall(0, data))
			for cut := 1; cut < len(probe); cut += 1 + cut/50 {
				xid++
				rec := netconvRecord(netconvEchoCall(xid, data))
				write(t, rec[:cut], rec[cut:])
				expect(t, map[uint32][]byte{xid: data})
			}
		}
	})
	t.Run("many-records-one-write", func(t *testing.T) {
		var stream []byte
		calls := map[uint32][]byte{}
		for i := range 20 {
			xid++
			data := pattern(i*431%6000, byte(xid))
			calls[xid] = data
			stream = append(stream, netconvRecord(netconvEchoCall(xid, data))...)
		}
		write(t, stream)
		expect(t, calls)
	})
	t.Run("records-across-writes", func(t *testing.T) {
		// Three records cut at arbitrary points, one Write ending inside a
		// record mark.
		var stream []byte
		calls := map[uint32][]byte{}
		for i := range 3 {
			xid++
			data := pattern(700*i+1, byte(xid))
			calls[xid] = data
			stream = append(stream, netconvRecord(netconvEchoCall(xid, data))...)
		}
		first := len(netconvRecord(netconvEchoCall(0, pattern(1, 0))))
		write(t, stream[:first+2], stream[first+2:first+500], stream[first+500:])
		expect(t, calls)
	})
	t.Run("multi-fragment-record", func(t *testing.T) {
		xid++
		data := pattern(6000, byte(xid))
		msg := netconvEchoCall(xid, data)
		write(t, netconvFragments(msg, 1, 40, 3000)) // a fragment boundary in every part
		expect(t, map[uint32][]byte{xid: data})
		xid++
		data = pattern(20, byte(xid))
		msg = netconvEchoCall(xid, data)
		frag := netconvFragments(msg, 0, 10) // an empty fragment is allowed
		for i := range frag {
			write(t, frag[i:i+1])
		}
		expect(t, map[uint32][]byte{xid: data})
	})
	t.Run("bufio-4096", func(t *testing.T) {
		// go-nfs's pattern, on the requester side: one record written in
		// pieces into a 4096-byte bufio.Writer, which hands Conn.Write
		// 4096-byte pieces and the rest at Flush.
		bw := bufio.NewWriterSize(client, 4096)
		for _, size := range []int{100, 4096, 10 << 10, 70000} {
			xid++
			data := pattern(size, byte(xid))
			rec := netconvRecord(netconvEchoCall(xid, data))
			for len(rec) > 0 {
				n := min(len(rec), 777)
				_, err := bw.Write(rec[:n])
				require.NoError(t, err)
				rec = rec[n:]
			}
			require.NoError(t, bw.Flush())
			expect(t, map[uint32][]byte{xid: data})
		}
	})
	s := server.Stats()
	assert.Equal(t, uint64(xid), s.Recvs, "one call per record")
	assert.Zero(t, s.Dropped)
	require.NoError(t, client.Close())
	require.True(t, <-srvErr == io.EOF, "the stream server sees io.EOF")
}

// TestNetconvWriteRecordTooLarge: a record over MaxRPCSize is discarded as
// it streams in, without being buffered; the Write that ends it fails with
// ErrMessageTooLarge and nothing is sent; the stream stays usable.
func TestNetconvWriteRecordTooLarge(t *testing.T) {
	client, server := netconvPair(t, nil, &Config{MaxRPCSize: 8192})
	mark := binary.BigEndian.AppendUint32(nil, xdr.LastFragment|8193)
	_, err := client.Write(mark)
	require.NoError(t, err, "the record has not ended yet")
	_, err = client.Write(make([]byte, 8193))
	var oe *net.OpError
	require.ErrorAs(t, err, &oe)
	assert.ErrorIs(t, err, ErrMessageTooLarge)
	assert.ErrorIs(t, client.WriteMsg(netconvEchoCall(1, pattern(8200, 1))), ErrMessageTooLarge)
	assert.Zero(t, server.Stats().Recvs)
	_, err = client.Write(netconvRecord(netconvEchoCall(2, nil)))
	require.NoError(t, err, "the stream continues after the oversized record")
}

// TestNetconvConcurrentReadWrite: one goroutine writes records while
// another reads replies, on the requester; the responder reads and writes
// concurrently too (calls handed to a replier), all through the streams.
func TestNetconvConcurrentReadWrite(t *testing.T) {
	client, server := netconvPair(t, &Config{Credits: 8}, &Config{Binding: testBinding{}, Credits: 16})
	const n = 300
	calls := make(chan []byte, 4)
	var wg sync.WaitGroup
	wg.Go(func() { // the responder's reader
		defer close(calls)
		br := bufio.NewReader(server)
		for range n {
			call, err := netconvReadRecord(br)
			if err != nil {
				t.Error(err)
				return
			}
			calls <- call
		}
	})
	wg.Go(func() { // the responder's writer
		for call := range calls {
			reply, err := netconvAnswer(call)
			if err == nil {
				_, err = server.Write(netconvRecord(reply))
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() { // the requester's writer
		for i := range n {
			xid := uint32(i + 1)
			if _, err := client.Write(netconvRecord(netconvEchoCall(xid, pattern(i*37%9000, byte(xid))))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	seen := map[uint32]bool{}
	br := bufio.NewReaderSize(client, 100)
	for range n {
		rec, err := netconvReadRecord(br)
		require.NoError(t, err)
		xid, _, err := xdr.PeekXID(rec)
		require.NoError(t, err)
		i := int(xid) - 1
		require.Equal(t, netconvEchoReply(xid, pattern(i*37%9000, byte(xid))), rec)
		require.False(t, seen[xid], "xid %d twice", xid)
		seen[xid] = true
	}
	wg.Wait()
	assert.Len(t, seen, n)
}

// TestNetconvWriteFailureDropsBatch: when one record of a Write cannot be
// sent (here its write deadline passes while it waits for a credit), the
// complete records after it in the same Write are not sent later behind
// the caller's back: the caller, told the Write failed, writes them again
// and each call goes out once.
func TestNetconvWriteFailureDropsBatch(t *testing.T) {
	client, server := netconvPair(t, nil, nil)
	recs := make([][]byte, 4)
	for i := range recs {
		recs[i] = netconvRecord(netconvEchoCall(uint32(i+1), pattern(10*i, byte(i))))
	}
	// A requester starts with one credit (RFC 8166 §3.3.3) and nothing
	// answers yet: call 1 goes, call 2 waits, the deadline passes.
	require.NoError(t, client.SetWriteDeadline(time.Now().Add(20*time.Millisecond)))
	_, err := client.Write(bytes.Join(recs[:3], nil))
	requireTimeout(t, err, "write")
	require.NoError(t, client.SetWriteDeadline(time.Time{}))

	go func() { _ = serveTest(server) }()
	got, err := client.ReadMsg(nil)
	require.NoError(t, err)
	require.Equal(t, netconvEchoReply(1, nil), got)
	_, err = client.Write(bytes.Join(recs[1:], nil))
	require.NoError(t, err)
	seen := map[uint32]bool{}
	for range 3 {
		got, err := client.ReadMsg(nil)
		require.NoError(t, err)
		xid, _, err := xdr.PeekXID(got)
		require.NoError(t, err)
		require.False(t, seen[xid], "reply %d twice", xid)
		seen[xid] = true
		require.Equal(t, netconvEchoReply(xid, pattern(10*int(xid-1), byte(xid-1))), got)
	}
	assert.Equal(t, uint64(4), server.Stats().Recvs, "each call sent once")
}

// TestNetconvWriteRacesClose: writes racing a Close fail with net.ErrClosed
// whichever step of the write the Close lands in.
func TestNetconvWriteRacesClose(t *testing.T) {
	for range 30 {
		client, server := netconvPair(t, nil, &Config{Credits: 4})
		go func() { _ = serveTest(server) }()
		go func() {
			for {
				if _, err := client.ReadMsg(nil); err != nil {
					return
				}
			}
		}()
		errc := make(chan error, 1)
		started := make(chan struct{})
		go func() {
			for xid := uint32(1); ; xid++ {
				if xid == 20 {
					close(started)
				}
				if err := client.WriteMsg(netconvEchoCall(xid, nil)); err != nil {
					errc <- err
					return
				}
			}
		}()
		<-started
		require.NoError(t, client.Close())
		requireClosed(t, <-errc, "write")
	}
}
