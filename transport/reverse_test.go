package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Reverse-direction RPC on version 2 connections (reverse_call.go,
// reverse_serve.go): a callback program run both ways between our two
// sides, the refusals, the failures a caller must see, and raw peers on
// either side sending what a conforming one would not.

// revPair connects a requester offering version 2, serving reverse calls
// with h (nil: none), to our responder accepting version 2; offer false
// makes the requester speak version 1.
func revPair(t *testing.T, h ReverseHandler, offer bool) (cli, srv *Conn) {
	t.Helper()
	l, err := Listen(protoNet.listen, &Config{Provider: protoNet.provider(false), AcceptVersion2: true})
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	t.Cleanup(func() { _ = l.Close(); v2Refused.Delete(addr) })
	accepted := make(chan *Conn, 1)
	go func() {
		c, _ := l.AcceptRDMA()
		accepted <- c
	}()
	ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
	defer cancel()
	cli, err = Dial(ctx, addr, &Config{Provider: protoNet.provider(true), OfferVersion2: offer, ReverseHandler: h})
	if err != nil {
		t.Fatal(err)
	}
	srv = <-accepted
	if srv == nil {
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { _ = cli.Close(); _ = srv.Close() })
	// The responder learns of the requester's support from its
	// RDMA2_CONNPROP, which the Dial waited for the answer to.
	return cli, srv
}

// callArgs returns the arguments of the RPC call msg.
func callArgs(t testing.TB, msg []byte) (xdr.CallHeader, []byte) {
	t.Helper()
	var h xdr.CallHeader
	n, err := h.Unmarshal(msg)
	if err != nil {
		t.Errorf("not an RPC call: %v", err)
		return h, nil
	}
	return h, msg[n:]
}

// replyResults returns the results of the RPC reply msg, which must be
// SUCCESS, to xid.
func replyResults(t testing.TB, xid uint32, msg []byte) []byte {
	t.Helper()
	var h xdr.ReplyHeader
	n, err := h.Unmarshal(msg)
	if err != nil || h.XID != xid || h.AcceptStat != xdr.AcceptSuccess {
		t.Fatalf("reply %x: %v, xid %#x stat %v, want SUCCESS for xid %#x", msg[:min(len(msg), 32)], err, h.XID, h.AcceptStat, xid)
	}
	return msg[n:]
}

// TestReverseCallback runs a callback program both ways: each forward
// call makes the responder call the requester back, with the forward
// call's arguments, and the forward reply carries what the requester's
// handler answered (the bytes reversed). Eight callers at once: at most
// reverseCredits reverse calls are in the handler at any time, more than
// one once the first answer granted them, and every byte arrives.
func TestReverseCallback(t *testing.T) { testReverseCallback(t) }

func testReverseCallback(t *testing.T) {
	var inHandler, most atomic.Int32
	handler := func(ctx context.Context, call []byte) ([]byte, error) {
		n := inHandler.Add(1)
		defer inHandler.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(2 * time.Millisecond)
		h, args := callArgs(t, call)
		out := slices.Clone(args)
		slices.Reverse(out)
		return hpRPCReply(h.XID, xdr.AcceptSuccess, out), nil
	}
	cli, srv := revPair(t, handler, true)
	for _, c := range []*Conn{cli, srv} {
		if n := c.Stats().Negotiated; n.Version != 2 || !n.Reverse {
			t.Fatalf("negotiated %+v, want version 2 with reverse calls", n)
		}
	}
	// The responder's program: one goroutine per call, as an RPC server.
	go func() {
		for {
			msg, err := srv.ReadMsg(nil)
			if err != nil {
				return
			}
			go func() {
				h, args := callArgs(t, msg)
				cb := hpRPCCall(h.XID|0x8000_0000, hpProcEcho, args)
				rep, err := srv.ReverseCall(context.Background(), cb)
				if err != nil {
					t.Errorf("ReverseCall for xid %#x: %v", h.XID, err)
					return
				}
				_ = srv.WriteMsg(hpRPCReply(h.XID, xdr.AcceptSuccess, replyResults(t, h.XID|0x8000_0000, rep)))
			}()
		}
	}()
	const callers, calls = 8, 25
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				xid := uint32(g*1000 + i + 1)
				args := hpPattern(50+int(xid)%900, byte(xid))
				ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
				rep, err := cli.Call(ctx, hpRPCCall(xid, hpProcEcho, args), nil)
				cancel()
				if err != nil {
					t.Errorf("Call %#x: %v", xid, err)
					return
				}
				slices.Reverse(args)
				if got := replyResults(t, xid, rep); !bytes.Equal(got, args) {
					t.Errorf("call %#x: the callback's answer differs", xid)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	wantStat(t, "requester ReverseCalls", cli.Stats().ReverseCalls, callers*calls)
	wantStat(t, "responder ReverseCalls", srv.Stats().ReverseCalls, callers*calls)
	if m := most.Load(); m < 2 || m > reverseCredits {
		t.Fatalf("at most %d reverse calls were in the handler at once, want 2..%d", m, reverseCredits)
	}
}

// TestReverseCallRefused: ReverseCall fails at once where no reverse call
// can go, with the error that says why.
func TestReverseCallRefused(t *testing.T) {
	call := hpRPCCall(7, hpProcNull, nil)
	cases := []struct {
		name    string
		handler ReverseHandler
		offer   bool
		msg     []byte
		want    error
	}{
		{"version-1", func(context.Context, []byte) ([]byte, error) { return nil, nil }, false, call, ErrNoReverse},
		{"no-handler", nil, true, call, ErrNoReverse},
		{"not-a-call", echoReverse, true, hpRPCReply(7, xdr.AcceptSuccess, nil), ErrNotCall},
		{"too-large", echoReverse, true, hpRPCCall(7, hpProcEcho, xdr.AppendOpaque(nil, make([]byte, DefaultInline))), ErrMessageTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cli, srv := revPair(t, tc.handler, tc.offer)
			_, err := srv.ReverseCall(context.Background(), tc.msg)
			var oe *net.OpError
			if !errors.Is(err, tc.want) || !errors.As(err, &oe) || oe.Op != "reverse call" {
				t.Fatalf("ReverseCall: %v, want a *net.OpError wrapping %v", err, tc.want)
			}
			if _, err := cli.ReverseCall(context.Background(), call); !errors.Is(err, ErrNotResponder) {
				t.Fatalf("a requester's ReverseCall: %v, want ErrNotResponder", err)
			}
			// The connection goes on.
			if err := cli.WriteMsg(hpRPCCall(8, hpProcNull, nil)); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.ReadMsg(nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// echoReverse answers a reverse call with its arguments.
func echoReverse(_ context.Context, call []byte) ([]byte, error) {
	var h xdr.CallHeader
	n, err := h.Unmarshal(call)
	if err != nil {
		return nil, err
	}
	return hpRPCReply(h.XID, xdr.AcceptSuccess, call[n:]), nil
}

// TestReverseCallFailures: what the responder's caller sees when the
// handler fails, answers wrongly or too much, takes longer than the
// caller waits, or the connection ends under a call.
func TestReverseCallFailures(t *testing.T) {
	release, block := make(chan struct{}), make(chan struct{})
	defer close(block)
	handler := func(ctx context.Context, call []byte) ([]byte, error) {
		h, args := callArgs(t, call)
		switch h.Proc {
		case 10:
			return nil, errors.New("the handler fails")
		case 11:
			return hpRPCReply(h.XID+1, xdr.AcceptSuccess, nil), nil // another XID
		case 12:
			return hpRPCReply(h.XID, xdr.AcceptSuccess, make([]byte, DefaultInline)), nil
		case 13, 14:
			wait := release
			if h.Proc == 14 {
				wait = block
			}
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return hpRPCReply(h.XID, xdr.AcceptSuccess, args), nil
	}
	cli, srv := revPair(t, handler, true)
	ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
	defer cancel()
	for proc := uint32(10); proc <= 12; proc++ {
		rep, err := srv.ReverseCall(ctx, hpRPCCall(proc, proc, nil))
		var h xdr.ReplyHeader
		if _, perr := h.Unmarshal(rep); err != nil || perr != nil || h.XID != proc || h.AcceptStat != xdr.AcceptSystemErr {
			t.Fatalf("proc %d: %v, reply %x, want SYSTEM_ERR for xid %d", proc, err, rep, proc)
		}
	}

	// A caller that stops waiting gets its context's error; the call
	// keeps its credit until the late answer comes, and no other call
	// may take its XID meanwhile.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := srv.ReverseCall(short, hpRPCCall(20, 13, nil))
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("abandoned call: %v, want DeadlineExceeded", err)
	}
	if _, err := srv.ReverseCall(ctx, hpRPCCall(20, hpProcNull, nil)); !errors.Is(err, ErrDuplicateXID) {
		t.Fatalf("a second call with xid 20: %v, want ErrDuplicateXID", err)
	}
	close(release)
	if rep, err := srv.ReverseCall(ctx, hpRPCCall(21, hpProcEcho, []byte{1, 2, 3, 4})); err != nil || !bytes.Equal(replyResults(t, 21, rep), []byte{1, 2, 3, 4}) {
		t.Fatalf("the call after: %v", err)
	}

	// The connection's end fails the calls in flight.
	done := make(chan error, 1)
	go func() {
		_, err := srv.ReverseCall(ctx, hpRPCCall(30, 14, nil))
		done <- err
	}()
	waitCond(t, func() bool { return srv.Stats().ReverseCalls == 6 })
	_ = cli.Close()
	select {
	case err := <-done:
		var oe *net.OpError
		if err == nil || !errors.As(err, &oe) {
			t.Fatalf("the call in flight at the requester's Close: %v, want a *net.OpError", err)
		}
	case <-time.After(hpGuard):
		t.Fatal("the call in flight did not fail with its connection")
	}
	if _, err := srv.ReverseCall(ctx, hpRPCCall(31, hpProcNull, nil)); err == nil {
		t.Fatal("a reverse call on a lost connection succeeded")
	}
}

// waitCond polls cond until it holds, failing t after hpGuard.
func waitCond(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hpGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

// revConnProp is a raw responder's version 2 answer to our RDMA2_CONNPROP,
// checking that it said brs.
func revConnProp(t *testing.T, brs rpcrdma2.ReverseSupport) func(h *rpcrdma2.Header) []byte {
	return func(h *rpcrdma2.Header) []byte {
		if got, ok := h.Props.ReverseRequests(); !ok || got != brs {
			t.Errorf("our RDMA2_CONNPROP says reverse requests %v (%v), want %v", got, ok, brs)
		}
		r := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: h.XID, Vers: 2, Credit: 8, Type: rpcrdma2.HTypeConnProp, Flags: rpcrdma2.FlagResponse}}
		return r.Append(nil)
	}
}

// revCall is a raw responder's reverse call: an RDMA2_MSG without
// RPCRDMA2_F_RESPONSE, asking for 4 credits, with lists and rpc.
func revCall(xid uint32, lists chunks.Header, rpc []byte) []byte {
	h := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: xid, Vers: 2, Credit: 4, Type: rpcrdma2.HTypeMsg}, Chunks: lists}
	if rpc == nil {
		h.Type = rpcrdma2.HTypeNoMsg
	}
	return append(h.Append(nil), rpc...)
}

// TestReverseServeRaw: a raw responder calls our requester back.
func TestReverseServeRaw(t *testing.T) {
	t.Run("answered", func(t *testing.T) {
		cli, peer, err := dialRawV2(t, Config{ReverseHandler: echoReverse}, revConnProp(t, rpcrdma2.ReverseInline))
		if err != nil {
			t.Fatal(err)
		}
		args := xdr.AppendOpaque(nil, hpPattern(200, 3))
		peer.sendMsg(revCall(0x77, chunks.Header{}, hpRPCCall(0x77, hpProcEcho, args)))
		var h rpcrdma2.Header
		b := peer.next()
		n, err := h.ParseReply(b, nil)
		if err != nil || h.Type != rpcrdma2.HTypeMsg || h.XID != 0x77 || h.Credit != reverseCredits || h.InvHandle != 0 {
			t.Fatalf("our answer %x: %v, %+v", b[:min(len(b), 40)], err, h.Prefix)
		}
		if got := replyResults(t, 0x77, b[n:]); !bytes.Equal(got, args) {
			t.Fatal("the answer's results differ")
		}
		wantStat(t, "ReverseCalls", cli.Stats().ReverseCalls, 1)
	})
	t.Run("no-handler", func(t *testing.T) {
		cli, peer, err := dialRawV2(t, Config{}, revConnProp(t, rpcrdma2.ReverseNone))
		if err != nil {
			t.Fatal(err)
		}
		peer.sendMsg(revCall(0x78, chunks.Header{}, hpRPCCall(0x78, hpProcNull, nil)))
		// Once it is counted as dropped, a forward call goes out and is
		// the next message: the reverse call was not answered.
		waitCond(t, func() bool { return cli.Stats().ReverseDropped == 1 })
		if err := cli.WriteMsg(hpRPCCall(9, hpProcNull, nil)); err != nil {
			t.Fatal(err)
		}
		var h rpcrdma2.Header
		if b := peer.next(); binary.BigEndian.Uint32(b) != 9 {
			_, _ = h.Unmarshal(b, nil)
			t.Fatalf("got %+v before the forward call", h.Prefix)
		}
		wantStat(t, "ReverseCalls", cli.Stats().ReverseCalls, 0)
	})
	for _, tc := range []struct {
		name  string
		lists chunks.Header
		rpc   []byte
		want  rpcrdma2.Error
	}{
		{"read-chunk", chunks.Header{ReadList: []chunks.ReadSegment{{Position: 40, Segment: hpS(1, 8, 0)}}},
			hpRPCCall(0x79, hpProcEcho, nil), rpcrdma2.Error{Code: rpcrdma2.ErrReadChunks}},
		{"nomsg", chunks.Header{ReadList: []chunks.ReadSegment{{Position: 0, Segment: hpS(1, 64, 0)}}},
			nil, rpcrdma2.Error{Code: rpcrdma2.ErrReadChunks}},
		{"write-chunk", chunks.Header{WriteList: []chunks.WriteChunk{{hpS(1, 64, 0)}}},
			hpRPCCall(0x79, hpProcRead, nil), rpcrdma2.Error{Code: rpcrdma2.ErrWriteChunks}},
		{"reply-chunk", chunks.Header{ReplyChunk: chunks.WriteChunk{hpS(1, 64, 0)}},
			hpRPCCall(0x79, hpProcNull, nil), rpcrdma2.Error{Code: rpcrdma2.ErrSegments}},
		{"xid-mismatch", chunks.Header{}, hpRPCCall(0x7a, hpProcNull, nil), rpcrdma2.Error{Code: rpcrdma2.ErrBadXDR}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, peer, err := dialRawV2(t, Config{ReverseHandler: echoReverse}, revConnProp(t, rpcrdma2.ReverseInline))
			if err != nil {
				t.Fatal(err)
			}
			peer.sendMsg(revCall(0x79, tc.lists, tc.rpc))
			var h rpcrdma2.Header
			b := peer.next()
			if _, err := h.ParseReply(b, nil); err != nil || h.Type != rpcrdma2.HTypeError || h.XID != 0x79 || h.Error != tc.want {
				t.Fatalf("our answer %x: %v, want RDMA2_ERROR %+v for xid 0x79", b[:min(len(b), 40)], err, tc.want)
			}
			wantStat(t, "ReverseCalls", cli.Stats().ReverseCalls, 0)
			// The connection goes on.
			peer.sendMsg(revCall(0x80, chunks.Header{}, hpRPCCall(0x80, hpProcNull, nil)))
			if b := peer.next(); binary.BigEndian.Uint32(b) != 0x80 {
				t.Fatalf("no answer to the call after")
			}
		})
	}
	t.Run("over-credit", func(t *testing.T) {
		block := make(chan struct{})
		defer close(block)
		cli, peer, err := dialRawV2(t, Config{ReverseHandler: func(ctx context.Context, call []byte) ([]byte, error) {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil, errors.New("blocked")
		}}, revConnProp(t, rpcrdma2.ReverseInline))
		if err != nil {
			t.Fatal(err)
		}
		for xid := range uint32(reverseCredits + 1) {
			peer.sendMsg(revCall(0x90+xid, chunks.Header{}, hpRPCCall(0x90+xid, hpProcNull, nil)))
		}
		peer.waitDown()
		if err := cli.WriteMsg(hpRPCCall(9, hpProcNull, nil)); !errors.Is(err, ErrProtocol) {
			t.Fatalf("a write after %d reverse calls: %v, want ErrProtocol", reverseCredits+1, err)
		}
	})
}

// reverseServerCases: a raw requester that offers reverse calls, or not,
// and answers ours rightly or wrongly.
var reverseServerCases = []hpServerCase{
	{
		name: "reverse-credit",
		want: "one reverse call in flight until the first answer grants 4; the call asks for 4 credits, F_RESPONSE clear",
		run: func(e *hpServerEnv) {
			e.v2ConnProp(rpcrdma2.Properties{rpcrdma2.ReverseRequests(rpcrdma2.ReverseInline)})
			if !e.srv.Stats().Negotiated.Reverse {
				e.t.Fatal("Negotiated.Reverse false after an RDMA2_CONNPROP saying inline")
			}
			errs := make(chan error, 2)
			for xid := uint32(0x100); xid < 0x102; xid++ {
				go func() {
					rep, err := e.srv.ReverseCall(context.Background(), hpRPCCall(xid, hpProcNull, nil))
					if err == nil && binary.BigEndian.Uint32(rep) != xid {
						err = fmt.Errorf("reply %x to xid %#x", rep, xid)
					}
					errs <- err
				}()
			}
			first := e.revNext()
			time.Sleep(200 * time.Millisecond)
			e.peer.poll()
			if len(e.peer.inbox) != 0 {
				e.t.Fatalf("a second reverse call came before any answer granted a credit")
			}
			e.revAnswer(first, reverseCredits)
			second := e.revNext()
			e.revAnswer(second, reverseCredits)
			for range 2 {
				if err := <-errs; err != nil {
					e.t.Fatal(err)
				}
			}
			e.v2Ping()
		},
	},
	{
		name: "reverse-error-answer",
		want: "an RDMA2_ERROR answering a reverse call fails it with a RemoteError carrying the code",
		run: func(e *hpServerEnv) {
			errs := e.revCallOffered(0x200)
			h := e.revNext()
			e.peer.sendMsg(rpcrdma2.AppendError(nil, h.XID, 4, rpcrdma2.Error{Code: rpcrdma2.ErrWriteChunks}))
			var re *RemoteError
			if err := <-errs; !errors.As(err, &re) || re.Code != uint32(rpcrdma2.ErrWriteChunks) || re.XID != 0x200 {
				e.t.Fatalf("ReverseCall: %v, want a RemoteError RDMA2_ERR_WRITE_CHUNKS", err)
			}
			e.v2Ping()
		},
	},
	{
		name: "reverse-chunked-answer",
		want: "an answer to a reverse call that carries a Write chunk fails the call with ErrBadReply",
		run: func(e *hpServerEnv) {
			errs := e.revCallOffered(0x300)
			h := e.revNext()
			a := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: h.XID, Vers: 2, Credit: 4, Type: rpcrdma2.HTypeMsg, Flags: rpcrdma2.FlagResponse},
				Chunks: chunks.Header{WriteList: []chunks.WriteChunk{{hpS(1, 8, 0)}}}}
			e.peer.sendMsg(append(a.Append(nil), hpRPCReply(h.XID, xdr.AcceptSuccess, nil)...))
			if err := <-errs; !errors.Is(err, ErrBadReply) {
				e.t.Fatalf("ReverseCall: %v, want ErrBadReply", err)
			}
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.v2Ping()
		},
	},
	{
		name: "reverse-not-offered",
		want: "a requester that sent no RDMA2_CONNPROP, or whose last one says RDMA2_RVREQSUP_NONE, gets no reverse call: ErrNoReverse",
		run: func(e *hpServerEnv) {
			e.v2Ping() // a version 2 connection without RDMA2_CONNPROP
			if _, err := e.srv.ReverseCall(context.Background(), hpRPCCall(0x400, hpProcNull, nil)); !errors.Is(err, ErrNoReverse) {
				e.t.Fatalf("ReverseCall without RDMA2_CONNPROP: %v, want ErrNoReverse", err)
			}
			e.v2ConnProp(rpcrdma2.Properties{rpcrdma2.ReverseRequests(rpcrdma2.ReverseInline)})
			if !e.srv.Stats().Negotiated.Reverse {
				e.t.Fatal("no reverse calls after RDMA2_RVREQSUP_INLINE")
			}
			// A later RDMA2_CONNPROP saying none withdraws it.
			e.v2ConnProp(rpcrdma2.Properties{rpcrdma2.ReverseRequests(rpcrdma2.ReverseNone)})
			if _, err := e.srv.ReverseCall(context.Background(), hpRPCCall(0x401, hpProcNull, nil)); !errors.Is(err, ErrNoReverse) {
				e.t.Fatalf("ReverseCall after RDMA2_RVREQSUP_NONE: %v, want ErrNoReverse", err)
			}
			e.v2Ping()
		},
	},
}

