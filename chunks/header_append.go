package chunks

import (
	"slices"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Len returns the exact number of bytes Append writes for h.
func (h *Header) Len() int {
	switch h.Proc {
	case ProcMsg, ProcNoMsg:
		return Size(h.Counts())
	case ProcError:
		if h.ErrCode == CodeVers {
			return ErrVersSize
		}
		return ErrChunkSize
	}
	return MinHeaderSize
}

// Append appends the XDR encoding of h to b and returns the extended slice
// (RFC 8166 §4.1.2). It grows b at most once, to exactly h.Len() more bytes,
// and allocates nothing when b has that capacity.
//
// For ProcMsg and ProcNoMsg it writes the three chunk lists; for ProcError,
// ErrCode and, for CodeVers, VersLow and VersHigh. For any other Proc it
// writes the fixed part only (RDMA_DONE's body is empty; RDMA_MSGP is not
// supported, and a header that claims it is useful only to test a peer).
// Fields the Proc does not encode are ignored. Append does not validate h:
// it encodes what it is given, so that tests can build malformed headers.
func (h *Header) Append(b []byte) []byte {
	b = slices.Grow(b, h.Len())
	b = xdr.AppendUint32(b, h.XID)
	b = xdr.AppendUint32(b, h.Vers)
	b = xdr.AppendUint32(b, h.Credits)
	b = xdr.AppendUint32(b, uint32(h.Proc))
	switch h.Proc {
	case ProcMsg, ProcNoMsg:
		b = h.appendChunkLists(b)
	case ProcError:
		b = xdr.AppendUint32(b, uint32(h.ErrCode))
		if h.ErrCode == CodeVers {
			b = xdr.AppendUint32(b, h.VersLow)
			b = xdr.AppendUint32(b, h.VersHigh)
		}
	}
	return b
}

// appendChunkLists appends the Read list, the Write list and the Reply chunk
// (RFC 8166 §4.3, §4.7).
func (h *Header) appendChunkLists(b []byte) []byte {
	// Read list: each entry is "1, position, segment"; the list ends with 0.
	for i := range h.ReadList {
		rs := &h.ReadList[i]
		b = xdr.AppendUint32(b, 1)
		b = xdr.AppendUint32(b, rs.Position)
		b = appendSegment(b, &rs.Segment)
	}
	b = xdr.AppendUint32(b, 0)
	// Write list: each chunk is "1, count, segments"; the list ends with 0.
	for _, wc := range h.WriteList {
		b = xdr.AppendUint32(b, 1)
		b = appendWriteChunk(b, wc)
	}
	b = xdr.AppendUint32(b, 0)
	// Reply chunk: optional-data, "1, count, segments" or 0.
	if h.hasReplyChunk() {
		b = xdr.AppendUint32(b, 1)
		return appendWriteChunk(b, h.ReplyChunk)
	}
	return xdr.AppendUint32(b, 0)
}

func appendWriteChunk(b []byte, wc WriteChunk) []byte {
	b = xdr.AppendUint32(b, uint32(len(wc)))
	for i := range wc {
		b = appendSegment(b, &wc[i])
	}
	return b
}

func appendSegment(b []byte, s *Segment) []byte {
	b = xdr.AppendUint32(b, s.Handle)
	b = xdr.AppendUint32(b, s.Length)
	return xdr.AppendUint64(b, s.Offset)
}

// AppendErrVers appends the RDMA_ERROR header a responder sends for a call
// whose rdma_vers it does not support (RFC 8166 §4.5.1): ERR_VERS with
// rdma_vers_low = rdma_vers_high = 1, the only version this package speaks.
// xid is the call's rdma_xid; credits is the responder's current grant. The
// header's own rdma_vers is 1. (Linux svcrdma echoes the call's rdma_vers
// there instead; a requester of another version checks the fixed fields'
// positions, which RFC 8166 §4.2 freezes for all versions, not their value.)
// It writes ErrVersSize bytes and allocates nothing when b has room.
func AppendErrVers(b []byte, xid, credits uint32) []byte {
	h := Header{XID: xid, Vers: Version1, Credits: credits, Proc: ProcError,
		ErrCode: CodeVers, VersLow: Version1, VersHigh: Version1}
	return h.Append(b)
}

// AppendErrChunk appends the RDMA_ERROR header a responder sends when it
// cannot parse a call's transport header or use its chunks (RFC 8166 §4.5.2,
// §4.5.3): ERR_CHUNK. xid is the call's rdma_xid; credits is the responder's
// current grant. It writes ErrChunkSize bytes and allocates nothing when b
// has room.
func AppendErrChunk(b []byte, xid, credits uint32) []byte {
	h := Header{XID: xid, Vers: Version1, Credits: credits, Proc: ProcError, ErrCode: CodeChunk}
	return h.Append(b)
}
