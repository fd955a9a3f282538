package soft

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// fakePeer speaks the wire protocol by hand, so that tests can script the
// other side of a soft connection, hostile or slow.
type fakePeer struct {
	t   *testing.T
	nc  net.Conn
	br  *bufio.Reader
	seq uint32 // sequence number of the fake's next request
	// expSeq is the sequence number of the soft side's next request.
	expSeq uint32
}

const fakeStartSeq = 0xfffffffe // wraps after two requests

// dialFake returns a soft connection dialed to a fake peer that accepted
// it with the given read depth.
func dialFake(t *testing.T, opts *verbs.ConnOptions, readDepth uint8) (*conn, *fakePeer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	fakec := make(chan *fakePeer, 1)
	errc := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		f := &fakePeer{t: t, nc: nc, br: bufio.NewReader(nc), seq: fakeStartSeq}
		m, _, err := readCM(f.br)
		if err == nil && m.Type != cmREQ {
			err = errors.New("not a REQ")
		}
		if err != nil {
			errc <- err
			return
		}
		f.expSeq = m.StartSeq
		rep := cmMessage{Type: cmREP, ReadDepth: readDepth, StartSeq: fakeStartSeq}
		if _, err := nc.Write(appendCM(nil, &rep)); err != nil {
			errc <- err
			return
		}
		if m, _, err = readCM(f.br); err == nil && m.Type != cmRTU {
			err = errors.New("not an RTU")
		}
		if err != nil {
			errc <- err
			return
		}
		fakec <- f
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vc, err := (&Provider{}).Dial(ctx, ln.Addr().String(), opts)
	require.NoError(t, err)
	c := vc.(*conn)
	t.Cleanup(func() { _ = c.Close() })
	select {
	case f := <-fakec:
		t.Cleanup(func() { _ = f.nc.Close() })
		return c, f
	case err := <-errc:
		t.Fatal(err)
	}
	return nil, nil
}

// write sends raw bytes.
func (f *fakePeer) write(b []byte) {
	f.t.Helper()
	_, err := f.nc.Write(b)
	require.NoError(f.t, err)
}

// frame sends a frame; payload frames get the payload and a trailer.
func (f *fakePeer) frame(h frameHeader, payload []byte, trailer byte) {
	f.t.Helper()
	b := appendHeader(nil, &h)
	if h.Type.hasPayload() {
		b = append(append(b, payload...), trailer)
	}
	f.write(b)
}

// request sends a request frame with the next sequence number.
func (f *fakePeer) request(h frameHeader, payload []byte) {
	f.t.Helper()
	h.Seq = f.seq
	f.seq++
	f.frame(h, payload, trailerOK)
}

// read reads the next frame of the soft side.
func (f *fakePeer) read() (frameHeader, []byte, byte) {
	f.t.Helper()
	_ = f.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hb [headerLen]byte
	_, err := io.ReadFull(f.br, hb[:])
	require.NoError(f.t, err)
	h, err := parseHeader(hb[:])
	require.NoError(f.t, err)
	if !h.Type.hasPayload() {
		return h, nil, 0
	}
	payload := make([]byte, h.Length)
	_, err = io.ReadFull(f.br, payload)
	require.NoError(f.t, err)
	trailer, err := f.br.ReadByte()
	require.NoError(f.t, err)
	return h, payload, trailer
}

// expectClosed reads until the soft side closes the stream.
func (f *fakePeer) expectClosed() {
	f.t.Helper()
	_ = f.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, f.br)
	var ne net.Error
	require.False(f.t, errors.As(err, &ne) && ne.Timeout(), "the soft side did not close the stream")
}

func waitDone(t *testing.T, c *conn) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
}

func nextCompletion(t *testing.T, c *conn) verbs.Completion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cs [1]verbs.Completion
	for {
		n, err := c.Poll(cs[:])
		require.NoError(t, err)
		if n == 1 {
			return cs[0]
		}
		require.NoError(t, c.Wait(ctx))
	}
}

func recvSetup(size int, n int) (*verbs.Region, *verbs.ConnOptions) {
	var r verbs.Region
	return &r, &verbs.ConnOptions{Setup: func(c verbs.Conn) error {
		var err error
		if r, err = c.AllocRegion(size * max(n, 1)); err != nil {
			return err
		}
		for i := range n {
			if err := c.PostRecv([]verbs.RecvRequest{{ID: uint64(i + 1), SGL: []verbs.SGE{{Region: r, Offset: i * size, Length: size}}}}); err != nil {
				return err
			}
		}
		return nil
	}}
}