// revNext requires the next message our responder sent to be a reverse
// call: an RDMA2_MSG without F_RESPONSE asking for reverseCredits, no
// chunks, its RPC call starting with its XID.
func (e *hpServerEnv) revNext() *rpcrdma2.Header {
	e.t.Helper()
	h, rpc := e.v2Next()
	if h.Type != rpcrdma2.HTypeMsg || h.Response() || h.Credit != reverseCredits || h.InvHandle != 0 ||
		h.Chunks.Counts() != (chunks.Counts{}) || len(rpc) < 8 || binary.BigEndian.Uint32(rpc) != h.XID {
		e.t.Fatalf("got %+v with %d bytes, want a reverse call", h.Prefix, len(rpc))
	}
	return h
}

// revCallOffered has the raw requester offer inline reverse calls in its
// RDMA2_CONNPROP, then makes a NULL reverse call with xid on a goroutine
// and returns where its error comes.
func (e *hpServerEnv) revCallOffered(xid uint32) <-chan error {
	e.v2ConnProp(rpcrdma2.Properties{rpcrdma2.ReverseRequests(rpcrdma2.ReverseInline)})
	errs := make(chan error, 1)
	go func() {
		_, err := e.srv.ReverseCall(context.Background(), hpRPCCall(xid, hpProcNull, nil))
		errs <- err
	}()
	return errs
}

// revAnswer answers reverse call h with a NULL reply granting credit.
func (e *hpServerEnv) revAnswer(h *rpcrdma2.Header, credit uint32) {
	a := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: h.XID, Vers: 2, Credit: credit, Type: rpcrdma2.HTypeMsg, Flags: rpcrdma2.FlagResponse}}
	e.peer.sendMsg(append(a.Append(nil), hpRPCReply(h.XID, xdr.AcceptSuccess, nil)...))
}

func TestReverseCallRaw(t *testing.T) { runV2ServerCases(t, reverseServerCases) }
