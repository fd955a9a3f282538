package chunks

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestRoundTripRandom: random header → Append → Unmarshal → Equal, with
// Len, Size and Counts agreeing with the encoding, and a second encoding of
// the parsed header byte for byte identical to the first.
func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var got Header // reused across iterations, as a transport would
	for i := range 20000 {
		h := randomHeader(r)
		b := h.Append(nil)
		if h.Len() != len(b) {
			t.Fatalf("#%d: Len() = %d, encoded %d bytes", i, h.Len(), len(b))
		}
		if h.Proc != ProcError && Size(h.Counts()) != len(b) {
			t.Fatalf("#%d: Size(Counts()) = %d, encoded %d bytes", i, Size(h.Counts()), len(b))
		}
		// Trailing bytes stand for the RPC message of an RDMA_MSG.
		msg := []byte{0xde, 0xad, 0xbe, 0xef}
		in := b
		if h.Proc == ProcMsg {
			in = append(b[:len(b):len(b)], msg...)
		}
		n, err := got.Unmarshal(in, &huge)
		if err != nil {
			t.Fatalf("#%d: Unmarshal(%x): %v", i, b, err)
		}
		if n != len(b) {
			t.Fatalf("#%d: hdrLen = %d, want %d", i, n, len(b))
		}
		if !got.Equal(h) {
			t.Fatalf("#%d: round trip:\n got %+v\nwant %+v", i, got, *h)
		}
		if again := got.Append(nil); !bytes.Equal(again, b) {
			t.Fatalf("#%d: re-encoding differs:\n got %x\nwant %x", i, again, b)
		}
		if h.Proc == ProcMsg && !bytes.Equal(in[n:], msg) {
			t.Fatalf("#%d: RPC message = %x", i, in[n:])
		}
	}
}

// TestRoundTripValidCalls: random valid calls, with Read chunks at proper
// positions, pass ParseCall with DefaultLimits and parse back equal.
func TestRoundTripValidCalls(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var got Header
	for i := range 20000 {
		b, h := randomCall(r)
		n, err := got.ParseCall(b, nil)
		if err != nil {
			t.Fatalf("#%d: ParseCall(%x): %v", i, b, err)
		}
		if n != h.Len() || !got.Equal(h) {
			t.Fatalf("#%d: got %+v (hdrLen %d)\nwant %+v (len %d)", i, got, n, *h, h.Len())
		}
	}
}

// TestTruncatedPrefixes: every strict prefix of every valid header fails
// cleanly, as ErrShortHeader below 16 bytes and as ErrTruncated (which wraps
// xdr.ErrShortBuffer) from there on, and leaves no partial lists behind.
func TestTruncatedPrefixes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var hs []*Header
	for _, g := range goldens {
		hs = append(hs, &g.h)
	}
	for range 300 {
		hs = append(hs, randomHeader(r))
	}
	var got Header
	for _, h := range hs {
		b := h.Append(nil)
		for i := range len(b) {
			_, err := got.Unmarshal(b[:i], &huge)
			want := ErrTruncated
			if i < MinHeaderSize {
				want = ErrShortHeader
			}
			if err != want {
				t.Fatalf("Unmarshal(%x) (prefix %d of %d) = %v, want %v", b[:i], i, len(b), err, want)
			}
			if i >= MinHeaderSize && !errors.Is(err, xdr.ErrShortBuffer) {
				t.Fatalf("prefix %d: %v does not wrap xdr.ErrShortBuffer", i, err)
			}
			if len(got.ReadList)+len(got.WriteList)+len(got.ReplyChunk) != 0 || got.HasReplyChunk {
				t.Fatalf("prefix %d: failed parse left lists behind: %+v", i, got)
			}
			if _, err := got.ParseCall(b[:i], nil); err == nil {
				t.Fatalf("ParseCall accepted prefix %d of %x", i, b)
			}
			if _, err := got.ParseReply(b[:i], nil); err == nil {
				t.Fatalf("ParseReply accepted prefix %d of %x", i, b)
			}
		}
	}
}

