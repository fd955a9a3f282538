package chunks

import "iter"

// Header is an RPC-over-RDMA version 1 transport header (RFC 8166 §4.1.2,
// rpcrdma1_header): the fixed part and the body selected by Proc.
//
// For ProcMsg and ProcNoMsg the body is three chunk lists (RFC 8166 §4.3):
// ReadList, WriteList and the Reply chunk. For ProcError it is ErrCode and,
// for CodeVers, VersLow and VersHigh. ProcDone has an empty body; ProcMsgp is
// never encoded or accepted (RFC 8166 §4.6).
//
// A Header is meant to be reused: Unmarshal and the Parse methods decode into
// the slices it already holds and grow them only when a header needs more
// room, so that parsing allocates nothing in steady state. The slices are
// valid until the next parse into the same Header. All Write chunks and the
// Reply chunk are sub-slices of one backing array, each with its capacity
// capped at its length so that appending to one never overwrites another.
//
// A Header is built for sending by setting its fields; Append encodes it.
type Header struct {
	// XID is rdma_xid, the XID of the RPC message the header travels with
	// (RFC 8166 §4.2.1).
	XID uint32
	// Vers is rdma_vers (RFC 8166 §4.2.2); Version1 for a header this
	// package produces.
	Vers uint32
	// Credits is rdma_credit: credits requested by a requester or granted
	// by a responder (RFC 8166 §3.3.1, §4.2.3).
	Credits uint32
	// Proc is rdma_proc (RFC 8166 §4.2.4).
	Proc Proc

	// ReadList holds the Read segments in list order (RFC 8166 §4.3.1).
	// Consecutive entries with the same Position form one Read chunk; see
	// ReadChunks.
	ReadList []ReadSegment
	// WriteList holds the Write chunks in list order (RFC 8166 §4.3.2).
	WriteList []WriteChunk
	// ReplyChunk holds the Reply chunk's segments (RFC 8166 §4.3.3).
	ReplyChunk WriteChunk
	// HasReplyChunk says whether a Reply chunk is present. It is needed
	// only to tell a present Reply chunk with zero segments from an absent
	// one: a Reply chunk with segments is encoded whatever this field says.
	HasReplyChunk bool

	// ErrCode is rdma_err of an RDMA_ERROR (RFC 8166 §4.5).
	ErrCode ErrorCode
	// VersLow and VersHigh are the inclusive range of versions an
	// RDMA_ERROR with CodeVers reports.
	VersLow, VersHigh uint32

	// segs is the backing array of WriteList and ReplyChunk after a parse.
	segs []Segment
}

// Reset clears h to the zero Header while keeping the capacity of its
// slices for the next parse.
func (h *Header) Reset() {
	*h = Header{
		ReadList:  h.ReadList[:0],
		WriteList: h.WriteList[:0],
		segs:      h.segs[:0],
	}
}

// hasReplyChunk reports whether h encodes a Reply chunk.
func (h *Header) hasReplyChunk() bool { return h.HasReplyChunk || len(h.ReplyChunk) > 0 }

// Counts returns the shape of h's chunk lists, as used by Size.
func (h *Header) Counts() Counts {
	c := Counts{
		ReadSegments:  len(h.ReadList),
		WriteChunks:   len(h.WriteList),
		ReplySegments: len(h.ReplyChunk),
		HasReplyChunk: h.hasReplyChunk(),
	}
	for _, wc := range h.WriteList {
		c.WriteSegments += len(wc)
	}
	return c
}

// ReadChunks returns an iterator over the Read chunks of h in list order
// (RFC 8166 §3.4.5): each maximal run of consecutive Read list entries that
// share a Position. The chunks are sub-slices of h.ReadList.
func (h *Header) ReadChunks() iter.Seq[ReadChunk] {
	return func(yield func(ReadChunk) bool) {
		rl := h.ReadList
		for i := 0; i < len(rl); {
			j := runEnd(rl, i)
			if !yield(ReadChunk(rl[i:j:j])) {
				return
			}
			i = j
		}
	}
}

// NumReadChunks returns the number of Read chunks in h, as ReadChunks
// counts them.
func (h *Header) NumReadChunks() int {
	n := 0
	for i := 0; i < len(h.ReadList); i = runEnd(h.ReadList, i) {
		n++
	}
	return n
}

// CallChunk returns the position-zero Read chunk of h, which carries a whole
// RPC Call in a Long Call (RFC 8166 §3.5.3), or nil if there is none. Only a
// Read list in increasing position order (as ValidateCall requires) can hold
// it, at its start.
func (h *Header) CallChunk() ReadChunk {
	rl := h.ReadList
	if len(rl) == 0 || rl[0].Position != 0 {
		return nil
	}
	j := runEnd(rl, 0)
	return ReadChunk(rl[:j:j])
}

// runEnd returns the index just past the run of entries of rl that share the
// Position of rl[i].
func runEnd(rl []ReadSegment, i int) int {
	j := i + 1
	for j < len(rl) && rl[j].Position == rl[i].Position {
		j++
	}
	return j
}

// Equal reports whether h and o have the same fields: the fixed part, the
// chunk lists segment by segment (a nil list equals an empty one; Reply
// chunk presence as Append encodes it), and the error fields. Two headers
// that Append encodes to the same bytes, and that carry no fields their Proc
// does not encode, are Equal.
func (h *Header) Equal(o *Header) bool {
	if h.XID != o.XID || h.Vers != o.Vers || h.Credits != o.Credits || h.Proc != o.Proc ||
		h.ErrCode != o.ErrCode || h.VersLow != o.VersLow || h.VersHigh != o.VersHigh ||
		h.hasReplyChunk() != o.hasReplyChunk() ||
		len(h.ReadList) != len(o.ReadList) || len(h.WriteList) != len(o.WriteList) ||
		!segmentsEqual(h.ReplyChunk, o.ReplyChunk) {
		return false
	}
	for i := range h.ReadList {
		if h.ReadList[i] != o.ReadList[i] {
			return false
		}
	}
	for i := range h.WriteList {
		if !segmentsEqual(h.WriteList[i], o.WriteList[i]) {
			return false
		}
	}
	return true
}

func segmentsEqual(a, b WriteChunk) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
