package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrTransportHeader reports bytes that are not an RPC-over-RDMA version 1
// transport header ParseTransportHeader can walk.
var ErrTransportHeader = errors.New("capture: malformed RPC-over-RDMA header")

// RPC-over-RDMA version 1 procedures (RFC 8166 §4.2.4).
const (
	RDMAMsg   = 0 // RDMA_MSG: chunk lists, then the RPC message inline
	RDMANoMsg = 1 // RDMA_NOMSG: chunk lists only
	RDMAMsgp  = 2 // RDMA_MSGP (retired, RFC 8166 §4.6.1)
	RDMADone  = 3 // RDMA_DONE (retired, RFC 8166 §4.6.2)
	RDMAError = 4 // RDMA_ERROR
)

// RDMAProcName returns the RFC 8166 name of an rdma_proc value.
func RDMAProcName(p uint32) string {
	switch p {
	case RDMAMsg:
		return "RDMA_MSG"
	case RDMANoMsg:
		return "RDMA_NOMSG"
	case RDMAMsgp:
		return "RDMA_MSGP"
	case RDMADone:
		return "RDMA_DONE"
	case RDMAError:
		return "RDMA_ERROR"
	}
	return fmt.Sprintf("rdma_proc(%d)", p)
}

// Segment is an RDMA segment of a chunk (RFC 8166 §4.1.2, xdr_rdma_segment):
// handle (an R_Key), length, offset (a virtual address).
type Segment struct {
	Handle uint32
	Length uint32
	Offset uint64
}

// ReadSegment is a Read list entry (RFC 8166 §4.1.2, xdr_read_chunk).
type ReadSegment struct {
	Position uint32
	Segment
}

// TransportHeader is an RPC-over-RDMA version 1 transport header as
// ParseTransportHeader walked it. It is deliberately independent of package
// chunks, so that the golden files extracted with it check chunks rather
// than restate it.
type TransportHeader struct {
	XID, Vers, Credits, Proc uint32
	ReadList                 []ReadSegment
	WriteList                [][]Segment
	HasReplyChunk            bool
	ReplyChunk               []Segment
	ErrCode                  uint32 // RDMA_ERROR: 1 ERR_VERS, 2 ERR_CHUNK
	VersLow, VersHigh        uint32 // RDMA_ERROR ERR_VERS
	Len                      int    // bytes of the header
}

// ParseTransportHeader walks the transport header at the start of b
// (RFC 8166 §4.1.2) for RDMA_MSG, RDMA_NOMSG and RDMA_ERROR. It checks only
// what it needs to find the header's end: that every item is present, that
// optional-data discriminators are 0 or 1 and that each count fits in the
// bytes left. It never allocates more than b can describe.
func ParseTransportHeader(b []byte) (TransportHeader, error) {
	var h TransportHeader
	w := wordReader{b: b}
	h.XID, h.Vers, h.Credits, h.Proc = w.next(), w.next(), w.next(), w.next()
	if w.err != nil {
		return h, fmt.Errorf("%w: %d bytes, fewer than the 16 of the fixed part", ErrTransportHeader, len(b))
	}
	if h.Vers != 1 {
		return h, fmt.Errorf("%w: rdma_vers %d", ErrTransportHeader, h.Vers)
	}
	switch h.Proc {
	case RDMAMsg, RDMANoMsg:
		for w.optional() {
			pos := w.next()
			h.ReadList = append(h.ReadList, ReadSegment{Position: pos, Segment: w.segment()})
		}
		for w.optional() {
			h.WriteList = append(h.WriteList, w.segments())
		}
		if h.HasReplyChunk = w.optional(); h.HasReplyChunk {
			h.ReplyChunk = w.segments()
		}
	case RDMAError:
		switch h.ErrCode = w.next(); h.ErrCode {
		case 1:
			h.VersLow, h.VersHigh = w.next(), w.next()
		case 2:
		default:
			if w.err == nil {
				w.err = fmt.Errorf("rdma_err %d", h.ErrCode)
			}
		}
	default:
		return h, fmt.Errorf("%w: %s", ErrTransportHeader, RDMAProcName(h.Proc))
	}
	if w.err != nil {
		return h, fmt.Errorf("%w: %w", ErrTransportHeader, w.err)
	}
	h.Len = w.off
	return h, nil
}

var errEnd = errors.New("ends inside an item")

