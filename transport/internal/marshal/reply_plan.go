package marshal

import (
	"errors"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ReplyPlan is a responder's decision for one reply (RFC 8166 §3.5.4 to
// §3.5.6, §4.3.2, §4.3.3).
type ReplyPlan struct {
	// Proc is ProcMsg (the reply, reduced or not, is inline) or ProcNoMsg
	// (the reply went through the Reply chunk).
	Proc chunks.Proc
	// Data is the DDP-eligible result RDMA-written into the requester's
	// first Write chunk; Data.Present is false when nothing is written.
	Data DataItem
	// InlineLen is the number of RPC message bytes in the Send.
	InlineLen int
	// ReplyLen is the number of bytes written into the Reply chunk.
	ReplyLen int
	// HeaderLen is the exact size of the reply's transport header.
	HeaderLen int
}

// ReplyInput describes one reply for PlanReply.
type ReplyInput struct {
	// MsgLen is the length of the whole RPC reply message.
	MsgLen int
	// Data is the DDP-eligible result the upper-layer binding found in the
	// reply (NFSv3 READ data), if any.
	Data DataItem
	// Call is the transport header of the call being answered: its Write
	// list and Reply chunk are what the requester offered.
	Call *chunks.Header
	// InlineWhenFits sends the reply inline when it fits even though the
	// requester offered a Reply chunk; otherwise an offered Reply chunk
	// that is large enough is always used, as Linux's svcrdma does.
	InlineWhenFits bool
}

// Errors of reply planning. Each means the responder answers ERR_CHUNK
// (RFC 8166 §4.5.3): the requester did not provide the room the reply needs.
var (
	// ErrReplyChunkTooSmall: the reply does not fit inline and the Reply
	// chunk is absent or too small.
	ErrReplyChunkTooSmall = errors.New("rpcrdma: reply does not fit inline and the Reply chunk is too small")
	// ErrWriteChunkTooSmall: the DDP-eligible result is larger than the
	// Write chunk the requester offered for it.
	ErrWriteChunkTooSmall = errors.New("rpcrdma: DDP-eligible result exceeds the Write chunk")
	// ErrReplyHeaderTooLarge: the reply goes through the Reply chunk, but
	// its transport header, which echoes every segment the requester
	// offered, does not fit the inline threshold by itself. The requester
	// offered more segments than its own receive size can take back (RFC
	// 8166 §3.3.2: no message may exceed the receiver's inline threshold).
	ErrReplyHeaderTooLarge = errors.New("rpcrdma: the reply's transport header alone exceeds the inline threshold")
)

// PlanReply chooses how a responder conveys a reply to a call whose transport
// header is in.Call, with inline threshold sendInline:
//
//   - a DDP-eligible result goes into the first Write chunk when the
//     requester offered one (RFC 8166 §3.5.5), its length reported in the
//     reply's Write list; a result larger than the chunk is an error;
//   - the (possibly reduced) reply goes through the Reply chunk
//     (RDMA_NOMSG) if one was offered, is large enough, and the header
//     echoing the offered segments fits the threshold by itself, as
//     Linux's svcrdma does: the requester then finds the reply where it
//     wants it (the Linux client in its pages, with no copy out of the
//     receive buffer: its fixup_copy_count) and the Send may invalidate
//     the call's one rkey;
//   - else inline if it fits with its header (with InlineWhenFits, inline
//     first: RFC 8166 §3.5.6 lets a responder use an offered Reply chunk
//     or not, "MAY", and saves an RDMA Write that way);
//   - else the reply cannot be sent: ERR_CHUNK.
func PlanReply(in ReplyInput, sendInline int) (ReplyPlan, error) {
	var p ReplyPlan
	if in.Data.Present && (in.Data.Off < 0 || in.Data.N < 0 || in.Data.end() > in.MsgLen) {
		return p, ErrBadDataItem
	}
	inline := in.MsgLen
	// The Write list of the reply echoes every Write chunk of the call,
	// with the lengths actually written (zero for unused chunks).
	c := chunks.Counts{WriteChunks: len(in.Call.WriteList)}
	for _, wc := range in.Call.WriteList {
		c.WriteSegments += len(wc)
	}
	if in.Data.Present && len(in.Call.WriteList) > 0 {
		if uint64(in.Data.N) > in.Call.WriteList[0].Length() {
			return p, ErrWriteChunkTooSmall
		}
		p.Data = in.Data
		inline -= in.Data.end() - in.Data.Off
	}
	hdr := chunks.Size(c)
	fitsInline := hdr+inline <= sendInline
	if fitsInline && (in.InlineWhenFits || !in.Call.HasReplyChunk) {
		p.Proc, p.InlineLen, p.HeaderLen = chunks.ProcMsg, inline, hdr
		return p, nil
	}
	if !in.Call.HasReplyChunk || uint64(inline) > in.Call.ReplyChunk.Length() {
		if fitsInline {
			p.Proc, p.InlineLen, p.HeaderLen = chunks.ProcMsg, inline, hdr
			return p, nil
		}
		return p, ErrReplyChunkTooSmall
	}
	rc := c
	rc.HasReplyChunk, rc.ReplySegments = true, len(in.Call.ReplyChunk)
	if rhdr := chunks.Size(rc); rhdr > sendInline {
		if fitsInline {
			p.Proc, p.InlineLen, p.HeaderLen = chunks.ProcMsg, inline, hdr
			return p, nil
		}
		return ReplyPlan{}, ErrReplyHeaderTooLarge
	}
	p.Proc, p.ReplyLen, p.HeaderLen = chunks.ProcNoMsg, inline, chunks.Size(rc)
	return p, nil
}

// AppendEchoChunk appends to dst a copy of the chunk offered, with segment
// lengths set to the n bytes actually written into it, filled in order (RFC
// 8166 §4.3.2: "the responder ... updates the segment lengths"). Segments
// past the data get length 0.
func AppendEchoChunk(dst chunks.WriteChunk, offered chunks.WriteChunk, n int) chunks.WriteChunk {
	left := uint64(n)
	for _, s := range offered {
		l := min(uint64(s.Length), left)
		left -= l
		s.Length = uint32(l)
		dst = append(dst, s)
	}
	return dst
}

// PaddedLen returns the length a data item of n bytes occupies in an XDR
// stream.
func PaddedLen(n int) int { return xdr.RoundUp(n) }
