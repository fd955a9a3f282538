package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The hostile responders: a raw responder (hostile_peer_test.go) against
// our requester (Dial). The suite is described in hostile_shared_test.go.

// hpClientCase is one hostile responder.
type hpClientCase struct {
	name string
	want string
	// pd is the private data the raw responder accepts with; nil means
	// knfsd's (R=0, 4096/4096), hpNoPD none.
	pd []byte
	// cfg configures our requester (Provider replaced; Binding defaults
	// to hpBinding, Credits to 8).
	cfg  Config
	heap uint64
	reg  int64
	run  func(e *hpClientEnv)
}

// hpClientEnv is the world of one hostile-responder case.
type hpClientEnv struct {
	t     *testing.T
	cli   *Conn
	peer  *hpPeer
	ourPD []byte // the private data of our connect request, as delivered
	xid   uint32
}

func hpRunClient(t *testing.T, tc hpClientCase) {
	var e *hpClientEnv
	hpRun(t, tc.heap, tc.reg, func() *hpCountingProvider {
		vl, err := (&soft.Provider{}).Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = vl.Close() })
		pd := tc.pd
		if pd == nil {
			pd = hpLinuxServerPD
		}
		acc := hpAccept(t, vl, pd)
		prov := &hpCountingProvider{Provider: &soft.Provider{}}
		cfg := tc.cfg
		cfg.Provider = prov
		if cfg.Binding == nil {
			cfg.Binding = hpBinding{}
		}
		if cfg.Credits == 0 {
			cfg.Credits = 8
		}
		ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
		defer cancel()
		cli, err := Dial(ctx, vl.Addr().String(), &cfg)
		if err != nil {
			t.Fatal(err)
		}
		_ = cli.SetDeadline(time.Now().Add(hpGuard))
		t.Cleanup(func() {
			_ = cli.SetDeadline(time.Time{})
			_ = cli.Close()
		})
		var a hpAccepted
		select {
		case a = <-acc:
		case <-time.After(hpGuard):
			t.Fatal("the raw responder did not accept")
		}
		if a.err != nil {
			t.Fatal(a.err)
		}
		t.Cleanup(func() { _ = a.peer.vc.Close() })
		e = &hpClientEnv{t: t, cli: cli, peer: a.peer, ourPD: a.pd, xid: 0x7000_0000}
		return prov
	}, func() { tc.run(e) })
}

// hpReplyHdr starts the header of a raw responder's reply to xid: RDMA_MSG,
// granting 8 credits.
func hpReplyHdr(xid uint32) *hpHdr { return hpHeader(xid).credits(8) }

// hpCall is a call of our requester as the raw responder received it.
type hpCall struct {
	xid uint32
	h   *chunks.Header
	rpc []byte // the inline RPC message (RDMA_MSG)
}

// call sends an RPC call through our requester and returns it as the raw
// responder received it.
func (e *hpClientEnv) call(proc uint32, args []byte) *hpCall {
	e.t.Helper()
	e.xid++
	if err := e.cli.WriteMsg(hpRPCCall(e.xid, proc, args)); err != nil {
		e.t.Fatalf("WriteMsg: %v", err)
	}
	return e.recvCall()
}

func (e *hpClientEnv) recvCall() *hpCall {
	e.t.Helper()
	m := e.peer.next()
	h := new(chunks.Header)
	n, err := h.ParseCall(m, nil)
	if err != nil {
		e.t.Fatalf("our requester sent an invalid call: %v", err)
	}
	return &hpCall{xid: h.XID, h: h, rpc: m[n:]}
}

// replyOK answers c inline with an empty successful result, granting
// credits.
func (e *hpClientEnv) replyOK(c *hpCall, credits uint32) {
	e.t.Helper()
	e.peer.sendMsg(hpMsg(c.xid, credits, hpRPCReply(c.xid, xdr.AcceptSuccess, nil)))
}

// read reads the next reply of our requester.
func (e *hpClientEnv) read() ([]byte, error) {
	e.t.Helper()
	return e.cli.ReadMsg(nil)
}

// expectReply requires the next reply to be for xid with stat and no
// error, and returns its results.
func (e *hpClientEnv) expectReply(xid uint32, stat xdr.AcceptStat) []byte {
	e.t.Helper()
	msg, err := e.read()
	if err != nil {
		e.t.Fatalf("ReadMsg: %v", err)
	}
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(msg)
	if err != nil || rh.XID != xid || rh.Stat != xdr.MsgAccepted || rh.AcceptStat != stat {
		e.t.Fatalf("reply %+v (%v), want xid %#x accept_stat %v", rh, err, xid, stat)
	}
	return msg[off:]
}