// TestHugeSegmentCount: a header claiming 2^32-1 segments fails after
// reading only the bytes present, allocating nothing, even when the Limits
// would allow that many.
func TestHugeSegmentCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"write chunk", words(cat([]uint32{1, 1, 1, uint32(ProcMsg), 0, 1, math.MaxUint32}, seg(1, 2, 3), seg(4, 5, 6))...)},
		{"reply chunk", words(cat([]uint32{1, 1, 1, uint32(ProcNoMsg), 0, 0, 1, math.MaxUint32}, seg(1, 2, 3))...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Header
			if _, err := h.Unmarshal(tc.b, &huge); err != ErrTruncated {
				t.Fatalf("huge limits: err = %v, want ErrTruncated", err)
			}
			if _, err := h.Unmarshal(tc.b, nil); err != ErrTooManySegments {
				t.Fatalf("default limits: err = %v, want ErrTooManySegments", err)
			}
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := h.Unmarshal(tc.b, &huge); err == nil {
					t.Fatal("accepted")
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per failed parse", allocs)
			}
			if cap(h.segs) > 2 {
				t.Fatalf("segment array grew to %d for 2 segments present", cap(h.segs))
			}
		})
	}
}

// TestReuseAfterGrowth: chunks parsed while the shared segment array grows
// are re-sliced from the final array, so none aliases an abandoned array,
// and none can overwrite its neighbour by appending.
func TestReuseAfterGrowth(t *testing.T) {
	small := &Header{XID: 1, Vers: Version1, Proc: ProcMsg,
		WriteList: []WriteChunk{{{Handle: 1, Length: 1}}}}
	big := &Header{XID: 2, Vers: Version1, Proc: ProcMsg, HasReplyChunk: true}
	for c := range 6 {
		var wc WriteChunk
		for s := range c + 1 {
			wc = append(wc, Segment{Handle: uint32(100*c + s), Length: uint32(s), Offset: uint64(c)})
		}
		big.WriteList = append(big.WriteList, wc)
	}
	big.ReplyChunk = WriteChunk{{Handle: 999, Length: 7, Offset: 8}, {Handle: 998}}

	var h Header
	if _, err := h.Unmarshal(small.Append(nil), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Unmarshal(big.Append(nil), nil); err != nil {
		t.Fatal(err)
	}
	if !h.Equal(big) {
		t.Fatalf("got %+v\nwant %+v", h, *big)
	}
	// Every chunk must live in h.segs, contiguously, in order.
	off := 0
	for i, wc := range h.WriteList {
		if &wc[0] != &h.segs[off] {
			t.Fatalf("Write chunk %d does not alias the final segment array", i)
		}
		if cap(wc) != len(wc) {
			t.Fatalf("Write chunk %d: cap %d > len %d", i, cap(wc), len(wc))
		}
		off += len(wc)
	}
	if &h.ReplyChunk[0] != &h.segs[off] || cap(h.ReplyChunk) != len(h.ReplyChunk) {
		t.Fatal("Reply chunk does not alias the final segment array with capped capacity")
	}
	// Appending to a chunk must not clobber the next one.
	_ = append(h.WriteList[0], Segment{Handle: 0xbad})
	if h.WriteList[1][0].Handle != 100 {
		t.Fatal("append to Write chunk 0 overwrote Write chunk 1")
	}
	// A smaller header next must not show leftovers of the bigger one.
	if _, err := h.Unmarshal(small.Append(nil), nil); err != nil {
		t.Fatal(err)
	}
	if !h.Equal(small) {
		t.Fatalf("after reuse got %+v, want %+v", h, *small)
	}
}

// TestEmptyReplyChunkRoundTrip: a present Reply chunk with zero segments
// ("1, 0") differs on the wire from an absent one ("0") and survives a round
// trip.
func TestEmptyReplyChunkRoundTrip(t *testing.T) {
	present := &Header{Vers: Version1, Proc: ProcNoMsg, HasReplyChunk: true}
	absent := &Header{Vers: Version1, Proc: ProcNoMsg}
	pb, ab := present.Append(nil), absent.Append(nil)
	if want := words(0, 1, 0, 1, 0, 0, 1, 0); !bytes.Equal(pb, want) {
		t.Fatalf("present empty Reply chunk = %x, want %x", pb, want)
	}
	if len(ab) != EmptyMsgHeaderSize {
		t.Fatalf("absent Reply chunk: %d bytes", len(ab))
	}
	var h Header
	if _, err := h.Unmarshal(pb, nil); err != nil || !h.HasReplyChunk || len(h.ReplyChunk) != 0 {
		t.Fatalf("present: %v %+v", err, h)
	}
	if _, err := h.Unmarshal(ab, nil); err != nil || h.HasReplyChunk {
		t.Fatalf("absent: %v %+v", err, h)
	}
}

func TestReadChunks(t *testing.T) {
	h := &Header{ReadList: []ReadSegment{
		{Position: 0, Segment: Segment{Handle: 1, Length: 100}},
		{Position: 0, Segment: Segment{Handle: 2, Length: 28}},
		{Position: 64, Segment: Segment{Handle: 3, Length: 4097}},
		{Position: 4200, Segment: Segment{Handle: 4, Length: 1}},
		{Position: 4200, Segment: Segment{Handle: 5, Length: 2}},
	}}
	type chunk struct {
		pos  uint32
		n    int
		size uint64
	}
	var got []chunk
	for c := range h.ReadChunks() {
		got = append(got, chunk{c.Position(), len(c), c.Length()})
	}
	want := []chunk{{0, 2, 128}, {64, 1, 4097}, {4200, 2, 3}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if h.NumReadChunks() != 3 {
		t.Fatalf("NumReadChunks = %d", h.NumReadChunks())
	}
	if cc := h.CallChunk(); len(cc) != 2 || cc.Length() != 128 {
		t.Fatalf("CallChunk = %v", cc)
	}
	// Stopping early must stop.
	n := 0
	for range h.ReadChunks() {
		n++
		break
	}
	if n != 1 {
		t.Fatal("iteration did not stop")
	}
	if (&Header{ReadList: h.ReadList[2:]}).CallChunk() != nil {
		t.Fatal("CallChunk without a position-zero chunk")
	}
	if (ReadChunk{}).Position() != 0 || (ReadChunk{}).Length() != 0 {
		t.Fatal("empty ReadChunk")
	}
}

func TestWriteChunkLengthNoWrap(t *testing.T) {
	wc := WriteChunk{{Length: math.MaxUint32}, {Length: math.MaxUint32}}
	if got, want := wc.Length(), uint64(2*math.MaxUint32); got != want {
		t.Fatalf("Length = %d, want %d", got, want)
	}
}

func TestEqual(t *testing.T) {
	base := func() *Header {
		return &Header{XID: 1, Vers: 1, Credits: 2, Proc: ProcMsg,
			ReadList:   []ReadSegment{{Position: 4, Segment: Segment{1, 2, 3}}},
			WriteList:  []WriteChunk{{{4, 5, 6}}},
			ReplyChunk: WriteChunk{{7, 8, 9}}}
	}
	for name, mutate := range map[string]func(h *Header){
		"xid":         func(h *Header) { h.XID++ },
		"vers":        func(h *Header) { h.Vers++ },
		"credits":     func(h *Header) { h.Credits++ },
		"proc":        func(h *Header) { h.Proc = ProcNoMsg },
		"read pos":    func(h *Header) { h.ReadList[0].Position = 8 },
		"read len":    func(h *Header) { h.ReadList = nil },
		"write seg":   func(h *Header) { h.WriteList[0][0].Offset++ },
		"write count": func(h *Header) { h.WriteList = append(h.WriteList, nil) },
		"write size":  func(h *Header) { h.WriteList[0] = append(h.WriteList[0], Segment{}) },
		"reply seg":   func(h *Header) { h.ReplyChunk[0].Handle++ },
		"reply none":  func(h *Header) { h.ReplyChunk = nil },
		"err code":    func(h *Header) { h.ErrCode = CodeChunk },
		"vers low":    func(h *Header) { h.VersLow = 1 },
		"vers high":   func(h *Header) { h.VersHigh = 1 },
	} {
		a, b := base(), base()
		if !a.Equal(b) {
			t.Fatal("equal headers differ")
		}
		mutate(b)
		if a.Equal(b) || b.Equal(a) {
			t.Errorf("%s: mutated header still Equal", name)
		}
	}
	// A nil list equals an empty one; an empty present Reply chunk equals
	// an explicit HasReplyChunk with segments.
	a := &Header{Proc: ProcMsg, ReadList: []ReadSegment{}, ReplyChunk: WriteChunk{{1, 2, 3}}}
	b := &Header{Proc: ProcMsg, HasReplyChunk: true, ReplyChunk: WriteChunk{{1, 2, 3}}}
	if !a.Equal(b) {
		t.Fatal("nil/empty or implied Reply chunk presence not Equal")
	}
}

func TestProcAndCodeStrings(t *testing.T) {
	for v, want := range map[Proc]string{
		ProcMsg: "RDMA_MSG", ProcNoMsg: "RDMA_NOMSG", ProcMsgp: "RDMA_MSGP",
		ProcDone: "RDMA_DONE", ProcError: "RDMA_ERROR", 7: "Proc(7)",
	} {
		if v.String() != want {
			t.Errorf("Proc %d: %q, want %q", uint32(v), v.String(), want)
		}
	}
	for v, want := range map[ErrorCode]string{CodeVers: "ERR_VERS", CodeChunk: "ERR_CHUNK", 0: "ErrorCode(0)"} {
		if v.String() != want {
			t.Errorf("ErrorCode %d: %q, want %q", uint32(v), v.String(), want)
		}
	}
	for v, want := range map[Outcome]string{
		OutcomeOK: "ok", OutcomeErrVers: "ERR_VERS", OutcomeErrChunk: "ERR_CHUNK",
		OutcomeDrop: "drop", OutcomeFailRPC: "fail RPC", 99: "Outcome(?)",
	} {
		if v.String() != want {
			t.Errorf("Outcome %d: %q, want %q", v, v.String(), want)
		}
	}
}

// TestAppendOtherProcs: RDMA_DONE, RDMA_MSGP and unknown procedures encode
// the fixed part only, and an unknown error code encodes without a version
// range; the parsers reject all of them.
func TestAppendOtherProcs(t *testing.T) {
	for _, p := range []Proc{ProcDone, ProcMsgp, 9} {
		h := &Header{XID: 5, Vers: 1, Proc: p, ReadList: []ReadSegment{{}}}
		b := h.Append(nil)
		if want := words(5, 1, 0, uint32(p)); !bytes.Equal(b, want) || h.Len() != len(b) {
			t.Fatalf("%v: %x (Len %d), want %x", p, b, h.Len(), want)
		}
	}
	h := &Header{Vers: 1, Proc: ProcError, ErrCode: 3, VersLow: 1}
	if b := h.Append(nil); !bytes.Equal(b, words(0, 1, 0, 4, 3)) || h.Len() != ErrChunkSize {
		t.Fatalf("unknown error code: %x", b)
	}
}

func TestAppendErrors(t *testing.T) {
	if b := AppendErrVers([]byte{0xff}, 0x01020304, 32); !bytes.Equal(b, append([]byte{0xff}, words(0x01020304, 1, 32, 4, 1, 1, 1)...)) {
		t.Fatalf("AppendErrVers = %x", b)
	}
	if b := AppendErrChunk(nil, 7, 64); !bytes.Equal(b, words(7, 1, 64, 4, 2)) {
		t.Fatalf("AppendErrChunk = %x", b)
	}
	var h Header
	if _, err := h.ParseReply(AppendErrVers(nil, 9, 1), nil); err != nil ||
		h.Proc != ProcError || h.ErrCode != CodeVers || h.VersLow != 1 || h.VersHigh != 1 || h.XID != 9 {
		t.Fatalf("ERR_VERS reply: %v %+v", err, h)
	}
	if _, err := h.ParseReply(AppendErrChunk(nil, 9, 1), nil); err != nil || h.ErrCode != CodeChunk {
		t.Fatalf("ERR_CHUNK reply: %v %+v", err, h)
	}
}

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		c    Counts
		want int
	}{
		{Counts{}, 28},
		{Counts{HasReplyChunk: true}, 32},
		{Counts{ReplySegments: 1}, 48},
		{Counts{ReadSegments: 1}, 52},
		{Counts{WriteChunks: 1}, 36},
		{Counts{WriteChunks: 1, WriteSegments: 1}, 52},
		{Counts{ReadSegments: 3, WriteChunks: 2, WriteSegments: 5, ReplySegments: 2, HasReplyChunk: true}, 28 + 72 + 16 + 80 + 4 + 32},
	} {
		if got := Size(tc.c); got != tc.want {
			t.Errorf("Size(%+v) = %d, want %d", tc.c, got, tc.want)
		}
	}
	if EmptyMsgHeaderSize != 28 || ErrVersSize != 28 || ErrChunkSize != 20 || MinHeaderSize != 16 {
		t.Fatal("size constants")
	}
}

