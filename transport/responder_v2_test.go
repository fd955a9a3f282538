package transport

import (
	"bytes"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The responder's RPC-over-RDMA version 2 (Config.AcceptVersion2), driven
// by the raw requester of the hostile suite (hostile_requester_test.go)
// speaking version 2: what each message must get.

// v2Msg returns a version 2 call: an RDMA2_MSG (or RDMA2_NOMSG if the
// lists hold a position-zero Read chunk and rpc is nil) with rdma_inv_handle
// inv and the lists' chunks, followed by rpc.
func v2Msg(xid, inv uint32, lists chunks.Header, rpc []byte) []byte {
	t := rpcrdma2.HTypeMsg
	if rpc == nil {
		t = rpcrdma2.HTypeNoMsg
	}
	h := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: xid, Vers: rpcrdma2.Version2, Credit: 32, Type: t},
		InvHandle: inv, Chunks: lists}
	return append(h.Append(nil), rpc...)
}

// v2Next parses the next message our responder sent as version 2.
func (e *hpServerEnv) v2Next() (*rpcrdma2.Header, []byte) {
	e.t.Helper()
	b := e.peer.next()
	h := new(rpcrdma2.Header)
	n, err := h.Unmarshal(b, nil)
	if err != nil {
		e.t.Fatalf("our responder sent %x, not a version 2 header: %v", b[:min(len(b), 64)], err)
	}
	return h, b[n:]
}

// v2ExpectError requires the next message to be an RDMA2_ERROR for xid
// with error e2.
func (e *hpServerEnv) v2ExpectError(xid uint32, e2 rpcrdma2.Error) {
	e.t.Helper()
	h, rest := e.v2Next()
	if h.Type != rpcrdma2.HTypeError || h.XID != xid || h.Error != e2 || !h.Response() || h.Credit == 0 || len(rest) != 0 {
		e.t.Fatalf("got %v xid %#x error %+v flags %#x credit %d, want RDMA2_ERROR %+v for xid %#x",
			h.Type, h.XID, h.Error, h.Flags, h.Credit, e2, xid)
	}
}

// v2Reply requires the next message to be an inline version 2 reply to xid
// and returns its RPC reply.
func (e *hpServerEnv) v2Reply(xid uint32) (*rpcrdma2.Header, []byte) {
	e.t.Helper()
	h, rpc := e.v2Next()
	if h.Type != rpcrdma2.HTypeMsg || h.XID != xid || !h.Response() || h.Credit == 0 || h.InvHandle != 0 {
		e.t.Fatalf("got %v xid %#x flags %#x credit %d inv %#x, want an RDMA2_MSG reply for xid %#x",
			h.Type, h.XID, h.Flags, h.Credit, h.InvHandle, xid)
	}
	var rh xdr.ReplyHeader
	if _, err := rh.Unmarshal(rpc); err != nil || rh.XID != xid {
		e.t.Fatalf("the reply's RPC message: %v, xid %#x", err, rh.XID)
	}
	return h, rpc
}

// v2Ping sends a version 2 NULL call and requires its reply.
func (e *hpServerEnv) v2Ping() {
	e.t.Helper()
	if e.served == nil {
		e.serve()
	}
	xid := e.nextXID()
	e.peer.sendMsg(v2Msg(xid, 0, chunks.Header{}, hpRPCCall(xid, hpProcNull, nil)))
	e.v2Reply(xid)
}

// v2ConnProp sends an RDMA2_CONNPROP with props and requires our answer.
func (e *hpServerEnv) v2ConnProp(props rpcrdma2.Properties) *rpcrdma2.Header {
	e.t.Helper()
	xid := e.nextXID()
	h := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: xid, Vers: rpcrdma2.Version2, Credit: 32, Type: rpcrdma2.HTypeConnProp},
		Props: props}
	e.peer.sendMsg(h.Append(nil))
	got, rest := e.v2Next()
	if got.Type != rpcrdma2.HTypeConnProp || got.XID != xid || !got.Response() || got.Credit == 0 || len(rest) != 0 {
		e.t.Fatalf("got %v xid %#x flags %#x credit %d, want our RDMA2_CONNPROP for xid %#x", got.Type, got.XID, got.Flags, got.Credit, xid)
	}
	return got
}