// protocolViolation checks that the soft side cut the link for a protocol
// error.
func protocolViolation(t *testing.T, c *conn, f *fakePeer) {
	t.Helper()
	waitDone(t, c)
	var pe *protocolError
	require.True(t, errors.As(c.Err(), &pe), "error %v", c.Err())
	require.ErrorIs(t, c.Err(), verbs.ErrDisconnected)
	f.expectClosed()
}

func TestHostileFrameLengthOverLimit(t *testing.T) {
	c, f := dialFake(t, nil, 16)
	var b [headerLen]byte
	(&frameHeader{Type: frameSend, Seq: f.seq}).put(b[:])
	b[12], b[13], b[14], b[15] = 0xff, 0xff, 0xff, 0xf0 // claims almost 4 GiB
	f.write(b[:])
	protocolViolation(t, c, f)
	require.ErrorIs(t, c.Err(), errFrameLength)
}

// TestHostileLongSendNotBuffered: a Send that claims 8 MiB for a 16-byte
// Receive is refused from its header alone: the payload is neither read
// nor buffered first.
func TestHostileLongSendNotBuffered(t *testing.T) {
	_, opts := recvSetup(16, 1)
	c, f := dialFake(t, opts, 16)
	f.write(appendHeader(nil, &frameHeader{Type: frameSend, Seq: f.seq, Length: MaxMessageSize}))
	h, _, _ := f.read()
	require.Equal(t, frameNak, h.Type)
	require.Equal(t, nakInvalidRequest, h.Code)
	require.Equal(t, uint32(fakeStartSeq), h.Seq, "the NAK names the Send")
	comp := nextCompletion(t, c)
	require.ErrorIs(t, comp.Err(), verbs.ErrLength)
	h, _, _ = f.read()
	require.Equal(t, frameDisconnect, h.Type)
	waitDone(t, c)
}

func TestHostileOutOfSequence(t *testing.T) {
	_, opts := recvSetup(64, 2)
	c, f := dialFake(t, opts, 16)
	f.seq += 5
	f.request(frameHeader{Type: frameSend, Length: 4}, []byte("oops"))
	protocolViolation(t, c, f)
	require.ErrorIs(t, c.Err(), errSequence)
}

func TestHostileAckOfUnsentRequest(t *testing.T) {
	c, f := dialFake(t, nil, 16)
	f.frame(frameHeader{Type: frameAck, Seq: f.expSeq + 3}, nil, 0)
	protocolViolation(t, c, f)
	require.ErrorIs(t, c.Err(), errUnexpectedAck)
}

func TestHostileUnexpectedReadResponse(t *testing.T) {
	c, f := dialFake(t, nil, 16)
	f.frame(frameHeader{Type: frameReadResponse, Seq: f.expSeq, Length: 3}, []byte("abc"), trailerOK)
	protocolViolation(t, c, f)
	require.ErrorIs(t, c.Err(), errUnexpectedRR)
}

func TestHostileBadTrailer(t *testing.T) {
	_, opts := recvSetup(64, 1)
	c, f := dialFake(t, opts, 16)
	h := frameHeader{Type: frameSend, Seq: f.seq, Length: 2}
	f.frame(h, []byte("hi"), 7)
	protocolViolation(t, c, f)
	require.ErrorIs(t, c.Err(), errTrailer)
}

func TestHostileGarbageHeader(t *testing.T) {
	c, f := dialFake(t, nil, 16)
	f.write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	protocolViolation(t, c, f)
}

// TestHostileReadDepth: the peer may not have more RDMA Reads outstanding
// than the responder resources we announced.
func TestHostileReadDepth(t *testing.T) {
	c, f := dialFake(t, &verbs.ConnOptions{Caps: verbs.QueueCaps{ReadDepth: 2}}, 16)
	reg, err := c.AllocRegion(4096)
	require.NoError(t, err)
	win, err := c.AllocWindow()
	require.NoError(t, err)
	require.NoError(t, c.PostSend([]verbs.WorkRequest{{ID: 1, Op: verbs.OpBindWindow, Window: win,
		Bind: verbs.SGE{Region: reg, Length: 4096}, Access: verbs.AccessRemoteRead}}))
	require.NoError(t, nextCompletion(t, c).Err())
	// Holding the memory lock stops the writer in the first response, so
	// the next two fill the queue and the fourth Read is one too many.
	c.memMu.Lock()
	req := frameHeader{Type: frameReadRequest, RKey: win.RKey(), Addr: reg.Addr(0), Length: 4096}
	f.request(req, nil)
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.rrHead == 1 // the writer took it, and waits for the lock
	}, 10*time.Second, time.Millisecond)
	for range 3 {
		f.request(req, nil)
	}
	waitDone(t, c)
	c.memMu.Unlock()
	require.ErrorIs(t, c.Err(), verbs.ErrRemoteInvalidRequest)
	seq := uint32(fakeStartSeq)
	for i := range 3 {
		h, payload, trailer := f.read()
		require.Equal(t, frameReadResponse, h.Type, "response %d", i)
		require.Equal(t, seq+uint32(i), h.Seq)
		require.Len(t, payload, 4096)
		require.Equal(t, byte(trailerOK), trailer)
	}
	h, _, _ := f.read()
	require.Equal(t, frameNak, h.Type)
	require.Equal(t, nakInvalidRequest, h.Code)
	require.Equal(t, seq+3, h.Seq)
	h, _, _ = f.read()
	require.Equal(t, frameDisconnect, h.Type)
}

