package transport

// The hostile-peer suite of issue 5. A raw peer (hostile_peer_test.go)
// speaks the verbs provider directly and breaks RPC-over-RDMA version 1 on
// purpose; every case names the outcome our engine must produce and checks
// it, and every case also checks that nothing panicked, that every
// goroutine is gone after Close, and that the exchange allocated less than
// a bound (Go heap and registered memory) far below what the peer claimed.
//
// TestHostileRequester (hostile_requester_test.go) runs a raw requester
// against our responder (Listen and an RPC server loop);
// TestHostileResponder (hostile_responder_test.go) runs a raw responder
// against our requester (Dial). This file holds what both use: the raw
// header builder hpHdr and the check of the case table.

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// hpNoPD marks a peer that sends no private data.
var hpNoPD = []byte{}

// hpPD builds RFC 8797 private data: R bit, send and receive size codes.
func hpPD(r bool, send, recv byte) []byte {
	f := byte(0)
	if r {
		f = 1
	}
	return []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, f, send, recv}
}

// wantStat fails unless got == want.
func wantStat(t testing.TB, name string, got, want uint64) {
	t.Helper()
	if got != want {
		t.Errorf("Stats().%s = %d, want %d", name, got, want)
	}
}

// hpS returns a segment (RDMA handle, length, offset).
func hpS(handle, length uint32, off uint64) chunks.Segment {
	return chunks.Segment{Handle: handle, Length: length, Offset: off}
}

// hpSegs returns n consecutive 64-byte segments of one window, starting at
// addr.
func hpSegs(n int, rkey uint32, addr uint64) []chunks.Segment {
	segs := make([]chunks.Segment, n)
	for i := range segs {
		segs[i] = hpS(rkey, 64, addr+uint64(64*i))
	}
	return segs
}

// hpHdr builds an RPC-over-RDMA version 1 transport header (RFC 8166 §4.2)
// for a raw peer to send, well formed or not. hpHeader starts one: version
// 1, 32 credits, RDMA_MSG, three empty chunk lists. Each method sets one
// part and returns the builder, so a case reads as the header it sends:
//
//	hpHeader(xid).proc(chunks.ProcNoMsg).read(0, hpS(rkey, n, addr)).bytes()
//
// bytes assembles, in order: the fixed part (xid, vers, credits, proc); the
// Read list, the Write list and the Reply chunk (or, after lists, raw words
// in their place); the trailing words of trail; the payload of rpc; all of
// it cut to the length given to truncate.
type hpHdr struct {
	xid, hVers, hCredits uint32
	hProc                chunks.Proc
	reads                []chunks.ReadSegment
	writes               []hpChunk
	replyChunk           *hpChunk
	raw                  []uint32 // replaces the chunk lists when rawSet
	rawSet               bool
	trailing             []uint32
	payload              []byte
	cut                  int // the message's length if ≥ 0
}

// hpChunk is a counted array of segments (a Write chunk or the Reply chunk)
// whose count word says count, which a hostile header makes differ from
// len(segs).
type hpChunk struct {
	count uint32
	segs  []chunks.Segment
}

// hpHeader starts a header for xid: version 1, 32 credits, RDMA_MSG, empty
// chunk lists.
func hpHeader(xid uint32) *hpHdr {
	return &hpHdr{xid: xid, hVers: chunks.Version1, hCredits: 32, hProc: chunks.ProcMsg, cut: -1}
}

// vers sets rdma_vers.
func (h *hpHdr) vers(v uint32) *hpHdr { h.hVers = v; return h }

// credits sets rdma_credit (a request or a grant).
func (h *hpHdr) credits(n uint32) *hpHdr { h.hCredits = n; return h }

// proc sets rdma_proc; any value goes, known or not.
func (h *hpHdr) proc(p chunks.Proc) *hpHdr { h.hProc = p; return h }

