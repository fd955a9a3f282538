package chunks

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// rpcMsg returns a stand-in for an inline RPC message of n >= 4 bytes: the
// XID, then zeros.
func rpcMsg(xid uint32, n int) []byte {
	b := make([]byte, n)
	binary.BigEndian.PutUint32(b, xid)
	return b
}

// words encodes 32-bit XDR words, for writing headers by hand in tests.
func words(ws ...uint32) []byte {
	b := make([]byte, 0, 4*len(ws))
	for _, w := range ws {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	return b
}

// seg returns the words of a segment.
func seg(handle, length uint32, offset uint64) []uint32 {
	return []uint32{handle, length, uint32(offset >> 32), uint32(offset)}
}

// cat concatenates word lists.
func cat(parts ...[]uint32) []uint32 {
	var out []uint32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// huge is a Limits that bounds nothing, for structural round trips.
var huge = Limits{
	MaxReadChunks:  math.MaxInt,
	MaxWriteChunks: math.MaxInt,
	MaxSegments:    math.MaxInt,
	MaxChunkLength: math.MaxInt,
}

func randomSegment(r *rand.Rand) Segment {
	s := Segment{Handle: r.Uint32(), Length: r.Uint32(), Offset: r.Uint64()}
	// Small lengths are common on the wire; keep some.
	if r.IntN(2) == 0 {
		s.Length = r.Uint32N(9000)
	}
	return s
}

func randomWriteChunk(r *rand.Rand, max int) WriteChunk {
	n := r.IntN(max + 1)
	if n == 0 && r.IntN(2) == 0 {
		return nil
	}
	wc := make(WriteChunk, n)
	for i := range wc {
		wc[i] = randomSegment(r)
	}
	return wc
}

// randomHeader returns a structurally valid header of any procedure
// Unmarshal accepts, with any field values: positions need not be aligned or
// ordered (that is ValidateCall's business).
func randomHeader(r *rand.Rand) *Header {
	h := &Header{XID: r.Uint32(), Vers: Version1, Credits: r.Uint32()}
	switch r.IntN(8) {
	case 0:
		h.Proc, h.ErrCode, h.VersLow, h.VersHigh = ProcError, CodeVers, r.Uint32(), r.Uint32()
		return h
	case 1:
		h.Proc, h.ErrCode = ProcError, CodeChunk
		return h
	case 2, 3, 4:
		h.Proc = ProcMsg
	default:
		h.Proc = ProcNoMsg
	}
	for range r.IntN(7) {
		pos := r.Uint32()
		if r.IntN(3) > 0 {
			pos = r.Uint32N(4) * 4 // repeated positions form multi-segment chunks
		}
		h.ReadList = append(h.ReadList, ReadSegment{Position: pos, Segment: randomSegment(r)})
	}
	for range r.IntN(5) {
		h.WriteList = append(h.WriteList, randomWriteChunk(r, 5))
	}
	switch r.IntN(3) {
	case 1:
		h.HasReplyChunk = true
	case 2:
		h.HasReplyChunk = true
		h.ReplyChunk = randomWriteChunk(r, 5)
	}
	return h
}

// randomCall returns a valid RPC Call message (header and inline message)
// that ParseCall must accept with DefaultLimits, and its header. Read chunks
// are placed at increasing, aligned positions inside the message they go
// into, with lengths of any parity.
func randomCall(r *rand.Rand) ([]byte, *Header) {
	h := &Header{XID: r.Uint32(), Vers: Version1, Credits: r.Uint32N(256)}
	var inline int // the message the data chunks go into
	if r.IntN(3) == 0 {
		// Long Call: the message is the position-zero Read chunk.
		h.Proc = ProcNoMsg
		for range 1 + r.IntN(3) {
			s := randomSegment(r)
			s.Length = 4 + 4*r.Uint32N(300)
			inline += int(s.Length)
			h.ReadList = append(h.ReadList, ReadSegment{Segment: s})
		}
	} else {
		h.Proc = ProcMsg
		inline = 4 * (1 + r.IntN(64))
	}
	// Data chunks at reduced offsets 4 <= o1 <= o2 <= ... <= inline.
	var consumed uint32
	off := 4
	for range r.IntN(4) {
		off += 4 * r.IntN((inline-off)/4+1)
		if off > inline {
			break
		}
		pos := uint32(off) + consumed
		var length uint32
		for range 1 + r.IntN(3) {
			s := randomSegment(r)
			s.Length = 1 + r.Uint32N(5000)
			length += s.Length
			h.ReadList = append(h.ReadList, ReadSegment{Position: pos, Segment: s})
		}
		consumed += (length + 3) &^ 3
	}
	for range r.IntN(3) {
		h.WriteList = append(h.WriteList, shortened(randomWriteChunk(r, 4)))
	}
	if r.IntN(2) == 0 {
		h.HasReplyChunk = true
		h.ReplyChunk = shortened(randomWriteChunk(r, 4))
	}
	b := h.Append(nil)
	if h.Proc == ProcMsg {
		msg := make([]byte, inline)
		for i := range msg {
			msg[i] = byte(r.Uint32())
		}
		binary.BigEndian.PutUint32(msg, h.XID) // the RPC message's XID
		b = append(b, msg...)
	}
	return b, h
}

// shortened caps the segment lengths of wc so that it stays within
// DefaultLimits.MaxChunkLength.
func shortened(wc WriteChunk) WriteChunk {
	for i := range wc {
		wc[i].Length %= 1 << 20
	}
	return wc
}