var v2ServerCases = []hpServerCase{
	{
		name: "connprop",
		want: "our RDMA2_CONNPROP: F_RESPONSE, the XID, a grant, Receive Buffer Size 4096 (our Receives), inline reverse requests; " +
			"the requester's 2048 lowers our inline sends; Version 2",
		run: func(e *hpServerEnv) {
			got := e.v2ConnProp(rpcrdma2.Properties{rpcrdma2.ReceiveBufferSize(2048), rpcrdma2.ReverseRequests(rpcrdma2.ReverseGeneral)})
			if n, ok := got.Props.ReceiveBufferSize(); !ok || n != DefaultInline {
				e.t.Errorf("our Receive Buffer Size %d (%v), want %d", n, ok, DefaultInline)
			}
			if r, ok := got.Props.ReverseRequests(); !ok || r != rpcrdma2.ReverseInline {
				e.t.Errorf("our reverse request support %v (%v), want inline", r, ok)
			}
			e.v2Ping()
			if n := e.stats().Negotiated; n.Version != 2 || n.SendInline != 2048 {
				e.t.Errorf("negotiated %+v, want version 2, SendInline 2048", n)
			}
		},
	},
	{
		name: "inline-call",
		want: "an RDMA2_MSG call is answered by an RDMA2_MSG reply (F_RESPONSE, no inv_handle) carrying the echo",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			args := xdr.AppendOpaque(nil, hpPattern(300, 1))
			e.peer.sendMsg(v2Msg(xid, 0, chunks.Header{}, hpRPCCall(xid, hpProcEcho, args)))
			_, rpc := e.v2Reply(xid)
			if want := hpRPCReply(xid, xdr.AcceptSuccess, args); !bytes.Equal(rpc, want) {
				e.t.Fatalf("reply %x, want %x", rpc, want)
			}
			if v := e.stats().Negotiated.Version; v != 2 {
				e.t.Fatalf("Version %d, want 2", v)
			}
		},
	},
	{
		name: "reply-chunk-invalidated",
		want: "a reply through the Reply chunk named by rdma_inv_handle is an RDMA2_NOMSG sent with Send With Invalidate of that handle",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			args := xdr.AppendOpaque(nil, hpPattern(3000, 2))
			rkey, addr := e.peer.expose(nil, 8192)
			e.peer.sendMsg(v2Msg(xid, rkey, chunks.Header{ReplyChunk: chunks.WriteChunk{hpS(rkey, 8192, addr)}},
				hpRPCCall(xid, hpProcEcho, args)))
			h, _ := e.v2Next()
			if h.Type != rpcrdma2.HTypeNoMsg || h.XID != xid || !h.Response() || len(h.Chunks.ReplyChunk) != 1 {
				e.t.Fatalf("got %v xid %#x with %d reply segments, want an RDMA2_NOMSG through the Reply chunk", h.Type, h.XID, len(h.Chunks.ReplyChunk))
			}
			if got, want := e.peer.memAt(addr, int(h.Chunks.ReplyChunk[0].Length)), hpRPCReply(xid, xdr.AcceptSuccess, args); !bytes.Equal(got, want) {
				e.t.Fatalf("the Reply chunk holds %d bytes that differ from the reply", len(got))
			}
			if len(e.peer.invs) != 1 || e.peer.invs[0] != rkey {
				e.t.Fatalf("invalidated %x, want %x (the inv_handle)", e.peer.invs, rkey)
			}
		},
	},
	{
		name: "reply-chunk-not-invalidated",
		want: "with rdma_inv_handle 0, or a handle the call did not offer, the Reply chunk's reply is a plain Send, " +
			"although the requester set R (version 1 would invalidate its one rkey)",
		run: func(e *hpServerEnv) {
			for _, inv := range []uint32{0, 0x7777} {
				xid := e.nextXID()
				args := xdr.AppendOpaque(nil, hpPattern(3000, 2))
				rkey, addr := e.peer.expose(nil, 8192)
				e.peer.sendMsg(v2Msg(xid, inv, chunks.Header{ReplyChunk: chunks.WriteChunk{hpS(rkey, 8192, addr)}},
					hpRPCCall(xid, hpProcEcho, args)))
				if h, _ := e.v2Next(); h.Type != rpcrdma2.HTypeNoMsg || h.XID != xid {
					e.t.Fatalf("got %v xid %#x, want an RDMA2_NOMSG for xid %#x", h.Type, h.XID, xid)
				}
			}
			if len(e.peer.invs) != 0 || e.stats().RemoteInvalidations != 0 {
				e.t.Fatalf("invalidated %x", e.peer.invs)
			}
		},
	},
	{
		name: "long-call",
		want: "an RDMA2_NOMSG Long Call (position-zero Read chunk) is pulled by RDMA Read and answered through its Reply chunk, " +
			"invalidated with the inv_handle (the Reply chunk's rkey, one of two the call named)",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			args := xdr.AppendOpaque(nil, hpPattern(5000, 4))
			rpc := hpRPCCall(xid, hpProcEcho, args)
			crkey, caddr := e.peer.expose(rpc, len(rpc))
			rkey, addr := e.peer.expose(nil, 8192)
			e.peer.sendMsg(v2Msg(xid, rkey, chunks.Header{
				ReadList:   []chunks.ReadSegment{{Position: 0, Segment: hpS(crkey, uint32(len(rpc)), caddr)}},
				ReplyChunk: chunks.WriteChunk{hpS(rkey, 8192, addr)}}, nil))
			h, _ := e.v2Next()
			if h.Type != rpcrdma2.HTypeNoMsg || h.XID != xid || len(h.Chunks.ReplyChunk) != 1 {
				e.t.Fatalf("got %v xid %#x, want an RDMA2_NOMSG through the Reply chunk", h.Type, h.XID)
			}
			if got, want := e.peer.memAt(addr, int(h.Chunks.ReplyChunk[0].Length)), hpRPCReply(xid, xdr.AcceptSuccess, args); !bytes.Equal(got, want) {
				e.t.Fatalf("the Reply chunk holds %d bytes that differ from the reply", len(got))
			}
			if len(e.peer.invs) != 1 || e.peer.invs[0] != rkey {
				e.t.Fatalf("invalidated %x, want %x", e.peer.invs, rkey)
			}
			wantStat(e.t, "ReadChunks", e.stats().ReadChunks, 1)
		},
	},
	{
		name: "reply-resource",
		want: "a reply larger than the requester's Receive Buffer Size, with no Reply chunk: RDMA2_ERR_REPLY_RESOURCE with the bytes needed",
		run: func(e *hpServerEnv) {
			e.v2ConnProp(rpcrdma2.Properties{rpcrdma2.ReceiveBufferSize(1024)})
			xid := e.nextXID()
			args := xdr.AppendOpaque(nil, hpPattern(2000, 3))
			e.peer.sendMsg(v2Msg(xid, 0, chunks.Header{}, hpRPCCall(xid, hpProcEcho, args)))
			e.v2ExpectError(xid, rpcrdma2.Error{Code: rpcrdma2.ErrReplyResource,
				LengthNeeded: uint32(len(hpRPCReply(xid, xdr.AcceptSuccess, args)))})
			e.v2Ping()
		},
	},
	{
		name: "version-1-after-version-2",
		want: "a version 1 call on a version 2 connection: RDMA2_ERR_VERS naming version 2 only; connection up",
		run: func(e *hpServerEnv) {
			e.v2Ping()
			xid := e.nextXID()
			e.peer.sendMsg(e.nullCall(xid))
			e.v2ExpectError(xid, rpcrdma2.Error{Code: rpcrdma2.ErrVers, Vers: rpcrdma2.VersRange{Low: 2, High: 2}})
			e.v2Ping()
			wantStat(e.t, "ErrVersSent", e.stats().ErrVersSent, 1)
		},
	},
	{
		name: "version-2-after-version-1",
		want: "a connection whose first call was version 1 stays version 1: a version 2 call gets version 1's ERR_VERS",
		run: func(e *hpServerEnv) {
			e.ping()
			xid := e.nextXID()
			e.peer.sendMsg(v2Msg(xid, 0, chunks.Header{}, hpRPCCall(xid, hpProcNull, nil)))
			e.expectError(xid, chunks.CodeVers)
			e.ping()
			if v := e.stats().Negotiated.Version; v != 1 {
				e.t.Fatalf("Version %d, want 1", v)
			}
		},
	},
	{
		name: "unknown-header-type",
		want: "header type 6: RDMA2_ERR_INVAL_HTYPE; connection up",
		run: func(e *hpServerEnv) {
			e.v2Ping()
			xid := e.nextXID()
			e.peer.sendMsg(hpWords(xid, 2, 32, 6, 0, 0, 0, 0, 0))
			e.v2ExpectError(xid, rpcrdma2.Error{Code: rpcrdma2.ErrInvalHType})
			e.v2Ping()
		},
	},
	{
		name: "bad-property",
		want: "an RDMA2_CONNPROP whose Receive Buffer Size is 3 bytes: RDMA2_ERR_BAD_XDR; our inline threshold unchanged",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.peer.sendMsg(hpWords(xid, 2, 32, 5, 0, 1, 1, 3, 0x00010000))
			e.v2ExpectError(xid, rpcrdma2.Error{Code: rpcrdma2.ErrBadXDR})
			e.v2Ping()
			if n := e.stats().Negotiated.SendInline; n != DefaultInline {
				e.t.Fatalf("SendInline %d, want %d", n, DefaultInline)
			}
		},
	},
	{
		name: "error-from-requester",
		want: "an RDMA2_ERROR from the requester, answering no reverse call, is dropped (ReverseDropped 1); connection up",
		run: func(e *hpServerEnv) {
			e.v2Ping()
			e.peer.sendMsg(hpWords(e.nextXID(), 2, 32, 4, 1, 9))
			e.v2Ping()
			wantStat(e.t, "ReverseDropped", e.stats().ReverseDropped, 1)
			wantStat(e.t, "Dropped", e.stats().Dropped, 0)
		},
	},
	{
		name: "reply-from-requester",
		want: "an RDMA2_MSG with F_RESPONSE (a reply to a reverse call never made) is dropped (ReverseDropped 1); connection up",
		run: func(e *hpServerEnv) {
			e.v2Ping()
			xid := e.nextXID()
			h := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: xid, Vers: 2, Credit: 32, Type: rpcrdma2.HTypeMsg, Flags: rpcrdma2.FlagResponse}}
			e.peer.sendMsg(append(h.Append(nil), hpRPCReply(xid, xdr.AcceptSuccess, nil)...))
			e.v2Ping()
			wantStat(e.t, "ReverseDropped", e.stats().ReverseDropped, 1)
			wantStat(e.t, "Dropped", e.stats().Dropped, 0)
		},
	},
	{
		name: "too-many-segments",
		want: "a Reply chunk of 9 segments to a responder that takes 8: RDMA2_ERR_SEGMENTS naming 8",
		cfg:  Config{Limits: chunks.Limits{MaxReadChunks: 16, MaxWriteChunks: 16, MaxSegments: 8, MaxChunkLength: 1 << 20}},
		run: func(e *hpServerEnv) {
			e.v2Ping()
			xid := e.nextXID()
			e.peer.sendMsg(v2Msg(xid, 0, chunks.Header{ReplyChunk: hpSegs(9, 5, 0x1000)}, hpRPCCall(xid, hpProcNull, nil)))
			e.v2ExpectError(xid, rpcrdma2.Error{Code: rpcrdma2.ErrSegments, MaxSegments: 8})
			e.v2Ping()
		},
	},
	{
		name: "too-many-read-chunks",
		want: "3 Read chunks to a responder that takes 2: RDMA2_ERR_READ_CHUNKS naming 2",
		cfg:  Config{Limits: chunks.Limits{MaxReadChunks: 2, MaxWriteChunks: 16, MaxSegments: 8, MaxChunkLength: 1 << 20}},
		run: func(e *hpServerEnv) {
			e.v2Ping()
			xid := e.nextXID()
			var reads []chunks.ReadSegment
			for i := range 3 {
				reads = append(reads, chunks.ReadSegment{Position: uint32(100 + 8*i), Segment: hpS(5, 8, 0x1000)})
			}
			e.peer.sendMsg(v2Msg(xid, 0, chunks.Header{ReadList: reads}, hpRPCCall(xid, hpProcNull, make([]byte, 200))))
			e.v2ExpectError(xid, rpcrdma2.Error{Code: rpcrdma2.ErrReadChunks, MaxChunks: 2})
			e.v2Ping()
		},
	},
	{
		name: "connprop-flood",
		want: "100 RDMA2_CONNPROPs in a row: each answered like a call (a credit each), the last Receive Buffer Size " +
			"that is smaller wins; nothing else changes and calls still work",
		run: func(e *hpServerEnv) {
			for i := range 100 {
				e.v2ConnProp(rpcrdma2.Properties{rpcrdma2.ReceiveBufferSize(uint32(4096 - 8*i))})
			}
			e.v2Ping()
			if n := e.stats().Negotiated.SendInline; n != 4096-8*99 {
				e.t.Fatalf("SendInline %d, want %d", n, 4096-8*99)
			}
		},
	},
	{
		name: "connprop-unknown-properties",
		want: "an RDMA2_CONNPROP of 60 properties of unknown ids and odd lengths: answered, all skipped",
		run: func(e *hpServerEnv) {
			var ps rpcrdma2.Properties
			for i := range 60 {
				ps = append(ps, rpcrdma2.Property{Which: rpcrdma2.PropID(100 + i), Data: hpPattern(i%7, byte(i))})
			}
			e.v2ConnProp(ps)
			e.v2Ping()
			if n := e.stats().Negotiated.SendInline; n != DefaultInline {
				e.t.Fatalf("SendInline %d, want %d", n, DefaultInline)
			}
		},
	},
	{
		name: "connprop-too-many-properties",
		want: "an RDMA2_CONNPROP claiming 65 properties: RDMA2_ERR_BAD_XDR before any is read",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.peer.sendMsg(hpWords(xid, 2, 32, 5, 0, 65))
			e.v2ExpectError(xid, rpcrdma2.Error{Code: rpcrdma2.ErrBadXDR})
			e.v2Ping()
		},
	},
	{
		name: "connprop-tiny-buffer",
		want: "a Receive Buffer Size of 16 bytes is taken as 1,024 (the least RFC 8797 can say): calls still answered inline",
		run: func(e *hpServerEnv) {
			e.v2ConnProp(rpcrdma2.Properties{rpcrdma2.ReceiveBufferSize(16)})
			e.v2Ping()
			if n := e.stats().Negotiated.SendInline; n != 1024 {
				e.t.Fatalf("SendInline %d, want 1024", n)
			}
		},
	},
	{
		name: "connprop-after-calls",
		want: "an RDMA2_CONNPROP after calls is answered too; a later, larger Receive Buffer Size does not raise the threshold",
		run: func(e *hpServerEnv) {
			e.v2Ping()
			e.v2ConnProp(rpcrdma2.Properties{rpcrdma2.ReceiveBufferSize(2048)})
			e.v2ConnProp(rpcrdma2.Properties{rpcrdma2.ReceiveBufferSize(65536)})
			e.v2Ping()
			if n := e.stats().Negotiated.SendInline; n != 2048 {
				e.t.Fatalf("SendInline %d, want 2048", n)
			}
		},
	},
	{
		name: "truncated-prefix",
		want: "18 bytes of version 2: RDMA2_ERR_BAD_XDR for the XID it has; connection up",
		run: func(e *hpServerEnv) {
			e.v2Ping()
			xid := e.nextXID()
			e.peer.sendMsg(hpWords(xid, 2, 32, 0, 0)[:18])
			e.v2ExpectError(xid, rpcrdma2.Error{Code: rpcrdma2.ErrBadXDR})
			e.v2Ping()
		},
	},
	{
		name: "short-message",
		want: "12 bytes (no XID to answer) on a version 2 connection: dropped; connection up",
		run: func(e *hpServerEnv) {
			e.v2Ping()
			e.peer.sendMsg(hpWords(1, 2, 32))
			e.v2Ping()
			wantStat(e.t, "Dropped", e.stats().Dropped, 1)
		},
	},
	{
		name: "nomsg-without-call-chunk",
		want: "an RDMA2_NOMSG with no position-zero Read chunk: RDMA2_ERR_BAD_XDR",
		run: func(e *hpServerEnv) {
			e.v2Ping()
			xid := e.nextXID()
			e.peer.sendMsg(v2Msg(xid, 0, chunks.Header{}, nil))
			e.v2ExpectError(xid, rpcrdma2.Error{Code: rpcrdma2.ErrBadXDR})
			e.v2Ping()
		},
	},
	{
		name: "inline-xid-mismatch",
		want: "an RDMA2_MSG whose RPC message has another XID: RDMA2_ERR_BAD_XDR",
		run: func(e *hpServerEnv) {
			e.v2Ping()
			xid := e.nextXID()
			e.peer.sendMsg(v2Msg(xid, 0, chunks.Header{}, hpRPCCall(xid+100, hpProcNull, nil)))
			e.v2ExpectError(xid, rpcrdma2.Error{Code: rpcrdma2.ErrBadXDR})
			e.v2Ping()
		},
	},
}

func TestVersion2Responder(t *testing.T) { runV2ServerCases(t, v2ServerCases) }

// runV2ServerCases runs cases against our responder accepting version 2,
// each a subtest that describes its expectation when it fails.
func runV2ServerCases(t *testing.T, cases []hpServerCase) {
	for _, tc := range cases {
		tc.cfg.AcceptVersion2 = true
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Log(hpDescribe(tc.name, tc.want))
				}
			}()
			hpRunServer(t, tc)
		})
	}
}

// Without Config.AcceptVersion2 a version 2 message gets version 1's
// ERR_VERS and the connection runs version 1 (hostile case
// header/version-2 too).
func TestVersion2NotAccepted(t *testing.T) {
	hpRunServer(t, hpServerCase{name: "v2-not-accepted", run: func(e *hpServerEnv) {
		xid := e.nextXID()
		e.peer.sendMsg(v2Msg(xid, 0, chunks.Header{}, hpRPCCall(xid, hpProcNull, nil)))
		e.expectError(xid, chunks.CodeVers)
		e.ping()
		if v := e.stats().Negotiated.Version; v != 1 {
			t.Fatalf("Version %d, want 1", v)
		}
	}})
}