// read adds a Read list entry: position and segment.
func (h *hpHdr) read(position uint32, s chunks.Segment) *hpHdr {
	h.reads = append(h.reads, chunks.ReadSegment{Position: position, Segment: s})
	return h
}

// write adds a Write chunk of segs.
func (h *hpHdr) write(segs ...chunks.Segment) *hpHdr {
	return h.writeClaim(uint32(len(segs)), segs...)
}

// writeClaim adds a Write chunk whose segment count says count while it
// carries segs.
func (h *hpHdr) writeClaim(count uint32, segs ...chunks.Segment) *hpHdr {
	h.writes = append(h.writes, hpChunk{count, segs})
	return h
}

// reply sets the Reply chunk to segs (none: a present, empty Reply chunk).
func (h *hpHdr) reply(segs ...chunks.Segment) *hpHdr {
	return h.replyClaim(uint32(len(segs)), segs...)
}

// replyClaim sets a Reply chunk whose segment count says count while it
// carries segs.
func (h *hpHdr) replyClaim(count uint32, segs ...chunks.Segment) *hpHdr {
	h.replyChunk = &hpChunk{count, segs}
	return h
}

// lists puts the raw words ws where the chunk lists go (for RDMA_ERROR its
// body, for RDMA_MSGP its alignment words and lists, or a bad
// discriminator); with no words the header is its fixed part alone.
func (h *hpHdr) lists(ws ...uint32) *hpHdr { h.raw, h.rawSet = ws, true; return h }

// trail appends raw words after the chunk lists.
func (h *hpHdr) trail(ws ...uint32) *hpHdr { h.trailing = append(h.trailing, ws...); return h }

// rpc sets the payload that follows the header (the RPC message of
// RDMA_MSG).
func (h *hpHdr) rpc(msg []byte) *hpHdr { h.payload = msg; return h }

// truncate cuts the whole message to n bytes.
func (h *hpHdr) truncate(n int) *hpHdr { h.cut = n; return h }

// words returns the header's XDR words, payload excluded, uncut.
func (h *hpHdr) words() []uint32 {
	n := 7 + len(h.raw) + len(h.trailing) + 6*len(h.reads)
	for _, c := range h.writes {
		n += 2 + 4*len(c.segs)
	}
	if h.replyChunk != nil {
		n += 1 + 4*len(h.replyChunk.segs)
	}
	ws := append(make([]uint32, 0, n), h.xid, h.hVers, h.hCredits, uint32(h.hProc))
	if h.rawSet {
		return append(append(ws, h.raw...), h.trailing...)
	}
	for _, r := range h.reads {
		ws = append(append(ws, 1, r.Position), hpSeg(r.Handle, r.Length, r.Offset)...)
	}
	ws = append(ws, 0)
	for _, c := range h.writes {
		ws = c.appendWords(append(ws, 1))
	}
	ws = append(ws, 0)
	if h.replyChunk != nil {
		ws = h.replyChunk.appendWords(append(ws, 1))
	} else {
		ws = append(ws, 0)
	}
	return append(ws, h.trailing...)
}

// appendWords appends the counted array's words to ws.
func (c *hpChunk) appendWords(ws []uint32) []uint32 {
	ws = append(ws, c.count)
	for _, s := range c.segs {
		ws = append(ws, hpSeg(s.Handle, s.Length, s.Offset)...)
	}
	return ws
}

// bytes returns the message.
func (h *hpHdr) bytes() []byte {
	b := append(hpWords(h.words()...), h.payload...)
	if h.cut >= 0 && h.cut < len(b) {
		b = b[:h.cut]
	}
	return b
}

