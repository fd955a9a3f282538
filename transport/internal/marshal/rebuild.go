package marshal

import (
	"errors"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ErrBadPosition: a Read chunk's position does not fall inside the message it
// is to be inserted into. ParseCall rejects such headers; this is the last
// line of defence.
var ErrBadPosition = errors.New("rpcrdma: Read chunk position outside the message")

var zeros [4]byte

// appendPadded appends data followed by its XDR pad. A chunk that already
// carries its pad (Linux clients since 5.12 send odd-length Read chunks
// rounded up) has a length that is a multiple of four and gets none: the
// responder accepts a Read chunk with or without its pad.
func appendPadded(dst, data []byte) []byte {
	dst = append(dst, data...)
	return append(dst, zeros[:xdr.Padding(len(data))]...)
}

// AppendCall rebuilds the RPC call conveyed by a transport header h (already
// validated by ParseCall) and appends it to dst (RFC 8166 §3.4.5, §3.5.2,
// §3.5.3). inline is the RPC message bytes of the Send (empty for
// RDMA_NOMSG); pulled holds the contents of every Read chunk, concatenated in
// list order, as the responder's RDMA Reads placed them.
//
// For RDMA_NOMSG the position-zero chunk is the message; any other chunk is
// inserted into it at its position, as into the inline message of RDMA_MSG.
// Positions count in the complete message, so each one is moved back by the
// padded length of the chunks inserted before it.
func AppendCall(dst []byte, h *chunks.Header, inline, pulled []byte) ([]byte, error) {
	base := inline
	var off uint64 // where the next chunk's data starts in pulled
	first := true
	start := len(dst)
	var baseOff, inserted uint64
	for c := range h.ReadChunks() {
		n := c.Length()
		if off+n > uint64(len(pulled)) {
			return dst[:start], ErrChunkOverflow
		}
		data := pulled[off : off+n]
		off += n
		if first && c.Position() == 0 && h.Proc == chunks.ProcNoMsg {
			base = data
			first = false
			continue
		}
		first = false
		pos := uint64(c.Position())
		if pos < inserted || pos-inserted < baseOff || pos-inserted > uint64(len(base)) {
			return dst[:start], ErrBadPosition
		}
		at := pos - inserted
		dst = append(dst, base[baseOff:at]...)
		dst = appendPadded(dst, data)
		baseOff = at
		inserted += uint64(xdr.RoundUp(len(data)))
	}
	return append(dst, base[baseOff:]...), nil
}

// AppendInsert appends reduced with data and its XDR pad inserted at offset
// off: how a requester rebuilds a reply whose DDP-eligible result arrived in a
// Write chunk (RFC 8166 §3.5.5). off is where the binding locates the result
// in the reply (just after its length word).
func AppendInsert(dst, reduced []byte, off int, data []byte) ([]byte, error) {
	if off < 0 || off > len(reduced) {
		return dst, ErrBadPosition
	}
	dst = append(dst, reduced[:off]...)
	dst = appendPadded(dst, data)
	return append(dst, reduced[off:]...), nil
}

// CallPieces returns, without copying, the RPC call conveyed by h as the
// pieces AppendCall would join: head, then data followed by its XDR pad,
// then tail (RFC 8166 §3.4.5). It does so when the call has at most one Read
// chunk: none (head is inline), a position-zero chunk of RDMA_NOMSG (head is
// the chunk), or one chunk inserted into the inline message at its position.
// ok is false for anything else (several chunks, a position outside the
// message, data missing from pulled): AppendCall then rebuilds the call, or
// reports why it cannot. data is nil when there is no chunk to insert.
func CallPieces(h *chunks.Header, inline, pulled []byte) (head, data, tail []byte, ok bool) {
	n := 0
	var pos, length uint64
	for c := range h.ReadChunks() {
		if n++; n > 1 {
			return nil, nil, nil, false
		}
		pos, length = uint64(c.Position()), c.Length()
	}
	switch {
	case n == 0:
		return inline, nil, nil, true
	case length > uint64(len(pulled)):
		return nil, nil, nil, false
	case pos == 0 && h.Proc == chunks.ProcNoMsg:
		return pulled[:length], nil, nil, true
	case pos > uint64(len(inline)):
		return nil, nil, nil, false
	}
	return inline[:pos], pulled[:length:length], inline[pos:], true
}