// TestSendFromClosedRegionIsVoided: a Send whose region is closed before
// it goes out fails locally with a local protection error; the frame on the
// wire is voided by its trailer, so the peer delivers nothing, and the
// queue pair fails (the Read still outstanding is flushed).
func TestSendFromClosedRegionIsVoided(t *testing.T) {
	c, f := dialFake(t, &verbs.ConnOptions{Caps: verbs.QueueCaps{ReadDepth: 1}}, 1)
	src, err := c.AllocRegion(4096)
	require.NoError(t, err)
	dst, err := c.AllocRegion(4096)
	require.NoError(t, err)
	// The first Read stays unanswered, so the second one (read depth 1)
	// holds back the send queue, and the Send behind it.
	require.NoError(t, c.PostSend([]verbs.WorkRequest{
		{ID: 1, Op: verbs.OpRDMARead, SGL: []verbs.SGE{{Region: dst, Length: 8}}, RemoteAddr: 0x1000, RKey: 0x100},
		{ID: 2, Op: verbs.OpRDMARead, SGL: []verbs.SGE{{Region: dst, Offset: 8, Length: 8}}, RemoteAddr: 0x1000, RKey: 0x100},
		{ID: 3, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: src, Length: 100}}},
	}))
	h1, _, _ := f.read()
	require.Equal(t, frameReadRequest, h1.Type)
	require.NoError(t, src.Close())
	require.Nil(t, src.Bytes())
	f.frame(frameHeader{Type: frameReadResponse, Seq: h1.Seq, Length: 8}, []byte("12345678"), trailerOK)
	h2, _, _ := f.read()
	require.Equal(t, frameReadRequest, h2.Type)
	h3, payload, trailer := f.read()
	require.Equal(t, frameSend, h3.Type)
	require.Equal(t, make([]byte, 100), payload)
	require.Equal(t, byte(trailerAborted), trailer)
	h, _, _ := f.read()
	require.Equal(t, frameDisconnect, h.Type)

	comp := nextCompletion(t, c)
	require.Equal(t, uint64(1), comp.ID)
	require.NoError(t, comp.Err())
	require.Equal(t, 8, comp.ByteLen)
	require.Equal(t, []byte("12345678"), dst.Bytes()[:8])
	comp = nextCompletion(t, c)
	require.Equal(t, uint64(2), comp.ID)
	require.ErrorIs(t, comp.Err(), verbs.ErrFlushed)
	comp = nextCompletion(t, c)
	require.Equal(t, uint64(3), comp.ID)
	require.ErrorIs(t, comp.Err(), verbs.ErrLocalProtection)
	waitDone(t, c)
	require.ErrorIs(t, c.Err(), verbs.ErrLocalProtection)
}

// TestVoidedSendIsDropped: a Send whose trailer voids it is not
// delivered; the Receive stays posted.
func TestVoidedSendIsDropped(t *testing.T) {
	reg, opts := recvSetup(64, 1)
	c, f := dialFake(t, opts, 16)
	h := frameHeader{Type: frameSend, Seq: f.seq, Length: 4}
	f.seq++
	f.frame(h, []byte("void"), trailerAborted)
	f.request(frameHeader{Type: frameSend, Length: 4}, []byte("good"))
	comp := nextCompletion(t, c)
	require.NoError(t, comp.Err())
	require.Equal(t, 4, comp.ByteLen)
	require.Equal(t, "good", string((*reg).Bytes()[:4]))
	ack, _, _ := f.read()
	require.Equal(t, frameAck, ack.Type)
	require.Equal(t, h.Seq+1, ack.Seq)
}

