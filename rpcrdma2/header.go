package rpcrdma2

import (
	"slices"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Header is an RPC-over-RDMA version 2 transport header: the prefix and
// the body of its type (draft §5.3).
//
// For HTypeMsg and HTypeNoMsg the body is rpcrdma2_chunk_lists: InvHandle
// and the three chunk lists, held in Chunks' ReadList, WriteList,
// ReplyChunk and HasReplyChunk (version 1 encodes them alike). For
// HTypeError it is Error, for HTypeConnProp Props.
//
// A Header is meant to be reused, as a chunks.Header: Unmarshal decodes into
// the slices it holds, which stay valid until the next parse into it.
type Header struct {
	Prefix
	// InvHandle is rdma_inv_handle (§3.3): in a call, the one rdma_handle
	// of the header's chunks the responder may invalidate with Send With
	// Invalidate, 0 for none; ignored in a reply.
	InvHandle uint32 `xdr:"rdma_inv_handle"`
	// Chunks holds the chunk lists (rdma_reads, rdma_writes, rdma_reply).
	// After Unmarshal its fixed part is the version 1 equivalent of the
	// header (XID, Credits, Vers 1, ProcMsg or ProcNoMsg), so that
	// version 1's validation (ValidateCall, ValidateReply) applies to
	// the lists unchanged; Append uses only the lists.
	Chunks chunks.Header `xdr:"rdma_reads,rdma_writes,rdma_reply"`
	// Error is the body of an RDMA2_ERROR.
	Error Error
	// Props is the body of an RDMA2_CONNPROP (rdma_props).
	Props Properties `xdr:"rdma_props"`
}

// Reset clears h, keeping the capacity of its slices.
func (h *Header) Reset() {
	h.Chunks.Reset()
	*h = Header{Chunks: h.Chunks, Props: h.Props[:0]}
}

// Unmarshal parses the version 2 transport header at the start of b into h
// and returns its length; for RDMA2_MSG the RPC message is b[hdrLen:].
// lim bounds the chunk lists (nil means chunks.DefaultLimits).
//
// Checks come in the draft's order: rpcrdma_common's length (shorter:
// ErrShortHeader, dropped), rdma_vers (not 2: ErrVersion, answered with
// RDMA2_ERR_VERS, so a version 1 header, whose first four words are the
// same, is told apart here), the prefix's length, rdma_htype (unknown:
// ErrHType), then the body. Every error is a *ProtocolError whose Outcome
// says how a responder answers (OutcomeOf); if len(b) >= CommonSize, h's
// XID, Vers, Credit and Type hold the common part, so that an answer can
// be addressed. Unmarshal allocates only when a header holds more chunks,
// segments or properties than any header h parsed before.
func (h *Header) Unmarshal(b []byte, lim *chunks.Limits) (hdrLen int, err error) {
	h.Reset()
	r := xdr.NewReader(b)
	if r.Len() < CommonSize {
		return 0, ErrShortHeader
	}
	// The lengths were checked: these reads cannot fail.
	h.XID, _ = r.Uint32()
	h.Vers, _ = r.Uint32()
	h.Credit, _ = r.Uint32()
	t, _ := r.Uint32()
	h.Type = HType(t)
	if h.Vers != Version2 {
		return 0, ErrVersion
	}
	if r.Len() < PrefixSize-CommonSize {
		return 0, ErrShortPrefix
	}
	h.Flags, _ = r.Uint32()
	switch h.Type {
	case HTypeMsg, HTypeNoMsg:
		err = h.unmarshalLists(&r, lim)
	case HTypeError:
		if !h.Response() {
			err = ErrErrorNotResponse
		} else {
			err = h.Error.unmarshal(&r)
		}
	case HTypeConnProp:
		err = h.Props.unmarshal(&r)
	default:
		err = ErrHType
	}
	if err != nil {
		h.clearBody()
		return 0, err
	}
	return r.Offset(), nil
}

// unmarshalLists decodes rpcrdma2_chunk_lists.
func (h *Header) unmarshalLists(r *xdr.Reader, lim *chunks.Limits) error {
	inv, err := r.Uint32()
	if err != nil {
		return ErrTruncated
	}
	h.InvHandle = inv
	c := &h.Chunks
	c.XID, c.Vers, c.Credits = h.XID, chunks.Version1, h.Credit
	c.Proc = chunks.ProcMsg
	if h.Type == HTypeNoMsg {
		c.Proc = chunks.ProcNoMsg
	}
	if err := c.UnmarshalChunkLists(r, lim); err != nil {
		return listError(err)
	}
	return nil
}

// clearBody empties everything but the prefix, keeping the capacity of
// the slices, so that a failed parse leaves no partial body behind.
func (h *Header) clearBody() {
	h.InvHandle = 0
	h.Chunks.Reset()
	h.Error = Error{}
	h.Props = h.Props[:0]
}

// Len returns the exact number of bytes Append writes for h.
func (h *Header) Len() int {
	switch h.Type {
	case HTypeMsg, HTypeNoMsg:
		return MsgLen(h.Chunks.Counts())
	case HTypeError:
		return PrefixSize + h.Error.len()
	case HTypeConnProp:
		return PrefixSize + h.Props.len()
	}
	return PrefixSize
}

// Append appends the XDR encoding of h to b and returns the extended
// slice, growing b at most once, to exactly h.Len() more bytes, and
// allocating nothing when b has that room. The body is that of h.Type; an
// unknown type gets none (to test a peer). Append does not validate h: it
// encodes what it is given, so that tests can build malformed headers.
func (h *Header) Append(b []byte) []byte {
	b = slices.Grow(b, h.Len())
	b = appendPrefix(b, &h.Prefix)
	switch h.Type {
	case HTypeMsg, HTypeNoMsg:
		b = xdr.AppendUint32(b, h.InvHandle)
		b = h.Chunks.AppendChunkLists(b)
	case HTypeError:
		b = h.Error.append(b)
	case HTypeConnProp:
		b = h.Props.append(b)
	}
	return b
}

// AppendMsg appends an RDMA2_MSG or RDMA2_NOMSG header (p.Type) whose
// chunk lists are lists' (its list fields only), as Append would for a
// Header holding them, without copying them into one: what a transport
// that keeps its chunk lists in a chunks.Header sends. It writes
// MsgLen(lists.Counts()) bytes and allocates nothing when b has room.
func AppendMsg(b []byte, p *Prefix, invHandle uint32, lists *chunks.Header) []byte {
	b = slices.Grow(b, MsgLen(lists.Counts()))
	b = appendPrefix(b, p)
	b = xdr.AppendUint32(b, invHandle)
	return lists.AppendChunkLists(b)
}

// MsgLen returns the encoded size of an RDMA2_MSG or RDMA2_NOMSG header
// whose chunk lists have the counts c: chunks.Size(c) and HeaderExtra.
func MsgLen(c chunks.Counts) int { return PrefixSize + 4 + chunks.ChunkListsSize(c) }

// HeaderExtra is how much longer an RDMA2_MSG or RDMA2_NOMSG header is than
// version 1's RDMA_MSG or RDMA_NOMSG with the same chunk lists: rdma_flags
// and rdma_inv_handle. A transport planning a version 2 message with
// version 1's sizes takes it off its inline threshold.
const HeaderExtra = PrefixSize + 4 - chunks.MinHeaderSize

// AppendError appends the RDMA2_ERROR a responder sends for the call whose
// rdma_xid is xid (draft §5.3.3): rdma_vers 2, FlagResponse set, credit
// the responder's grant, e the error. It writes PrefixSize plus e's size
// and allocates nothing when b has room.
func AppendError(b []byte, xid, credit uint32, e Error) []byte {
	h := Header{Prefix: Prefix{XID: xid, Vers: Version2, Credit: credit, Type: HTypeError, Flags: FlagResponse}, Error: e}
	return h.Append(b)
}

// AppendErrVers appends the RDMA2_ERR_VERS a responder sends for a call in
// a version it does not speak, with the range it speaks, low to high.
func AppendErrVers(b []byte, xid, credit, low, high uint32) []byte {
	return AppendError(b, xid, credit, Error{Code: ErrVers, Vers: VersRange{Low: low, High: high}})
}