// expectFailed requires the call xid to fail with our synthesized
// SYSTEM_ERR reply and an error wrapping ErrBadReply (not a *RemoteError,
// not nil).
func (e *hpClientEnv) expectFailed(xid uint32) {
	e.t.Helper()
	msg, err := e.read()
	if !errors.Is(err, ErrBadReply) {
		e.t.Fatalf("ReadMsg: error %v, want one wrapping ErrBadReply", err)
	}
	var rh xdr.ReplyHeader
	if _, uerr := rh.Unmarshal(msg); uerr != nil || rh.XID != xid || rh.Stat != xdr.MsgAccepted || rh.AcceptStat != xdr.AcceptSystemErr {
		e.t.Fatalf("reply %+v (%v), want xid %#x SYSTEM_ERR", rh, uerr, xid)
	}
}

// warmup completes one call whose reply grants credits, so that several
// calls can be in flight.
func (e *hpClientEnv) warmup(credits uint32) {
	e.t.Helper()
	c := e.call(hpProcNull, nil)
	e.replyOK(c, credits)
	e.expectReply(c.xid, xdr.AcceptSuccess)
}

// ping proves the connection still carries calls.
func (e *hpClientEnv) ping() {
	e.t.Helper()
	c := e.call(hpProcNull, nil)
	e.replyOK(c, 8)
	e.expectReply(c.xid, xdr.AcceptSuccess)
}

// expectDead requires ReadMsg to fail with an error matching one of
// targets, and WriteMsg to fail too.
func (e *hpClientEnv) expectDead(targets ...error) {
	e.t.Helper()
	_, err := e.read()
	if !errorIsAny(err, targets...) {
		e.t.Fatalf("ReadMsg: %v, want one of %v", err, targets)
	}
	if werr := e.cli.WriteMsg(hpRPCCall(0x7fff_0000, hpProcNull, nil)); werr == nil {
		e.t.Fatal("WriteMsg succeeded on a dead connection")
	}
}

func (e *hpClientEnv) stats() Stats { return e.cli.Stats() }

// writeSeg returns the single segment of c's Write chunk.
func (e *hpClientEnv) writeSeg(c *hpCall) chunks.Segment {
	e.t.Helper()
	if len(c.h.WriteList) != 1 || len(c.h.WriteList[0]) != 1 {
		e.t.Fatalf("call offers %d Write chunks, want one of one segment", len(c.h.WriteList))
	}
	return c.h.WriteList[0][0]
}

// replySeg returns the single segment of c's Reply chunk.
func (e *hpClientEnv) replySeg(c *hpCall) chunks.Segment {
	e.t.Helper()
	if len(c.h.ReplyChunk) != 1 {
		e.t.Fatalf("call offers a Reply chunk of %d segments, want 1", len(c.h.ReplyChunk))
	}
	return c.h.ReplyChunk[0]
}

// readReply answers an hpProcRead call c properly: the data by RDMA Write
// into its Write chunk, then RDMA_MSG with the written length and the
// reduced reply.
func (e *hpClientEnv) readReply(c *hpCall, data []byte, op verbs.Opcode, inv uint32) {
	e.t.Helper()
	s := e.writeSeg(c)
	if wc := e.peer.rdmaWrite(s.Handle, s.Offset, data); wc.Status != verbs.StatusSuccess {
		e.t.Fatalf("RDMA Write into the Write chunk: %v", wc.Status)
	}
	msg := hpReplyHdr(c.xid).write(hpS(s.Handle, uint32(len(data)), s.Offset)).
		rpc(hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(uint32(len(data))))).bytes()
	if op == verbs.OpSendWithInvalidate {
		e.peer.sendInv(msg, inv)
	} else {
		e.peer.sendMsg(msg)
	}
}

// expectNegotiated checks our requester's view of the raw responder's
// private data and the fallback thresholds, and that our own offer went out
// at offset 0 of the connect request.
func (e *hpClientEnv) expectNegotiated(status string, inline int) {
	e.t.Helper()
	n := e.stats().Negotiated
	if n.PeerPrivateData != status || n.SendInline != inline || n.RecvInline != inline || n.PeerR {
		e.t.Fatalf("negotiated %+v, want peer private data %q, %d/%d, peer R=0", n, status, inline, inline)
	}
	if !bytes.Equal(e.ourPD[:8], hpLinuxClientPD) || len(e.ourPD) != 56 {
		e.t.Fatalf("our connect request carried %x, want the Linux client's offer at offset 0", e.ourPD)
	}
}

