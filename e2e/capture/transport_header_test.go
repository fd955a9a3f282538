package capture

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

func seg(h, l uint32, o uint64) []uint32 { return []uint32{h, l, uint32(o >> 32), uint32(o)} }

func cat(parts ...[]uint32) []uint32 {
	var out []uint32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestParseTransportHeader(t *testing.T) {
	fixed := []uint32{0x9053b497, 1, 128}
	for _, c := range []struct {
		name string
		in   []uint32
		want TransportHeader
	}{
		{"inline", cat(fixed, []uint32{0, 0, 0, 0}),
			TransportHeader{XID: 0x9053b497, Vers: 1, Credits: 128, Proc: RDMAMsg, Len: 28}},
		{"WRITE with a Read chunk", cat(fixed, []uint32{0, 1, 112}, seg(0x9d3, 102400, 0x9053b4977d93b000), []uint32{0, 0, 0}),
			TransportHeader{XID: 0x9053b497, Vers: 1, Credits: 128, Proc: RDMAMsg, Len: 52,
				ReadList: []ReadSegment{{112, Segment{0x9d3, 102400, 0x9053b4977d93b000}}}}},
		{"READ with a Write chunk", cat(fixed, []uint32{0, 0, 1, 2}, seg(1, 4096, 0), seg(2, 100, 4096), []uint32{0, 0}),
			TransportHeader{XID: 0x9053b497, Vers: 1, Credits: 128, Proc: RDMAMsg, Len: 68,
				WriteList: [][]Segment{{{1, 4096, 0}, {2, 100, 4096}}}}},
		{"Long Reply", cat(fixed, []uint32{1, 0, 0, 1, 1}, seg(3, 600, 8)),
			TransportHeader{XID: 0x9053b497, Vers: 1, Credits: 128, Proc: RDMANoMsg, Len: 48,
				HasReplyChunk: true, ReplyChunk: []Segment{{3, 600, 8}}}},
		{"empty Reply chunk", cat(fixed, []uint32{0, 0, 0, 1, 0}),
			TransportHeader{XID: 0x9053b497, Vers: 1, Credits: 128, Proc: RDMAMsg, Len: 32,
				HasReplyChunk: true, ReplyChunk: []Segment{}}},
		{"ERR_VERS", cat(fixed, []uint32{4, 1, 1, 1}),
			TransportHeader{XID: 0x9053b497, Vers: 1, Credits: 128, Proc: RDMAError, Len: 28, ErrCode: 1, VersLow: 1, VersHigh: 1}},
		{"ERR_CHUNK", cat(fixed, []uint32{4, 2}),
			TransportHeader{XID: 0x9053b497, Vers: 1, Credits: 128, Proc: RDMAError, Len: 20, ErrCode: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := append(words(c.in...), "inline RPC message"...)
			h, err := ParseTransportHeader(b)
			require.NoError(t, err)
			assert.Equal(t, c.want, h)
			var enc []byte
			for _, w := range h.Words() {
				enc = binary.BigEndian.AppendUint32(enc, w.Value)
				assert.NotEmpty(t, w.Note)
			}
			assert.Equal(t, b[:h.Len], enc)
			for n := range h.Len {
				_, err := ParseTransportHeader(b[:n])
				assert.ErrorIs(t, err, ErrTransportHeader, "%d of %d bytes", n, h.Len)
			}
		})
	}
}

func TestParseTransportHeaderErrors(t *testing.T) {
	fixed := []uint32{7, 1, 128}
	for name, in := range map[string][]uint32{
		"version 2":             {7, 2, 128, 0, 0, 0, 0},
		"RDMA_MSGP":             cat(fixed, []uint32{2, 0, 0, 0}),
		"RDMA_DONE":             cat(fixed, []uint32{3}),
		"unknown proc":          cat(fixed, []uint32{9, 0, 0, 0}),
		"discriminator 2":       cat(fixed, []uint32{0, 2, 0, 0}),
		"unknown rdma_err":      cat(fixed, []uint32{4, 3}),
		"2^32-1 Write segments": cat(fixed, []uint32{0, 0, 1, 0xffffffff, 0, 0, 0, 0}),
		"Reply chunk overrun":   cat(fixed, []uint32{0, 0, 0, 1, 2}, seg(1, 2, 3)),
	} {
		_, err := ParseTransportHeader(words(in...))
		assert.ErrorIs(t, err, ErrTransportHeader, name)
	}
	// A huge count is refused before anything is allocated for it.
	b := words(cat(fixed, []uint32{0, 0, 1, 0x10000000})...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ParseTransportHeader(b)
	runtime.ReadMemStats(&after)
	assert.ErrorIs(t, err, ErrTransportHeader)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "bytes allocated for 2^28 claimed segments")
}

// randomHeader builds a random RDMA_MSG, RDMA_NOMSG or RDMA_ERROR header
// with package chunks.
func randomHeader(r *rand.Rand) *chunks.Header {
	s := func() chunks.Segment {
		return chunks.Segment{Handle: r.Uint32(), Length: r.Uint32N(1 << 20), Offset: r.Uint64()}
	}
	h := &chunks.Header{XID: r.Uint32(), Vers: 1, Credits: r.Uint32N(256), Proc: chunks.Proc(r.IntN(2))}
	if r.IntN(8) == 0 {
		h.Proc = chunks.ProcError
		h.ErrCode = chunks.ErrorCode(1 + r.IntN(2))
		if h.ErrCode == chunks.CodeVers {
			h.VersLow, h.VersHigh = 1, 1
		}
		return h
	}
	pos := uint32(0)
	for range r.IntN(4) {
		pos += 4 * r.Uint32N(64)
		h.ReadList = append(h.ReadList, chunks.ReadSegment{Position: pos, Segment: s()})
	}
	for range r.IntN(3) {
		var wc chunks.WriteChunk
		for range r.IntN(4) {
			wc = append(wc, s())
		}
		h.WriteList = append(h.WriteList, wc)
	}
	if h.HasReplyChunk = r.IntN(2) == 0; h.HasReplyChunk {
		for range r.IntN(4) {
			h.ReplyChunk = append(h.ReplyChunk, s())
		}
	}
	return h
}

// TestParseTransportHeaderMatchesChunks checks the walker against package
// chunks on random headers: the same length, the same fields, the same
// words.
func TestParseTransportHeaderMatchesChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		want := randomHeader(r)
		b := want.Append(nil)
		h, err := ParseTransportHeader(append(b, 0, 0, 0, 1))
		require.NoError(t, err)
		require.Equal(t, len(b), h.Len)
		require.Equal(t, want.XID, h.XID)
		require.Equal(t, uint32(want.Proc), h.Proc)
		require.Equal(t, len(want.ReadList), len(h.ReadList))
		for i, rs := range want.ReadList {
			require.Equal(t, ReadSegment{rs.Position, Segment(rs.Segment)}, h.ReadList[i])
		}
		require.Equal(t, len(want.WriteList), len(h.WriteList))
		require.Equal(t, want.HasReplyChunk, h.HasReplyChunk)
		require.Equal(t, uint32(want.ErrCode), h.ErrCode)
		var enc []byte
		for _, w := range h.Words() {
			enc = binary.BigEndian.AppendUint32(enc, w.Value)
		}
		require.True(t, bytes.Equal(b, enc))
		var hs []uint32
		for _, rs := range want.ReadList {
			hs = append(hs, rs.Handle)
		}
		require.Subset(t, h.Handles(), hs)
	}
}

func TestTransportHeaderHelpers(t *testing.T) {
	h := TransportHeader{Proc: RDMAMsg,
		ReadList:      []ReadSegment{{112, Segment{1, 10, 0}}, {112, Segment{2, 20, 0}}, {200, Segment{1, 5, 0}}},
		WriteList:     [][]Segment{{{3, 1, 0}, {4, 2, 0}}},
		HasReplyChunk: true, ReplyChunk: []Segment{{5, 100, 0}, {3, 0, 0}},
	}
	assert.Equal(t, []uint32{1, 2, 3, 4, 5}, h.Handles())
	assert.Equal(t, "RDMA_MSG reads=2/3 writes=1/2 reply=2", h.Shape())
	assert.Equal(t, uint64(100), Length(h.ReplyChunk))
	assert.Equal(t, "RDMA_NOMSG reads=0/0 writes=0/0 reply=none", (&TransportHeader{Proc: RDMANoMsg}).Shape())
	for p, want := range map[uint32]string{0: "RDMA_MSG", 1: "RDMA_NOMSG", 2: "RDMA_MSGP", 3: "RDMA_DONE", 4: "RDMA_ERROR", 5: "rdma_proc(5)"} {
		assert.Equal(t, want, RDMAProcName(p))
	}
}