func TestMaxHeaderSize(t *testing.T) {
	// Linux's client: one chunk per list. A header with one 8-segment Read
	// chunk, one 8-segment Write chunk and an 8-segment Reply chunk.
	lim := Limits{MaxReadChunks: 1, MaxWriteChunks: 1, MaxSegments: 8}
	h := &Header{Vers: 1, Proc: ProcMsg, HasReplyChunk: true}
	for range 8 {
		h.ReadList = append(h.ReadList, ReadSegment{Position: 4})
		h.ReplyChunk = append(h.ReplyChunk, Segment{})
	}
	h.WriteList = []WriteChunk{make(WriteChunk, 8)}
	if got, want := MaxHeaderSize(lim), len(h.Append(nil)); got != want {
		t.Fatalf("MaxHeaderSize = %d, want %d", got, want)
	}
	// Such a header parses under the same limits, and one segment more
	// does not.
	var p Header
	if _, err := p.Unmarshal(h.Append(nil), &lim); err != nil {
		t.Fatal(err)
	}
	h.ReplyChunk = append(h.ReplyChunk, Segment{})
	if _, err := p.Unmarshal(h.Append(nil), &lim); err != ErrTooManySegments {
		t.Fatalf("9 segments: %v", err)
	}
	// With no chunks at all, a sender can still offer an empty Reply
	// chunk: 32 bytes, more than the largest RDMA_ERROR.
	if got := MaxHeaderSize(Limits{}); got != 32 {
		t.Fatalf("MaxHeaderSize(Limits{}) = %d", got)
	}
	if got := MaxHeaderSize(Limits{MaxReadChunks: -1, MaxWriteChunks: -5, MaxSegments: -2}); got != 32 {
		t.Fatalf("negative limits: %d", got)
	}
}