// expectLongCallAtFallback sends a 2000-byte call, which must go as a Long
// Call at the 1024-byte fallback threshold, reads it through its
// position-zero Read chunk and answers it.
func (e *hpClientEnv) expectLongCallAtFallback() {
	e.t.Helper()
	args := xdr.AppendOpaque(nil, hpPattern(2000, 9))
	c := e.call(hpProcEcho, args)
	if c.h.Proc != chunks.ProcNoMsg || len(c.h.ReadList) != 1 || c.h.ReadList[0].Position != 0 {
		e.t.Fatalf("a 2 KiB call at a 1 KiB threshold went as %v with %d Read segments, want a Long Call", c.h.Proc, len(c.h.ReadList))
	}
	rs := c.h.ReadList[0]
	wc, got := e.peer.rdmaRead(rs.Handle, rs.Offset, int(rs.Length))
	if want := hpRPCCall(c.xid, hpProcEcho, args); wc.Status != verbs.StatusSuccess || !bytes.Equal(got, want) {
		e.t.Fatalf("RDMA Read of the Long Call: %v, %d bytes that differ", wc.Status, len(got))
	}
	e.replyOK(c, 8)
	e.expectReply(c.xid, xdr.AcceptSuccess)
}

var hpClientCases = []hpClientCase{
	{
		name: "control/well-behaved-responder",
		want: "a READ answered through its Write chunk with Send With Invalidate of the call's rkey, and a reply through " +
			"the Reply chunk: both complete; RemoteInvalidations = 1, LocalInvalidations = 1",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			data := hpPattern(8192, 4)
			e.readReply(c, data, verbs.OpSendWithInvalidate, e.writeSeg(c).Handle)
			if got := e.expectReply(c.xid, xdr.AcceptSuccess); !bytes.Equal(got, xdr.AppendOpaque(nil, data)) {
				e.t.Fatal("the READ result differs from the data written")
			}
			c = e.call(hpProcBig, nil)
			s := e.replySeg(c)
			reply := hpRPCReply(c.xid, xdr.AcceptSuccess, hpPattern(20000, 5))
			if wc := e.peer.rdmaWrite(s.Handle, s.Offset, reply); wc.Status != verbs.StatusSuccess {
				e.t.Fatalf("RDMA Write into the Reply chunk: %v", wc.Status)
			}
			e.peer.sendMsg(hpReplyHdr(c.xid).proc(chunks.ProcNoMsg).reply(hpS(s.Handle, uint32(len(reply)), s.Offset)).bytes())
			if got := e.expectReply(c.xid, xdr.AcceptSuccess); !bytes.Equal(got, hpPattern(20000, 5)) {
				e.t.Fatal("the long reply differs")
			}
			st := e.stats()
			wantStat(e.t, "RemoteInvalidations", st.RemoteInvalidations, 1)
			wantStat(e.t, "LocalInvalidations", st.LocalInvalidations, 1)
		},
	},
	{
		name: "xid/unknown",
		want: "a reply with an XID matching no call: dropped, BadXIDs = 1; the call still completes with its real reply",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpMsg(0xdead, 8, hpRPCReply(0xdead, xdr.AcceptSuccess, nil)))
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadXIDs", e.stats().BadXIDs, 1)
		},
	},
	{
		name: "xid/rpc-xid-differs-from-rdma-xid",
		want: "a reply whose RPC XID differs from rdma_xid: the call named by rdma_xid fails with a synthesized SYSTEM_ERR reply; BadReplies = 1; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpMsg(c.xid, 8, hpRPCReply(c.xid+1, xdr.AcceptSuccess, nil)))
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "xid/duplicate-reply",
		want: "two replies for one call: the first completes it, the second is dropped (BadXIDs = 1); connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.replyOK(c, 8)
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			e.ping()
			wantStat(e.t, "BadXIDs", e.stats().BadXIDs, 1)
		},
	},
	{
		name: "xid/reply-after-call-completed",
		want: "a late reply for a call already completed and read, sent while another call is in flight: dropped (BadXIDs = 1); the other call completes normally",
		run: func(e *hpClientEnv) {
			c1 := e.call(hpProcNull, nil)
			e.replyOK(c1, 8)
			e.expectReply(c1.xid, xdr.AcceptSuccess)
			c2 := e.call(hpProcNull, nil)
			e.replyOK(c1, 8)
			e.replyOK(c2, 8)
			e.expectReply(c2.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadXIDs", e.stats().BadXIDs, 1)
		},
	},
	{
		name: "header/shorter-than-16-bytes",
		want: "a 12-byte reply (no trustworthy XID): dropped, BadReplies = 1; the call still completes with its real reply",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpReplyHdr(c.xid).truncate(12).bytes())
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
		},
	},
	{
		name: "header/empty-send",
		want: "a zero-length Send: dropped, BadReplies = 1; the call still completes with its real reply",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(nil)
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
		},
	},
	{
		name: "header/version-2",
		want: "a version-2 reply (XID untrusted): dropped, BadReplies = 1; the call still completes with its real reply",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpReplyHdr(c.xid).vers(2).rpc(hpRPCReply(c.xid, xdr.AcceptSuccess, nil)).bytes())
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
		},
	},
	{
		name: "header/unknown-proc",
		want: "rdma_proc 7 in a reply: the call fails with SYSTEM_ERR; BadReplies = 1; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpReplyHdr(c.xid).proc(7).lists().bytes())
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "header/rdma-done",
		want: "RDMA_DONE as a reply: the call fails with SYSTEM_ERR (as Linux fails it with EIO); connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpReplyHdr(c.xid).proc(chunks.ProcDone).lists().bytes())
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "header/2^32-write-segments-claimed",
		want: "a reply's Write chunk claiming 2^32-1 segments: the call fails with SYSTEM_ERR, nothing allocated for the claim; connection up",
		heap: 1 << 20,
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			// One segment follows the claim, then the Send ends.
			e.peer.sendMsg(hpReplyHdr(c.xid).writeClaim(0xffffffff, hpS(1, 2, 3<<32|4)).truncate(44).bytes())
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/reply-with-read-list",
		want: "a reply carrying a Read list: the call fails with SYSTEM_ERR, nothing is read; BadReplies = 1; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpReplyHdr(c.xid).read(0, hpS(0x1234, 40, 0x1000)).rpc(hpRPCReply(c.xid, xdr.AcceptSuccess, nil)).bytes())
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "chunks/nomsg-reply-without-reply-chunk",
		want: "RDMA_NOMSG reply with no Reply chunk (no message at all): the call fails with SYSTEM_ERR and ErrBadReply; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			e.peer.sendMsg(hpReplyHdr(c.xid).proc(chunks.ProcNoMsg).bytes())
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/nomsg-reply-for-call-without-reply-chunk",
		want: "RDMA_NOMSG reply to a call that offered no Reply chunk: the call fails with SYSTEM_ERR, nothing read from our memory; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpReplyHdr(c.xid).proc(chunks.ProcNoMsg).reply(hpS(0x1234, 24, 0)).bytes())
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "chunks/reply-chunk-overrun",
		want: "a Reply chunk reporting 4 bytes more than offered: the call fails with SYSTEM_ERR, nothing read beyond our memory; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			s := e.replySeg(c)
			e.peer.sendMsg(hpReplyHdr(c.xid).proc(chunks.ProcNoMsg).reply(hpS(s.Handle, s.Length+4, s.Offset)).bytes())
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/reply-chunk-claims-4-GiB",
		want: "RDMA_NOMSG reply whose Reply chunk claims 4 GiB - 1 (over Limits.MaxChunkLength): the call fails with SYSTEM_ERR, nothing allocated for the claim; connection up",
		heap: 1 << 20,
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			s := e.replySeg(c)
			e.peer.sendMsg(hpReplyHdr(c.xid).proc(chunks.ProcNoMsg).reply(hpS(s.Handle, 0xffffffff, s.Offset)).bytes())
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/msg-reply-with-nonempty-reply-chunk",
		want: "RDMA_MSG reply that also reports bytes in the Reply chunk: the call fails with SYSTEM_ERR; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			s := e.replySeg(c)
			e.peer.sendMsg(hpReplyHdr(c.xid).reply(hpS(s.Handle, 24, s.Offset)).rpc(hpRPCReply(c.xid, xdr.AcceptSuccess, nil)).bytes())
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/write-chunk-longer-than-offered",
		want: "write chunk data longer than offered (Write list reports 8196 of 8192 bytes): the call fails with SYSTEM_ERR, nothing read beyond our memory; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			e.peer.sendMsg(hpReplyHdr(c.xid).write(hpS(s.Handle, 8196, s.Offset)).rpc(hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(8196))).bytes())
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "chunks/write-length-disagrees-with-rpc",
		want: "Write list reports 100 bytes but the reply's length word says 8192: the call fails with SYSTEM_ERR (no stale memory handed out); connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			e.peer.rdmaWrite(s.Handle, s.Offset, hpPattern(100, 1))
			e.peer.sendMsg(hpReplyHdr(c.xid).write(hpS(s.Handle, 100, s.Offset)).rpc(hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(8192))).bytes())
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/write-chunk-empty-rpc-claims-data",
		want: "Write list reports 0 bytes written and the reply's length word claims 8192 bytes that are not inline either: the call fails with SYSTEM_ERR (no truncated reply handed up); connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			e.peer.sendMsg(hpReplyHdr(c.xid).write(hpS(s.Handle, 0, s.Offset)).rpc(hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(8192))).bytes())
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "chunks/write-chunk-unused-data-inline",
		want: "control: READ data returned inline (within our Receive buffer) with 0 bytes reported in the Write chunk, as the Linux client accepts: the call completes with the inline data",
		pd:   []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x00, 0x03},
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(2000))
			s := e.writeSeg(c)
			data := xdr.AppendOpaque(nil, hpPattern(2000, 6))
			e.peer.sendMsg(hpReplyHdr(c.xid).write(hpS(s.Handle, 0, s.Offset)).rpc(hpRPCReply(c.xid, xdr.AcceptSuccess, data)).bytes())
			if got := e.expectReply(c.xid, xdr.AcceptSuccess); !bytes.Equal(got, data) {
				e.t.Fatal("the inline READ result differs")
			}
		},
	},
	{
		name: "chunks/more-write-chunks-than-offered",
		want: "two Write chunks in the reply of a call that offered one: the call fails with SYSTEM_ERR; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			e.peer.sendMsg(hpReplyHdr(c.xid).write(hpS(s.Handle, 100, s.Offset)).write(hpS(s.Handle, 100, s.Offset+100)).
				rpc(hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(100))).bytes())
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/write-list-not-offered",
		want: "a Write list in the reply of a call that offered none: the call fails with SYSTEM_ERR; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpReplyHdr(c.xid).write(hpS(0x1234, 4, 0)).rpc(hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(4))).bytes())
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "rdma/write-beyond-write-chunk",
		want: "an RDMA Write of 8196 bytes into an 8192-byte Write chunk: refused (remote access) at the peer, our queue pair " +
			"fails and the connection closes: the pending call's ReadMsg returns io.EOF",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			if wc := e.peer.rdmaWrite(s.Handle, s.Offset, hpPattern(8196, 1)); wc.Status != verbs.StatusRemoteAccess {
				e.t.Fatalf("the peer's RDMA Write: %v, want %v", wc.Status, verbs.StatusRemoteAccess)
			}
			e.expectDead(io.EOF)
		},
	},
	{
		name: "rdma/read-beyond-call-memory",
		want: "an RDMA Read past the end of a Long Call's memory: refused at the peer, the connection closes: ReadMsg returns io.EOF",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcEcho, xdr.AppendOpaque(nil, hpPattern(6000, 2)))
			s := e.replySeg(c)
			if wc, _ := e.peer.rdmaRead(s.Handle, s.Offset+uint64(xdr.RoundUp(int(s.Length))), 4); wc.Status != verbs.StatusRemoteAccess {
				e.t.Fatalf("the peer's RDMA Read: %v, want %v", wc.Status, verbs.StatusRemoteAccess)
			}
			e.expectDead(io.EOF)
		},
	},
	{
		name: "rdma/write-after-reply",
		want: "an RDMA Write through a call's rkey after its reply was read (the window was invalidated): refused at the peer, the connection closes: ReadMsg returns io.EOF",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			e.readReply(c, hpPattern(8192, 3), verbs.OpSend, 0)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			s := e.writeSeg(c)
			if wc := e.peer.rdmaWrite(s.Handle, s.Offset, hpPattern(4, 1)); wc.Status != verbs.StatusRemoteAccess {
				e.t.Fatalf("the peer's RDMA Write: %v, want %v", wc.Status, verbs.StatusRemoteAccess)
			}
			e.expectDead(io.EOF)
		},
	},
	{
		name: "rights/read-the-write-chunk",
		want: "an RDMA Read through a READ call's Write chunk rkey (the window is write-only, as Linux registers reply " +
			"buffers): refused at the peer (remote access error), nothing of our memory leaves; ReadMsg returns io.EOF",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			if wc, _ := e.peer.rdmaRead(s.Handle, s.Offset, int(s.Length)); wc.Status != verbs.StatusRemoteAccess {
				e.t.Fatalf("the peer's RDMA Read of a Write chunk: %v, want %v", wc.Status, verbs.StatusRemoteAccess)
			}
			e.expectDead(io.EOF)
		},
	},
	{
		name: "rights/read-the-reply-chunk",
		want: "an RDMA Read through a call's Reply chunk rkey (write-only): refused at the peer; ReadMsg returns io.EOF",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			s := e.replySeg(c)
			if wc, _ := e.peer.rdmaRead(s.Handle, s.Offset, 64); wc.Status != verbs.StatusRemoteAccess {
				e.t.Fatalf("the peer's RDMA Read of a Reply chunk: %v, want %v", wc.Status, verbs.StatusRemoteAccess)
			}
			e.expectDead(io.EOF)
		},
	},
	{
		name: "rights/write-the-read-chunk",
		cfg:  Config{InlineSend: 1024},
		want: "an RDMA Write into a Long Call's Read chunk (the window is read-only): refused at the peer, the call's " +
			"arguments cannot be changed behind our back; ReadMsg returns io.EOF",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcEcho, xdr.AppendOpaque(nil, hpPattern(2000, 9)))
			if len(c.h.ReadList) != 1 {
				e.t.Fatalf("a 2 KiB call at a 1 KiB threshold has %d Read segments, want 1", len(c.h.ReadList))
			}
			rs := c.h.ReadList[0]
			if wc := e.peer.rdmaWrite(rs.Handle, rs.Offset, hpPattern(16, 1)); wc.Status != verbs.StatusRemoteAccess {
				e.t.Fatalf("the peer's RDMA Write into a Read chunk: %v, want %v", wc.Status, verbs.StatusRemoteAccess)
			}
			e.expectDead(io.EOF)
		},
	},
	{
		name: "rights/read-past-the-read-chunk",
		cfg:  Config{InlineSend: 1024},
		want: "an RDMA Read one byte past a Long Call's Read chunk (the window covers exactly the call, not the slot's " +
			"memory with what earlier calls left there): refused at the peer; ReadMsg returns io.EOF",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcEcho, xdr.AppendOpaque(nil, hpPattern(2000, 9)))
			rs := c.h.ReadList[0]
			if wc, _ := e.peer.rdmaRead(rs.Handle, rs.Offset, int(rs.Length)+1); wc.Status != verbs.StatusRemoteAccess {
				e.t.Fatalf("the peer's RDMA Read past the Read chunk: %v, want %v", wc.Status, verbs.StatusRemoteAccess)
			}
			e.expectDead(io.EOF)
		},
	},
	{
		name: "rights/rkeys-unpredictable",
		heap: 4 << 20, // 64 READs of 8 KiB through the raw peer's copies
		want: "the rkeys of 64 successive calls in one slot: each key byte differs from the previous one (a bind must " +
			"change it) and they are not a serial (ibv_inc_rkey would give +1 each time); every call completes",
		run: func(e *hpClientEnv) {
			e.warmup(1) // one credit: every call uses the same slot and window
			var keys []uint8
			serial := true
			for i := range 64 {
				c := e.call(hpProcRead, hpWords(8192))
				s := e.writeSeg(c)
				e.readReply(c, hpPattern(8192, byte(i)), verbs.OpSendWithInvalidate, s.Handle)
				e.expectReply(c.xid, xdr.AcceptSuccess)
				k := uint8(s.Handle)
				if len(keys) > 0 {
					prev := keys[len(keys)-1]
					if k == prev {
						e.t.Fatalf("call %d reuses the key byte %#02x of the call before", i, k)
					}
					serial = serial && k == prev+1
				}
				keys = append(keys, k)
			}
			if serial {
				e.t.Fatalf("key bytes are a serial: %v", keys)
			}
		},
	},
	{
		name: "invalidate/another-calls-rkey",
		want: "a reply sent with Send With Invalidate naming another call's rkey: connection closed with an error wrapping ErrProtocol",
		run: func(e *hpClientEnv) {
			e.warmup(8)
			a := e.call(hpProcBig, nil)
			b := e.call(hpProcBig, nil)
			e.peer.sendInv(hpMsg(a.xid, 8, hpRPCReply(a.xid, xdr.AcceptSuccess, nil)), e.replySeg(b).Handle)
			e.expectDead(ErrProtocol)
		},
	},
	{
		name: "invalidate/unknown-rkey",
		want: "Send With Invalidate naming an rkey we never issued: our Receive fails (remote invalid request), the connection closes; ReadMsg returns an error wrapping verbs.ErrRemoteInvalidRequest",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			e.peer.sendInv(hpMsg(c.xid, 8, hpRPCReply(c.xid, xdr.AcceptSuccess, nil)), 0x00bad0ff)
			e.expectDead(verbs.ErrRemoteInvalidRequest)
		},
	},
	{
		name: "invalidate/unknown-xid",
		want: "Send With Invalidate of an in-flight call's rkey on a reply with an unknown XID: BadXIDs = 1 and the connection closes with an error wrapping ErrProtocol",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			e.peer.sendInv(hpMsg(0xdead, 8, hpRPCReply(0xdead, xdr.AcceptSuccess, nil)), e.replySeg(c).Handle)
			e.expectDead(ErrProtocol)
			wantStat(e.t, "BadXIDs", e.stats().BadXIDs, 1)
		},
	},
	{
		name: "invalidate/call-without-chunks",
		want: "Send With Invalidate of a live rkey on the reply of a call that has no chunks: connection closed with an error wrapping ErrProtocol",
		run: func(e *hpClientEnv) {
			e.warmup(8)
			big := e.call(hpProcBig, nil)
			c := e.call(hpProcNull, nil)
			e.peer.sendInv(hpMsg(c.xid, 8, hpRPCReply(c.xid, xdr.AcceptSuccess, nil)), e.replySeg(big).Handle)
			e.expectDead(ErrProtocol)
		},
	},
	{
		name: "credits/grant-0",
		want: "a reply granting 0 credits is treated as 1 (Negotiated.Credits = 1); calls keep flowing",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.replyOK(c, 0)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			if got := e.stats().Negotiated.Credits; got != 1 {
				e.t.Fatalf("credit limit %d after a grant of 0, want 1", got)
			}
			c = e.call(hpProcNull, nil)
			e.replyOK(c, 0)
			e.expectReply(c.xid, xdr.AcceptSuccess)
		},
	},
	{
		name: "credits/grant-2^32-1",
		want: "a reply granting 2^32-1 credits is clamped to what we asked for (Credits = 8)",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			if c.h.Credits != 8 {
				e.t.Fatalf("our call asks for %d credits, want 8", c.h.Credits)
			}
			e.replyOK(c, 0xffffffff)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			if got := e.stats().Negotiated.Credits; got != 8 {
				e.t.Fatalf("credit limit %d after a grant of 2^32-1, want 8", got)
			}
			e.ping()
		},
	},
	{
		name: "overflow/reply-larger-than-receive",
		want: "an 8 KiB reply into our 4096-byte Receive: the peer's Send fails, our Receive fails (length) and the connection closes; ReadMsg returns an error wrapping verbs.ErrLength",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			msg := hpMsg(c.xid, 8, hpRPCReply(c.xid, xdr.AcceptSuccess, hpPattern(8192, 1)))
			if wc := e.peer.wait(e.peer.sendAsync(msg, verbs.OpSend, 0)); wc.Status != verbs.StatusRemoteInvalidRequest {
				e.t.Fatalf("the peer's Send: %v, want %v", wc.Status, verbs.StatusRemoteInvalidRequest)
			}
			e.expectDead(verbs.ErrLength)
		},
	},
	{
		name: "error/err-chunk",
		want: "RDMA_ERROR ERR_CHUNK: ReadMsg returns a synthesized SYSTEM_ERR reply with a *RemoteError (code 2); RemoteErrors = 1; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(chunks.AppendErrChunk(nil, c.xid, 8))
			msg, err := e.read()
			var re *RemoteError
			if !errors.As(err, &re) || re.XID != c.xid || re.Code != 2 {
				e.t.Fatalf("ReadMsg error %v, want a *RemoteError ERR_CHUNK for xid %#x", err, c.xid)
			}
			var rh xdr.ReplyHeader
			if _, err := rh.Unmarshal(msg); err != nil || rh.XID != c.xid || rh.AcceptStat != xdr.AcceptSystemErr {
				e.t.Fatalf("synthesized reply %+v (%v)", rh, err)
			}
			wantStat(e.t, "RemoteErrors", e.stats().RemoteErrors, 1)
			e.ping()
		},
	},
	{
		name: "error/err-vers",
		want: "RDMA_ERROR ERR_VERS 2..3: SYSTEM_ERR reply with a *RemoteError (code 1, low 2, high 3); connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpReplyHdr(c.xid).proc(chunks.ProcError).lists(uint32(chunks.CodeVers), 2, 3).bytes())
			_, err := e.read()
			var re *RemoteError
			if !errors.As(err, &re) || re.Code != 1 || re.Low != 2 || re.High != 3 {
				e.t.Fatalf("ReadMsg error %v, want a *RemoteError ERR_VERS 2..3", err)
			}
			e.ping()
		},
	},
	{
		name: "error/unknown-error-code",
		want: "RDMA_ERROR with rdma_err 9: the call fails with SYSTEM_ERR and no *RemoteError; BadReplies = 1; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpReplyHdr(c.xid).proc(chunks.ProcError).lists(9).bytes())
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "error/unknown-xid",
		want: "an RDMA_ERROR for an XID matching no call: dropped, BadXIDs = 1; the call completes with its real reply",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(chunks.AppendErrChunk(nil, 0xdead, 8))
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadXIDs", e.stats().BadXIDs, 1)
		},
	},
	{
		name: "disconnect/mid-call",
		want: "the responder disconnects with a call in flight: the pending ReadMsg returns io.EOF, WriteMsg fails; no goroutine left",
		run: func(e *hpClientEnv) {
			e.call(hpProcNull, nil)
			pending := make(chan error, 1)
			go func() {
				_, err := e.cli.ReadMsg(nil)
				pending <- err
			}()
			_ = e.peer.vc.Close()
			select {
			case err := <-pending:
				if !errors.Is(err, io.EOF) {
					e.t.Fatalf("pending ReadMsg: %v, want io.EOF", err)
				}
			case <-time.After(hpGuard):
				e.t.Fatal("pending ReadMsg did not return")
			}
			if err := e.cli.WriteMsg(hpRPCCall(0x7fff_0001, hpProcNull, nil)); err == nil {
				e.t.Fatal("WriteMsg succeeded after the disconnect")
			}
		},
	},
	{
		name: "disconnect/right-after-accept",
		want: "the responder disconnects before any call: ReadMsg returns io.EOF and WriteMsg fails; no goroutine left",
		run: func(e *hpClientEnv) {
			_ = e.peer.vc.Close()
			e.expectDead(io.EOF)
		},
	},
	{
		name: "connect/196-bytes-of-garbage-private-data",
		want: "accept private data of 196 garbage bytes: \"not-found\", fallback 1024/1024: a 2 KiB call goes as a Long Call and completes",
		pd:   hpGarbage(196, 0x3c),
		run: func(e *hpClientEnv) {
			e.expectNegotiated("not-found", 1024)
			e.expectLongCallAtFallback()
		},
	},
	{
		name: "connect/no-private-data",
		want: "no accept private data (196 zero bytes): \"empty\", fallback 1024/1024 (as with NFS-Ganesha); calls complete",
		pd:   hpNoPD,
		run: func(e *hpClientEnv) {
			e.expectNegotiated("empty", 1024)
			e.expectLongCallAtFallback()
		},
	},
	{
		name: "connect/version-2-private-data",
		want: "accept private data of RFC 8797 version 2: \"bad-version\", fallback 1024/1024; calls complete",
		pd:   []byte{0xf6, 0xab, 0x0e, 0x18, 0x02, 0x00, 0x03, 0x03},
		run: func(e *hpClientEnv) {
			e.expectNegotiated("bad-version", 1024)
			e.expectLongCallAtFallback()
		},
	},
	{
		name: "connect/truncated-private-data",
		want: "format identifier in the last 4 of the 196 bytes: \"truncated\", fallback 1024/1024; calls complete",
		pd:   append(make([]byte, 192), 0xf6, 0xab, 0x0e, 0x18),
		run: func(e *hpClientEnv) {
			e.expectNegotiated("truncated", 1024)
			e.expectLongCallAtFallback()
		},
	},
}

func TestHostileResponder(t *testing.T) {
	for _, tc := range hpClientCases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Log(hpDescribe(tc.name, tc.want))
				}
			}()
			hpRunClient(t, tc)
		})
	}
}