// wordReader reads XDR words; after the first failure every read returns
// zero and err stays set, so a walk can read on and check once.
type wordReader struct {
	b   []byte
	off int
	err error
}

func (w *wordReader) next() uint32 {
	if w.err != nil {
		return 0
	}
	if len(w.b)-w.off < 4 {
		w.err = fmt.Errorf("%w at byte %d", errEnd, w.off)
		return 0
	}
	v := binary.BigEndian.Uint32(w.b[w.off:])
	w.off += 4
	return v
}

// optional reads an optional-data discriminator (RFC 4506 §4.19).
func (w *wordReader) optional() bool {
	off := w.off
	switch v := w.next(); {
	case w.err != nil:
		return false
	case v > 1:
		w.err = fmt.Errorf("discriminator %d at byte %d", v, off)
		return false
	default:
		return v == 1
	}
}

func (w *wordReader) segment() Segment {
	return Segment{Handle: w.next(), Length: w.next(), Offset: uint64(w.next())<<32 | uint64(w.next())}
}

// segments reads a counted array of segments (a Write chunk or the Reply
// chunk), checking the count against the bytes left before allocating.
func (w *wordReader) segments() []Segment {
	off := w.off
	n := w.next()
	if w.err != nil {
		return nil
	}
	if uint64(n)*16 > uint64(len(w.b)-w.off) {
		w.err = fmt.Errorf("%d segments at byte %d, %d bytes left", n, off, len(w.b)-w.off)
		return nil
	}
	s := make([]Segment, n)
	for i := range s {
		s[i] = w.segment()
	}
	return s
}

// Length returns the sum of the segment lengths of c.
func Length(c []Segment) uint64 {
	var n uint64
	for _, s := range c {
		n += uint64(s.Length)
	}
	return n
}

// Word is one XDR word of a transport header with a note saying what it is.
type Word struct {
	Value uint32
	Note  string
}

// Words lists the header's XDR words in wire order, each with a note, as
// the golden files show them. Encoding the values gives back the header's
// bytes.
func (h *TransportHeader) Words() []Word {
	var ws []Word
	w := func(v uint32, format string, args ...any) {
		ws = append(ws, Word{v, fmt.Sprintf(format, args...)})
	}
	seg := func(indent string, s Segment) {
		w(s.Handle, "%shandle", indent)
		w(s.Length, "%slength (%d)", indent, s.Length)
		w(uint32(s.Offset>>32), "%soffset (high)", indent)
		w(uint32(s.Offset), "%soffset (low)", indent)
	}
	w(h.XID, "rdma_xid")
	w(h.Vers, "rdma_vers")
	w(h.Credits, "rdma_credit (%d)", h.Credits)
	w(h.Proc, "rdma_proc: %s", RDMAProcName(h.Proc))
	switch h.Proc {
	case RDMAMsg, RDMANoMsg:
		for _, rs := range h.ReadList {
			w(1, "Read list: a Read segment follows")
			w(rs.Position, "  position (%d)", rs.Position)
			seg("  ", rs.Segment)
		}
		w(0, "Read list: end")
		for _, wc := range h.WriteList {
			w(1, "Write list: a Write chunk follows")
			w(uint32(len(wc)), "  segment count")
			for _, s := range wc {
				seg("    ", s)
			}
		}
		w(0, "Write list: end")
		if h.HasReplyChunk {
			w(1, "Reply chunk: present")
			w(uint32(len(h.ReplyChunk)), "  segment count")
			for _, s := range h.ReplyChunk {
				seg("    ", s)
			}
		} else {
			w(0, "Reply chunk: absent")
		}
	case RDMAError:
		w(h.ErrCode, "rdma_err")
		if h.ErrCode == 1 {
			w(h.VersLow, "rdma_vers_low")
			w(h.VersHigh, "rdma_vers_high")
		}
	}
	return ws
}

// Handles returns the distinct handles (R_Keys) of all chunks of h, in
// order of first appearance.
func (h *TransportHeader) Handles() []uint32 {
	var hs []uint32
	add := func(k uint32) {
		for _, x := range hs {
			if x == k {
				return
			}
		}
		hs = append(hs, k)
	}
	for _, rs := range h.ReadList {
		add(rs.Handle)
	}
	for _, wc := range h.WriteList {
		for _, s := range wc {
			add(s.Handle)
		}
	}
	for _, s := range h.ReplyChunk {
		add(s.Handle)
	}
	return hs
}