// TestHostileCaseTable checks the suite itself: at least 30 cases, each
// with a distinct name and a stated outcome. With -v it prints the
// table of cases and outcomes.
func TestHostileCaseTable(t *testing.T) {
	seen := map[string]bool{}
	var rows []string
	add := func(role, name, want string) {
		key := role + "/" + name
		if name == "" || want == "" || seen[key] {
			t.Errorf("case %q: empty or duplicate name, or no expected outcome", key)
		}
		seen[key] = true
		rows = append(rows, "| "+role+" | `"+name+"` | "+strings.ReplaceAll(want, "|", "\\|")+" |")
	}
	for _, c := range hpServerCases {
		add("requester → our responder", c.name, c.want)
	}
	for _, c := range hpClientCases {
		add("responder → our requester", c.name, c.want)
	}
	if len(rows) < 30 {
		t.Errorf("%d hostile cases, the issue asks for at least 30", len(rows))
	}
	if testing.Verbose() {
		t.Log("\n| Hostile peer | Case | Expected outcome |\n|---|---|---|\n" + strings.Join(rows, "\n"))
	}
}

// TestHostileHeaderBuilder checks the raw header builder itself: a
// well-formed header is what chunks.Header.Append encodes, and each
// malformation is exactly the words it claims.
func TestHostileHeaderBuilder(t *testing.T) {
	s1, s2, s3 := hpS(1, 64, 0x1000), hpS(2, 128, 0x2_0000_2000), hpS(3, 8, 0x3000)
	rpc := hpRPCCall(9, hpProcNull, nil)
	well := []struct {
		b *hpHdr
		h chunks.Header
	}{
		{hpHeader(9), chunks.Header{XID: 9, Vers: 1, Credits: 32, Proc: chunks.ProcMsg}},
		{hpHeader(9).credits(8).proc(chunks.ProcNoMsg).read(0, s1).read(40, s2).write(s1, s2).write(s3).reply(s3),
			chunks.Header{XID: 9, Vers: 1, Credits: 8, Proc: chunks.ProcNoMsg,
				ReadList:   []chunks.ReadSegment{{Position: 0, Segment: s1}, {Position: 40, Segment: s2}},
				WriteList:  []chunks.WriteChunk{{s1, s2}, {s3}},
				ReplyChunk: chunks.WriteChunk{s3}, HasReplyChunk: true}},
		{hpHeader(9).reply(), chunks.Header{XID: 9, Vers: 1, Credits: 32, Proc: chunks.ProcMsg, HasReplyChunk: true}},
	}
	for i, w := range well {
		if got, want := w.b.rpc(rpc).bytes(), append(w.h.Append(nil), rpc...); !bytes.Equal(got, want) {
			t.Errorf("well-formed header %d:\n got %x\nwant %x", i, got, want)
		}
	}
	bad := []struct {
		b    *hpHdr
		want []uint32
	}{
		{hpHeader(9).vers(2).lists(), []uint32{9, 2, 32, 0}},
		{hpHeader(9).proc(7).lists(1, 2), []uint32{9, 1, 32, 7, 1, 2}},
		{hpHeader(9).trail(5, 6), []uint32{9, 1, 32, 0, 0, 0, 0, 5, 6}},
		{hpHeader(9).lists(0, 7, 0).trail(5), []uint32{9, 1, 32, 0, 0, 7, 0, 5}},
		{hpHeader(9).writeClaim(0xffffffff, s3), []uint32{9, 1, 32, 0, 0, 1, 0xffffffff, 3, 8, 0, 0x3000, 0, 0}},
		{hpHeader(9).replyClaim(2, s3), []uint32{9, 1, 32, 0, 0, 0, 1, 2, 3, 8, 0, 0x3000}},
		{hpHeader(9).read(6, s2).truncate(20), []uint32{9, 1, 32, 0, 1}},
	}
	for i, c := range bad {
		if got, want := c.b.bytes(), hpWords(c.want...); !bytes.Equal(got, want) {
			t.Errorf("malformed header %d:\n got %x\nwant %x", i, got, want)
		}
	}
	if got := hpHeader(9).rpc(rpc).truncate(30).bytes(); !bytes.Equal(got, append(hpWords(9, 1, 32, 0, 0, 0, 0), rpc...)[:30]) {
		t.Errorf("truncate through the payload: %x", got)
	}
}
