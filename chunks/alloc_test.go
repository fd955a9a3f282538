package chunks

import "testing"

// benchHeaders are the headers of the allocation tests and benchmarks.
var benchHeaders = map[string]*Header{
	"inline": {XID: gxid, Vers: 1, Credits: 128, Proc: ProcMsg},
	"readchunk": {XID: gxid, Vers: 1, Credits: 128, Proc: ProcMsg,
		ReadList: []ReadSegment{
			{Position: 140, Segment: gseg(1, 4096, 0)},
			{Position: 140, Segment: gseg(2, 4096, 0x1000)},
		}},
	"multichunk": {XID: gxid, Vers: 1, Credits: 128, Proc: ProcMsg,
		ReadList: []ReadSegment{
			{Position: 160, Segment: gseg(1, 8192, 0)},
			{Position: 8356, Segment: gseg(2, 4096, 0x2000)},
			{Position: 8356, Segment: gseg(3, 4096, 0x3000)},
		},
		WriteList: []WriteChunk{
			{gseg(4, 4096, 0), gseg(5, 4096, 0x1000), gseg(6, 4096, 0x2000)},
			{gseg(7, 4096, 0x3000), gseg(8, 1024, 0x4000)},
		},
		HasReplyChunk: true,
		ReplyChunk:    WriteChunk{gseg(9, 4096, 0x5000), gseg(10, 4096, 0x6000)},
	},
}

// benchCall returns h's encoding followed by a 400-byte inline message.
func benchCall(h *Header) []byte {
	return append(h.Append(nil), rpcMsg(h.XID, 400)...)
}

// TestUnmarshalAllocs: once a Header has parsed its largest header, parsing
// any header allocates nothing.
func TestUnmarshalAllocs(t *testing.T) {
	var h Header
	if _, err := h.ParseCall(benchCall(benchHeaders["multichunk"]), nil); err != nil {
		t.Fatal(err)
	}
	for name, bh := range benchHeaders {
		b := benchCall(bh)
		for _, p := range []struct {
			name  string
			parse func() error
		}{
			{"Unmarshal", func() error { _, err := h.Unmarshal(b, nil); return err }},
			{"ParseCall", func() error { _, err := h.ParseCall(b, nil); return err }},
		} {
			if n := testing.AllocsPerRun(200, func() {
				if err := p.parse(); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("%s %s: %v allocs per header", p.name, name, n)
			}
		}
	}
	reply := (&Header{XID: 1, Vers: 1, Proc: ProcNoMsg, HasReplyChunk: true,
		ReplyChunk: WriteChunk{{Length: 100}}}).Append(nil)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := h.ParseReply(reply, nil); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ParseReply: %v allocs per header", n)
	}
	badReply := words(cat(fx(msg), rs(4, 8), []uint32{0, 0, 0, 0xabcd})...)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := h.ParseReply(badReply, nil); ReplyOutcomeOf(err) != OutcomeFailRPC {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("rejected reply: %v allocs", n)
	}
	// Rejected headers allocate nothing either.
	bad := words(cat(fx(msg), rs(6, 8), []uint32{0, 0, 0})...)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := h.ParseCall(bad, nil); OutcomeOf(err) != OutcomeErrChunk {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("rejected header: %v allocs", n)
	}
}

// TestAppendAllocs: encoding into a buffer with room allocates nothing.
func TestAppendAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	for name, h := range benchHeaders {
		if n := testing.AllocsPerRun(200, func() { buf = h.Append(buf[:0]) }); n != 0 {
			t.Errorf("Append %s: %v allocs", name, n)
		}
	}
	if n := testing.AllocsPerRun(200, func() {
		buf = AppendErrVers(buf[:0], 1, 2)
		buf = AppendErrChunk(buf, 1, 2)
	}); n != 0 {
		t.Errorf("AppendErrVers/AppendErrChunk: %v allocs", n)
	}
}

// TestReadChunksAllocs: iterating over Read chunks allocates nothing.
func TestReadChunksAllocs(t *testing.T) {
	h := benchHeaders["multichunk"]
	var total uint64
	if n := testing.AllocsPerRun(200, func() {
		for c := range h.ReadChunks() {
			total += c.Length()
		}
	}); n != 0 {
		t.Errorf("ReadChunks: %v allocs", n)
	}
	if total == 0 {
		t.Fatal("no chunks seen")
	}
}
