package rpcrdma2

import (
	"math/rand/v2"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// randomHeader returns a well-formed header of a random type within
// chunks.DefaultLimits and MaxProperties.
func randomHeader(r *rand.Rand) *Header {
	seg := func() chunks.Segment {
		return chunks.Segment{Handle: r.Uint32(), Length: r.Uint32N(1 << 16), Offset: r.Uint64()}
	}
	h := &Header{Prefix: Prefix{XID: r.Uint32(), Vers: Version2, Credit: r.Uint32(), Flags: r.Uint32() & FlagResponse}}
	switch r.IntN(4) {
	case 0, 1:
		h.Type = HTypeMsg
		if r.IntN(2) == 1 {
			h.Type = HTypeNoMsg
		}
		h.InvHandle = r.Uint32()
		pos := uint32(0)
		for range r.IntN(4) {
			pos += 4 * r.Uint32N(64)
			for range 1 + r.IntN(3) {
				h.Chunks.ReadList = append(h.Chunks.ReadList, chunks.ReadSegment{Position: pos, Segment: seg()})
			}
		}
		for range r.IntN(3) {
			var wc chunks.WriteChunk
			for range r.IntN(4) {
				wc = append(wc, seg())
			}
			h.Chunks.WriteList = append(h.Chunks.WriteList, wc)
		}
		if h.Chunks.HasReplyChunk = r.IntN(2) == 1; h.Chunks.HasReplyChunk {
			for range r.IntN(3) {
				h.Chunks.ReplyChunk = append(h.Chunks.ReplyChunk, seg())
			}
		}
	case 2:
		h.Type, h.Flags = HTypeError, h.Flags|FlagResponse
		e := &h.Error
		e.Code = ErrorCode(1 + r.IntN(10)) // 10: a code of an extension
		switch e.Code {
		case ErrVers:
			e.Vers = VersRange{Low: r.Uint32N(3), High: 3 + r.Uint32N(3)}
		case ErrReadChunks, ErrWriteChunks:
			e.MaxChunks = r.Uint32()
		case ErrSegments:
			e.MaxSegments = r.Uint32()
		case ErrWriteResource:
			e.Write = WriteNeed{ChunkIndex: r.Uint32(), LengthNeeded: r.Uint32()}
		case ErrReplyResource:
			e.LengthNeeded = r.Uint32()
		}
	default:
		h.Type = HTypeConnProp
		for range r.IntN(6) {
			switch r.IntN(4) {
			case 0:
				h.Props = append(h.Props, ReceiveBufferSize(r.Uint32()))
			case 1:
				h.Props = append(h.Props, ReverseRequests(ReverseSupport(r.Uint32N(3))))
			case 2:
				h.Props = append(h.Props, Property{Which: PropID(r.Uint32N(2) + 1), Data: []byte{}})
			default: // an unknown property, with data of any length
				data := make([]byte, r.IntN(13))
				for i := range data {
					data[i] = byte(r.Uint32())
				}
				h.Props = append(h.Props, Property{Which: PropID(3 + r.Uint32N(1000)), Data: data})
			}
		}
	}
	return h
}

// Random headers of every type encode to Len bytes and parse back equal,
// into one reused Header.
func TestRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 2))
	var got Header
	for i := range 5000 {
		h := randomHeader(r)
		b := h.Append(nil)
		if len(b) != h.Len() {
			t.Fatalf("%d: Append wrote %d bytes, Len says %d", i, len(b), h.Len())
		}
		n, err := got.Unmarshal(b, nil)
		if err != nil || n != len(b) {
			t.Fatalf("%d: %+v: Unmarshal %d, %v", i, h, n, err)
		}
		if !equal(&got, h) {
			t.Fatalf("%d: parsed back\n%+v\nwant\n%+v", i, got, *h)
		}
	}
}