// TestSequenceWraparound: requests and acknowledgements work across the
// 2^32 boundary of sequence numbers (the fake starts at 2^32-2).
func TestSequenceWraparound(t *testing.T) {
	reg, opts := recvSetup(64, 4)
	c, f := dialFake(t, opts, 16)
	for i := range 4 {
		f.request(frameHeader{Type: frameSend, Length: 1}, []byte{byte(i)})
		comp := nextCompletion(t, c)
		require.NoError(t, comp.Err())
		require.Equal(t, byte(i), (*reg).Bytes()[i*64])
	}
	require.Equal(t, uint32(2), f.seq)
}

// TestListenerRejectsGarbage: a connection that does not start with a
// valid connect request never reaches Accept.
func TestListenerRejectsGarbage(t *testing.T) {
	ln, err := (&Provider{}).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	for _, b := range [][]byte{
		[]byte("hello, world, this is not a CM message"),
		appendCM(nil, &cmMessage{Type: cmRTU}),
		func() []byte { // a REQ claiming 57 bytes of private data
			b := appendCM(nil, &cmMessage{Type: cmREQ, ReadDepth: 1})
			b[12], b[13] = 0, 57
			return append(b, make([]byte, 57)...)
		}(),
	} {
		nc, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		_, err = nc.Write(b)
		require.NoError(t, err)
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := nc.Read(make([]byte, 1))
		require.Zero(t, n)
		require.ErrorIs(t, err, io.EOF, "the listener closes the connection")
		nc.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = ln.Accept(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "no request was queued")
}

// TestFlushDeferredWhilePlacing: the queue pair fails (here, on a local
// protection error of our own Send) while the reader is placing a Send
// into the head Receive; the flush of that Receive waits for the
// placement, and still happens when the placement ends with a broken
// link.
func TestFlushDeferredWhilePlacing(t *testing.T) {
	_, opts := recvSetup(4096, 2)
	c, f := dialFake(t, opts, 16)
	// Half a Send: the reader waits for the rest, placing.
	f.write(append(appendHeader(nil, &frameHeader{Type: frameSend, Seq: f.seq, Length: 1000}), make([]byte, 500)...))
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.placing
	}, 10*time.Second, time.Millisecond)
	src, err := c.AllocRegion(64)
	require.NoError(t, err)
	require.NoError(t, c.PostSend([]verbs.WorkRequest{{ID: 5, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: src, Offset: 60, Length: 8}}}}))
	comp := nextCompletion(t, c)
	require.Equal(t, uint64(5), comp.ID)
	require.ErrorIs(t, comp.Err(), verbs.ErrLocalProtection)
	waitDone(t, c)
	c.mu.Lock()
	require.Equal(t, uint64(0), c.rqHead, "the Receive being filled is not flushed yet")
	c.mu.Unlock()
	h, _, _ := f.read()
	require.Equal(t, frameDisconnect, h.Type)
	require.NoError(t, f.nc.Close()) // the placement ends with a broken link
	for range 2 {
		comp := nextCompletion(t, c)
		require.ErrorIs(t, comp.Err(), verbs.ErrFlushed, "Receive %d", comp.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.ErrorIs(t, c.Wait(ctx), verbs.ErrLocalProtection, "nothing more to poll")
}

// TestCompletedSendDropsItsMemory: once a Send completed, its send queue
// entry (which stays in the ring until the slot is reused) holds no
// reference to the regions of its scatter list: a caller's buffer
// registered for it, deregistered later, is left to the garbage
// collector rather than kept alive by the queue pair.
func TestCompletedSendDropsItsMemory(t *testing.T) {
	c, f := dialFake(t, nil, 16)
	buf := []byte("a caller's registered buffer")
	r, err := c.RegisterRegion(buf)
	require.NoError(t, err)
	require.NoError(t, c.PostSend([]verbs.WorkRequest{{ID: 5, Op: verbs.OpSend,
		SGL: []verbs.SGE{{Region: r, Length: len(buf)}}}}))
	h, payload, _ := f.read()
	require.Equal(t, frameSend, h.Type)
	require.Equal(t, buf, payload)
	f.frame(frameHeader{Type: frameAck, Seq: h.Seq}, nil, 0)
	comp := nextCompletion(t, c)
	require.Equal(t, uint64(5), comp.ID)
	require.NoError(t, comp.Err())
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.sq {
		for _, s := range c.sq[i].sgl[:cap(c.sq[i].sgl)] {
			require.Nil(t, s.Region, "send queue entry %d still references a region", i)
		}
	}
}