// TestAppendExtendsCallerBuffer: Append appends after existing bytes and
// does not reallocate a buffer with room.
func TestAppendExtendsCallerBuffer(t *testing.T) {
	h := &Header{XID: 1, Vers: 1, Proc: ProcMsg, WriteList: []WriteChunk{{{1, 2, 3}}}}
	buf := make([]byte, 3, 3+h.Len())
	out := h.Append(buf)
	if &out[0] != &buf[0] || len(out) != 3+h.Len() {
		t.Fatal("Append reallocated a buffer with room")
	}
}

// The chunk lists alone: what AppendChunkLists writes, UnmarshalChunkLists
// reads back, and both match the body of an RDMA_MSG header.
func TestChunkListsAlone(t *testing.T) {
	h := Header{XID: 1, Vers: Version1, Proc: ProcMsg,
		ReadList:   []ReadSegment{{Position: 8, Segment: Segment{Handle: 1, Length: 100, Offset: 7}}},
		WriteList:  []WriteChunk{{{Handle: 2, Length: 4096, Offset: 9}}},
		ReplyChunk: WriteChunk{{Handle: 3, Length: 512, Offset: 11}}}
	lists := h.AppendChunkLists(nil)
	if got, want := len(lists), ChunkListsSize(h.Counts()); got != want {
		t.Fatalf("AppendChunkLists wrote %d bytes, ChunkListsSize says %d", got, want)
	}
	whole := h.Append(nil)
	if !bytes.Equal(whole[MinHeaderSize:], lists) {
		t.Fatalf("the lists differ from the header's body:\n%x\n%x", lists, whole[MinHeaderSize:])
	}
	var got Header
	got.XID, got.Vers, got.Proc = h.XID, h.Vers, h.Proc
	r := xdr.NewReader(lists)
	if err := got.UnmarshalChunkLists(&r, nil); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&h) || r.Len() != 0 {
		t.Fatalf("read back %+v (%d bytes left), want %+v", got, r.Len(), h)
	}
	for n := range len(lists) {
		r := xdr.NewReader(lists[:n])
		if err := got.UnmarshalChunkLists(&r, nil); err == nil {
			t.Fatalf("a prefix of %d bytes parsed", n)
		}
		if len(got.ReadList)+len(got.WriteList)+len(got.ReplyChunk) != 0 || got.HasReplyChunk {
			t.Fatalf("a failed parse of %d bytes left lists behind: %+v", n, got)
		}
	}
}
