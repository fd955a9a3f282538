package marshal

import (
	"errors"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// CallForm is how a requester conveys an RPC call (RFC 8166 §3.5).
type CallForm uint8

// Call forms, cheapest first.
const (
	// CallInline: RDMA_MSG with the whole call in the Send (§3.5.1).
	CallInline CallForm = iota
	// CallReadChunk: RDMA_MSG with the DDP-eligible argument removed from
	// the Send and offered as a Read chunk at its XDR position (§3.5.2).
	CallReadChunk
	// CallLong: RDMA_NOMSG with the whole call in a position-zero Read
	// chunk (a Long Call, §3.5.3).
	CallLong
)

// String names the form.
func (f CallForm) String() string {
	switch f {
	case CallInline:
		return "inline"
	case CallReadChunk:
		return "read-chunk"
	case CallLong:
		return "long-call"
	}
	return "call-form(?)"
}

// ReplyForm is what a requester offers for the reply of a call (RFC 8166
// §3.5.4 to §3.5.6).
type ReplyForm uint8

// Reply forms. ReplyWriteChunk and ReplyChunkOnly may both be needed: see
// CallPlan.
const (
	// ReplyInline: no chunk; the largest possible reply fits inline.
	ReplyInline ReplyForm = 1 << iota
	// ReplyWrite: a Write chunk for the DDP-eligible result.
	ReplyWrite
	// ReplyLong: a Reply chunk for the (reduced) reply.
	ReplyLong
)

// DataItem is a DDP-eligible data item inside an RPC message (RFC 8166 §6.1):
// the opaque bytes, not their length word, start at Off and are N bytes long,
// followed by XDR padding to a multiple of four. Present is false when the
// message has no such item.
type DataItem struct {
	Off, N  int
	Present bool
}

// end returns the offset just past the item and its XDR pad.
func (d DataItem) end() int { return d.Off + xdr.RoundUp(d.N) }

// CallInput describes one call for PlanCall.
type CallInput struct {
	// MsgLen is the length of the whole RPC call message.
	MsgLen int
	// Arg is the DDP-eligible argument, if any (NFSv3 WRITE data, SYMLINK
	// path).
	Arg DataItem
	// MaxReply is the largest possible reply message; 0 means unknown,
	// which is treated as MaxRPC.
	MaxReply int
	// ReplyData is the largest DDP-eligible result (the count of an NFSv3
	// READ); 0 means the reply has none.
	ReplyData int
}

// Thresholds are a connection's negotiated inline thresholds (RFC 8166
// §3.3.2, RFC 8797): the largest RPC-over-RDMA message, transport header
// included, that may be sent in one Send each way, and the largest RPC
// message either side accepts at all.
type Thresholds struct {
	// SendInline bounds our Sends; RecvInline bounds the peer's.
	SendInline, RecvInline int
	// MaxRPC bounds an RPC message in either direction.
	MaxRPC int
}

// CallPlan is a requester's decision for one call.
type CallPlan struct {
	Form CallForm
	// Data is the argument moved to a Read chunk (CallReadChunk): its
	// bytes, without XDR padding, travel in the chunk at position
	// Data.Off; the Send carries the message with the data and its pad
	// removed.
	Data DataItem
	// ChunkLen is the length of the Read chunk: Data.N for CallReadChunk,
	// the message length for CallLong, 0 otherwise.
	ChunkLen int
	// InlineLen is the number of RPC message bytes in the Send.
	InlineLen int
	// Reply is a set of ReplyForm bits: ReplyInline alone, or ReplyWrite
	// and/or ReplyLong.
	Reply ReplyForm
	// WriteLen is the size of the Write chunk to offer (ReplyWrite).
	WriteLen int
	// ReplyLen is the size of the Reply chunk to offer (ReplyLong).
	ReplyLen int
	// HeaderLen is the exact size of the call's transport header.
	HeaderLen int
}

// Errors of planning.
var (
	// ErrCallTooLarge: the call exceeds Thresholds.MaxRPC.
	ErrCallTooLarge = errors.New("rpcrdma: call exceeds the maximum RPC size")
	// ErrReplyTooLarge: the call's reply may carry a DDP-eligible result
	// (CallInput.ReplyData) larger than Thresholds.MaxRPC, for which no
	// chunk memory is laid out.
	ErrReplyTooLarge = errors.New("rpcrdma: the reply's DDP-eligible result may exceed the maximum RPC size")
	// ErrBadDataItem: a binding reported a data item outside the message.
	ErrBadDataItem = errors.New("rpcrdma: DDP-eligible item lies outside the message")
)

// replyHeaderLen is the size of the reply header a responder sends back
// for a plan: the Write list echoes our Write chunk (one segment), the Reply
// chunk is absent for an inline reply.
func replyHeaderLen(write bool) int {
	c := chunks.Counts{}
	if write {
		c.WriteChunks, c.WriteSegments = 1, 1
	}
	return chunks.Size(c)
}

// PlanCall chooses how to convey a call and what to offer for its reply, the
// cheapest correct form first, as the Linux client does (rpcrdma_marshal_req):
//
//   - the call: inline (RDMA_MSG) if header and message fit SendInline;
//     else, if the call has a DDP-eligible argument and the rest fits, that
//     argument in a Read chunk at its XDR position; else a Long Call
//     (RDMA_NOMSG with a position-zero Read chunk);
//   - the reply: nothing if the largest possible reply fits RecvInline; else
//     a Write chunk for a DDP-eligible result, plus a Reply chunk if the rest
//     of the reply still might not fit; else a Reply chunk.
//
// Every chunk is offered as one segment (our buffers are contiguous), which
// is what the header sizes assume.
func PlanCall(in CallInput, t Thresholds) (CallPlan, error) {
	var p CallPlan
	if in.MsgLen > t.MaxRPC {
		return p, ErrCallTooLarge
	}
	if in.ReplyData > t.MaxRPC {
		return p, ErrReplyTooLarge
	}
	if in.Arg.Present && (in.Arg.Off < 0 || in.Arg.N < 0 || in.Arg.Off&3 != 0 || in.Arg.end() > in.MsgLen) {
		return p, ErrBadDataItem
	}
	maxReply := in.MaxReply
	if maxReply <= 0 || maxReply > t.MaxRPC {
		maxReply = t.MaxRPC
	}

	// The reply side first: its chunks lengthen the call's header.
	rc := chunks.Counts{}
	switch {
	case maxReply+replyHeaderLen(false) <= t.RecvInline:
		p.Reply = ReplyInline
	case in.ReplyData > 0:
		p.Reply = ReplyWrite
		p.WriteLen = in.ReplyData
		rc.WriteChunks, rc.WriteSegments = 1, 1
		rest := maxReply - xdr.RoundUp(in.ReplyData)
		if rest < 0 || rest+replyHeaderLen(true) > t.RecvInline {
			p.Reply |= ReplyLong
			p.ReplyLen = maxReply
			rc.HasReplyChunk, rc.ReplySegments = true, 1
		}
	default:
		p.Reply = ReplyLong
		p.ReplyLen = maxReply
		rc.HasReplyChunk, rc.ReplySegments = true, 1
	}

	hdr := chunks.Size(rc)
	if hdr+in.MsgLen <= t.SendInline {
		p.Form, p.InlineLen, p.HeaderLen = CallInline, in.MsgLen, hdr
		return p, nil
	}
	rc.ReadSegments = 1
	hdr = chunks.Size(rc)
	if in.Arg.Present && in.Arg.N > 0 {
		inline := in.MsgLen - (in.Arg.end() - in.Arg.Off)
		if hdr+inline <= t.SendInline {
			p.Form, p.Data, p.ChunkLen, p.InlineLen, p.HeaderLen = CallReadChunk, in.Arg, in.Arg.N, inline, hdr
			return p, nil
		}
	}
	p.Form, p.ChunkLen, p.InlineLen, p.HeaderLen = CallLong, in.MsgLen, 0, hdr
	return p, nil
}

// AppendReduced appends msg with the data item d and its XDR pad removed: the
// inline part of a message whose item travels in a chunk (RFC 8166 §3.4.3).
// The item's length word stays.
func AppendReduced(dst, msg []byte, d DataItem) []byte {
	dst = append(dst, msg[:d.Off]...)
	return append(dst, msg[d.end():]...)
}
