package marshal

import (
	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// CallLayout is where a call of one Read chunk lies in a buffer that holds
// it whole (RFC 8166 §3.4.5): the chunk's data goes at DataOff (its XDR
// position in the message) and the inline bytes around it, so that the
// responder's RDMA Reads place the data where it belongs in the message and
// only the inline part is copied (AssembleCall).
type CallLayout struct {
	DataOff, DataLen int
	// Len is the whole message: head, data, its XDR pad, tail.
	Len int
}

// LayoutCall returns the layout of the call conveyed by h (validated by
// ParseCall) with inlineLen bytes of RPC message in its Send and one Read
// chunk of pulledLen bytes: a position-zero chunk of RDMA_NOMSG (the chunk
// is the message) or a chunk inserted into the inline message of RDMA_MSG at
// its position. ok is false for anything else (no chunk or several, a
// position past the inline message, a chunk length that is not pulledLen),
// whose call is rebuilt by AppendCall instead.
func LayoutCall(h *chunks.Header, inlineLen, pulledLen int) (l CallLayout, ok bool) {
	n := 0
	var pos, length uint64
	for c := range h.ReadChunks() {
		if n++; n > 1 {
			return CallLayout{}, false
		}
		pos, length = uint64(c.Position()), c.Length()
	}
	switch {
	case n == 0 || length != uint64(pulledLen):
		return CallLayout{}, false
	case h.Proc == chunks.ProcNoMsg:
		if pos != 0 {
			return CallLayout{}, false
		}
		return CallLayout{DataOff: 0, DataLen: pulledLen, Len: pulledLen}, true
	case h.Proc != chunks.ProcMsg || pos > uint64(inlineLen):
		return CallLayout{}, false
	}
	return CallLayout{DataOff: int(pos), DataLen: pulledLen, Len: inlineLen + xdr.RoundUp(pulledLen)}, true
}

// AssembleCall completes in buf (len(buf) == l.Len, the chunk's data
// already at l.DataOff) the message of a call laid out by LayoutCall:
// inline's head before the data, the data's XDR pad (RFC 4506 §4.10),
// inline's tail after it. For RDMA_NOMSG inline is empty and buf is the
// message already.
func AssembleCall(buf, inline []byte, l CallLayout) {
	if l.Len == l.DataLen {
		return
	}
	copy(buf, inline[:l.DataOff])
	end := l.DataOff + l.DataLen
	padded := l.DataOff + xdr.RoundUp(l.DataLen)
	clear(buf[end:padded])
	copy(buf[padded:], inline[l.DataOff:])
}
