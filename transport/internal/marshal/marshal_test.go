package marshal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func th(send, recv int) Thresholds {
	return Thresholds{SendInline: send, RecvInline: recv, MaxRPC: 1 << 20}
}

func TestPlanCall(t *testing.T) {
	const hdr = chunks.EmptyMsgHeaderSize // 28
	readSeg := chunks.ReadSegmentSize
	writeChunk := chunks.WriteChunkOverhead + chunks.SegmentSize
	replyChunk := 4 + chunks.SegmentSize
	tests := []struct {
		name string
		in   CallInput
		t    Thresholds
		want CallPlan
	}{
		{"null call inline", CallInput{MsgLen: 40, MaxReply: 24}, th(1024, 1024),
			CallPlan{Form: CallInline, InlineLen: 40, Reply: ReplyInline, HeaderLen: hdr}},
		{"exactly fits", CallInput{MsgLen: 1024 - hdr, MaxReply: 24}, th(1024, 1024),
			CallPlan{Form: CallInline, InlineLen: 1024 - hdr, Reply: ReplyInline, HeaderLen: hdr}},
		{"one byte over: long call", CallInput{MsgLen: 1024 - hdr + 1, MaxReply: 24}, th(1024, 1024),
			CallPlan{Form: CallLong, ChunkLen: 1024 - hdr + 1, Reply: ReplyInline, HeaderLen: hdr + readSeg}},
		{"write data in a read chunk", CallInput{MsgLen: 140 + 8192, Arg: DataItem{Off: 140, N: 8192, Present: true}, MaxReply: 200}, th(1024, 1024),
			CallPlan{Form: CallReadChunk, Data: DataItem{Off: 140, N: 8192, Present: true}, ChunkLen: 8192, InlineLen: 140, Reply: ReplyInline, HeaderLen: hdr + readSeg}},
		{"odd write data drops its pad inline", CallInput{MsgLen: 140 + 3001 + 3, Arg: DataItem{Off: 140, N: 3001, Present: true}, MaxReply: 200}, th(1024, 1024),
			CallPlan{Form: CallReadChunk, Data: DataItem{Off: 140, N: 3001, Present: true}, ChunkLen: 3001, InlineLen: 140, Reply: ReplyInline, HeaderLen: hdr + readSeg}},
		{"small write stays inline at 4096", CallInput{MsgLen: 140 + 2048, Arg: DataItem{Off: 140, N: 2048, Present: true}, MaxReply: 200}, th(4096, 4096),
			CallPlan{Form: CallInline, InlineLen: 140 + 2048, Reply: ReplyInline, HeaderLen: hdr}},
		{"args too large even reduced: long call", CallInput{MsgLen: 2000 + 8192, Arg: DataItem{Off: 2000, N: 8192, Present: true}, MaxReply: 200}, th(1024, 1024),
			CallPlan{Form: CallLong, ChunkLen: 2000 + 8192, Reply: ReplyInline, HeaderLen: hdr + readSeg}},
		{"read reply in a write chunk", CallInput{MsgLen: 120, MaxReply: 120 + 65536, ReplyData: 65536}, th(1024, 1024),
			CallPlan{Form: CallInline, InlineLen: 120, Reply: ReplyWrite, WriteLen: 65536, HeaderLen: hdr + writeChunk}},
		{"small read fits inline at 65536", CallInput{MsgLen: 120, MaxReply: 120 + 8192, ReplyData: 8192}, th(65536, 65536),
			CallPlan{Form: CallInline, InlineLen: 120, Reply: ReplyInline, HeaderLen: hdr}},
		{"unknown reply size: reply chunk", CallInput{MsgLen: 100}, th(1024, 1024),
			CallPlan{Form: CallInline, InlineLen: 100, Reply: ReplyLong, ReplyLen: 1 << 20, HeaderLen: hdr + replyChunk}},
		{"large reply without DDP: reply chunk", CallInput{MsgLen: 100, MaxReply: 5000}, th(4096, 4096),
			CallPlan{Form: CallInline, InlineLen: 100, Reply: ReplyLong, ReplyLen: 5000, HeaderLen: hdr + replyChunk}},
		{"asymmetric: small recv forces reply chunk", CallInput{MsgLen: 100, MaxReply: 2000}, th(65536, 1024),
			CallPlan{Form: CallInline, InlineLen: 100, Reply: ReplyLong, ReplyLen: 2000, HeaderLen: hdr + replyChunk}},
		{"asymmetric: large recv, small send", CallInput{MsgLen: 2000, MaxReply: 2000}, th(1024, 65536),
			CallPlan{Form: CallLong, ChunkLen: 2000, Reply: ReplyInline, HeaderLen: hdr + readSeg}},
		{"write chunk and reply chunk", CallInput{MsgLen: 100, MaxReply: 8192 + 3000, ReplyData: 8192}, th(1024, 1024),
			CallPlan{Form: CallInline, InlineLen: 100, Reply: ReplyWrite | ReplyLong, WriteLen: 8192, ReplyLen: 8192 + 3000, HeaderLen: hdr + writeChunk + replyChunk}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanCall(tc.in, tc.t)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("PlanCall:\n got %+v\nwant %+v", got, tc.want)
			}
			if got.HeaderLen+got.InlineLen > tc.t.SendInline {
				t.Errorf("plan overflows the send threshold: %d+%d > %d", got.HeaderLen, got.InlineLen, tc.t.SendInline)
			}
		})
	}
}

func TestPlanCallErrors(t *testing.T) {
	if _, err := PlanCall(CallInput{MsgLen: 2 << 20}, th(1024, 1024)); !errors.Is(err, ErrCallTooLarge) {
		t.Errorf("oversized call: %v", err)
	}
	// A READ of count 0xffffffff: no Write chunk of 4 GiB is planned.
	if _, err := PlanCall(CallInput{MsgLen: 100, MaxReply: 1 << 32, ReplyData: 1<<32 - 1}, th(1024, 1024)); !errors.Is(err, ErrReplyTooLarge) {
		t.Errorf("oversized result: %v", err)
	}
	if p, err := PlanCall(CallInput{MsgLen: 100, ReplyData: 1 << 20}, th(1024, 1024)); err != nil || p.WriteLen != 1<<20 {
		t.Errorf("result of MaxRPC: %+v, %v", p, err)
	}
	for _, d := range []DataItem{{Off: 2, N: 4, Present: true}, {Off: 96, N: 8, Present: true}, {Off: -4, N: 1, Present: true}, {Off: 0, N: -1, Present: true}} {
		if _, err := PlanCall(CallInput{MsgLen: 100, Arg: d}, th(1024, 1024)); !errors.Is(err, ErrBadDataItem) {
			t.Errorf("item %+v: %v", d, err)
		}
	}
}

func seg(h uint32, l uint32) chunks.Segment {
	return chunks.Segment{Handle: h, Length: l, Offset: uint64(h) << 32}
}

func TestPlanReply(t *testing.T) {
	write := &chunks.Header{Proc: chunks.ProcMsg, WriteList: []chunks.WriteChunk{{seg(1, 8192)}}}
	reply := &chunks.Header{Proc: chunks.ProcMsg, HasReplyChunk: true, ReplyChunk: chunks.WriteChunk{seg(2, 4096), seg(3, 4096)}}
	none := &chunks.Header{Proc: chunks.ProcMsg}
	both := &chunks.Header{Proc: chunks.ProcMsg, WriteList: []chunks.WriteChunk{{seg(1, 8192)}}, HasReplyChunk: true, ReplyChunk: chunks.WriteChunk{seg(2, 8192)}}
	data := DataItem{Off: 120, N: 8000, Present: true}
	tests := []struct {
		name string
		in   ReplyInput
		want ReplyPlan
		err  error
	}{
		{"small inline", ReplyInput{MsgLen: 100, Call: none}, ReplyPlan{Proc: chunks.ProcMsg, InlineLen: 100, HeaderLen: 28}, nil},
		{"inline despite a reply chunk (InlineWhenFits)", ReplyInput{MsgLen: 100, Call: reply, InlineWhenFits: true}, ReplyPlan{Proc: chunks.ProcMsg, InlineLen: 100, HeaderLen: 28}, nil},
		{"an offered reply chunk is used although the reply fits (svcrdma)", ReplyInput{MsgLen: 100, Call: reply}, ReplyPlan{Proc: chunks.ProcNoMsg, ReplyLen: 100, HeaderLen: 28 + 4 + 32}, nil},
		{"too large, no chunk", ReplyInput{MsgLen: 2000, Call: none}, ReplyPlan{}, ErrReplyChunkTooSmall},
		{"reply chunk", ReplyInput{MsgLen: 5000, Call: reply}, ReplyPlan{Proc: chunks.ProcNoMsg, ReplyLen: 5000, HeaderLen: 28 + 4 + 32}, nil},
		{"reply chunk too small", ReplyInput{MsgLen: 8193, Call: reply}, ReplyPlan{}, ErrReplyChunkTooSmall},
		{"read data into write chunk", ReplyInput{MsgLen: 120 + 8000 + 40, Data: data, Call: write},
			ReplyPlan{Proc: chunks.ProcMsg, Data: data, InlineLen: 160, HeaderLen: 28 + 24}, nil},
		{"data larger than write chunk", ReplyInput{MsgLen: 120 + 9000, Data: DataItem{Off: 120, N: 9000, Present: true}, Call: write}, ReplyPlan{}, ErrWriteChunkTooSmall},
		{"error reply: write chunk unused", ReplyInput{MsgLen: 100, Call: write}, ReplyPlan{Proc: chunks.ProcMsg, InlineLen: 100, HeaderLen: 28 + 24}, nil},
		{"data without a write chunk goes through the reply chunk", ReplyInput{MsgLen: 120 + 8000, Data: data, Call: reply},
			ReplyPlan{Proc: chunks.ProcNoMsg, ReplyLen: 8120, HeaderLen: 28 + 4 + 32}, nil},
		{"write chunk and reply chunk", ReplyInput{MsgLen: 120 + 8000 + 2000, Data: DataItem{Off: 120, N: 8000, Present: true}, Call: both},
			ReplyPlan{Proc: chunks.ProcNoMsg, Data: DataItem{Off: 120, N: 8000, Present: true}, ReplyLen: 2120, HeaderLen: 28 + 24 + 20}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanReply(tc.in, 1024)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err == nil && got != tc.want {
				t.Errorf("PlanReply:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestAppendEchoChunk(t *testing.T) {
	offered := chunks.WriteChunk{seg(1, 4096), seg(2, 4096), seg(3, 4096)}
	got := AppendEchoChunk(nil, offered, 5000)
	want := chunks.WriteChunk{seg(1, 4096), seg(2, 904), seg(3, 0)}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("echo = %+v, want %+v", got, want)
	}
}

func TestAppendWriteOps(t *testing.T) {
	segs := chunks.WriteChunk{seg(1, 100), seg(2, 0), seg(3, 100)}
	ops, err := AppendWriteOps(nil, 8, 150, segs)
	if err != nil {
		t.Fatal(err)
	}
	want := []RemoteOp{{Handle: 1, Offset: 1 << 32, Local: 8, Len: 100}, {Handle: 3, Offset: 3 << 32, Local: 108, Len: 50}}
	if len(ops) != 2 || ops[0] != want[0] || ops[1] != want[1] {
		t.Errorf("ops = %+v, want %+v", ops, want)
	}
	if _, err := AppendWriteOps(nil, 0, 201, segs); !errors.Is(err, ErrChunkOverflow) {
		t.Errorf("overflow: %v", err)
	}
	rops := AppendReadOps(nil, 0, chunks.ReadChunk{{Position: 4, Segment: seg(1, 10)}, {Position: 4, Segment: seg(2, 6)}})
	if len(rops) != 2 || rops[1].Local != 10 || rops[1].Len != 6 {
		t.Errorf("read ops = %+v", rops)
	}
}

// randomCall builds an RPC message with a DDP-eligible opaque item: words of
// random data, then a length word and the item and its pad, then more words.
func randomCall(r *rand.Rand) ([]byte, DataItem) {
	before := 4 * (1 + r.IntN(600))
	after := 4 * r.IntN(8)
	n := r.IntN(10000)
	msg := make([]byte, 0, before+4+xdr.RoundUp(n)+after)
	for range before / 4 {
		msg = xdr.AppendUint32(msg, r.Uint32())
	}
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	off := len(msg) + 4
	msg = xdr.AppendOpaque(msg, data)
	for range after / 4 {
		msg = xdr.AppendUint32(msg, r.Uint32())
	}
	return msg, DataItem{Off: off, N: n, Present: true}
}

// TestCallRoundTrip: what a requester plans and sends, a responder rebuilds
// byte for byte, for every form, at several thresholds, with the chunk's
// XDR pad omitted (RFC 8166) and included (Linux since 5.12).
func TestCallRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	forms := map[CallForm]int{}
	for i := range 3000 {
		msg, item := randomCall(r)
		thr := th([]int{1024, 4096, 65536}[i%3], 1024)
		p, err := PlanCall(CallInput{MsgLen: len(msg), Arg: item, MaxReply: 100}, thr)
		if err != nil {
			t.Fatal(err)
		}
		forms[p.Form]++
		xid := binary.BigEndian.Uint32(msg)
		h := chunks.Header{XID: xid, Vers: 1, Proc: chunks.ProcMsg}
		var inline, pulled []byte
		switch p.Form {
		case CallInline:
			inline = msg
		case CallReadChunk:
			inline = AppendReduced(nil, msg, p.Data)
			if len(inline) != p.InlineLen {
				t.Fatalf("reduced length %d, plan says %d", len(inline), p.InlineLen)
			}
			chunk := msg[p.Data.Off : p.Data.Off+p.Data.N]
			if i%2 == 1 { // Linux >= 5.12: the chunk carries the pad
				chunk = msg[p.Data.Off : p.Data.Off+xdr.RoundUp(p.Data.N)]
			}
			pulled = chunk
			h.ReadList = []chunks.ReadSegment{{Position: uint32(p.Data.Off), Segment: seg(9, uint32(len(chunk)))}}
		case CallLong:
			h.Proc = chunks.ProcNoMsg
			pulled = msg
			h.ReadList = []chunks.ReadSegment{{Position: 0, Segment: seg(9, uint32(len(msg)))}}
		}
		wire := append(h.Append(nil), inline...)
		var ph chunks.Header
		n, err := ph.ParseCall(wire, nil)
		if err != nil {
			t.Fatalf("ParseCall of planned %v call: %v", p.Form, err)
		}
		got, err := AppendCall(nil, &ph, wire[n:], pulled)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("form %v: rebuilt call differs (len %d vs %d)", p.Form, len(got), len(msg))
		}
	}
	for _, f := range []CallForm{CallInline, CallReadChunk, CallLong} {
		if forms[f] == 0 {
			t.Errorf("form %v never exercised", f)
		}
	}
}

// TestMultiChunkRebuild: several Read chunks at several positions, split over
// several segments, inside a Long Call.
func TestMultiChunkRebuild(t *testing.T) {
	// full message: A(8) | item1 (5 bytes + 3 pad) | B(4) | item2 (8) | C(4)
	full := []byte("AAAAAAAA" + "12345\x00\x00\x00" + "BBBB" + "abcdefgh" + "CCCC")
	inline := []byte("AAAAAAAA" + "BBBB" + "CCCC")
	h := chunks.Header{XID: 1, Vers: 1, Proc: chunks.ProcMsg, ReadList: []chunks.ReadSegment{
		{Position: 8, Segment: seg(1, 3)}, {Position: 8, Segment: seg(2, 2)},
		{Position: 20, Segment: seg(3, 8)},
	}}
	got, err := AppendCall(nil, &h, inline, []byte("12345abcdefgh"))
	if err != nil || !bytes.Equal(got, full) {
		t.Fatalf("got %q, %v; want %q", got, err, full)
	}
	// The same as a Long Call: position-zero chunk holds the reduced message.
	h.Proc = chunks.ProcNoMsg
	h.ReadList = append([]chunks.ReadSegment{{Position: 0, Segment: seg(7, 16)}}, h.ReadList...)
	got, err = AppendCall(nil, &h, nil, append([]byte("AAAAAAAABBBBCCCC"), "12345abcdefgh"...))
	if err != nil || !bytes.Equal(got, full) {
		t.Fatalf("long call: got %q, %v; want %q", got, err, full)
	}
	// A position past the message is refused, not a panic.
	h = chunks.Header{Proc: chunks.ProcMsg, ReadList: []chunks.ReadSegment{{Position: 400, Segment: seg(1, 4)}}}
	if _, err := AppendCall(nil, &h, inline, []byte("xxxx")); !errors.Is(err, ErrBadPosition) {
		t.Errorf("bad position: %v", err)
	}
	// pulled shorter than the chunks: refused.
	h.ReadList[0].Position = 4
	if _, err := AppendCall(nil, &h, inline, []byte("xx")); !errors.Is(err, ErrChunkOverflow) {
		t.Errorf("short pull: %v", err)
	}
}

// TestReplyRoundTrip: a reply whose result the responder writes into a Write
// chunk is rebuilt byte for byte by the requester.
func TestReplyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		msg, item := randomCall(r)
		call := &chunks.Header{Proc: chunks.ProcMsg, WriteList: []chunks.WriteChunk{{seg(1, 16384)}},
			HasReplyChunk: true, ReplyChunk: chunks.WriteChunk{seg(2, 1<<20)}}
		p, err := PlanReply(ReplyInput{MsgLen: len(msg), Data: item, Call: call}, 1024)
		if err != nil {
			t.Fatal(err)
		}
		reduced := AppendReduced(nil, msg, p.Data)
		if len(reduced) != p.InlineLen+p.ReplyLen {
			t.Fatalf("reduced %d, plan inline %d reply %d", len(reduced), p.InlineLen, p.ReplyLen)
		}
		written := msg[item.Off : item.Off+item.N]
		got, err := AppendInsert(nil, reduced, item.Off, written)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("rebuilt reply differs: %v", err)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	msg := make([]byte, 4096)
	h := chunks.Header{Proc: chunks.ProcMsg, ReadList: []chunks.ReadSegment{{Position: 100, Segment: seg(1, 1000)}}}
	dst := make([]byte, 0, 8192)
	ops := make([]RemoteOp, 0, 8)
	echo := make(chunks.WriteChunk, 0, 4)
	call := &chunks.Header{Proc: chunks.ProcMsg, WriteList: []chunks.WriteChunk{{seg(1, 8192)}}}
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = PlanCall(CallInput{MsgLen: 5000, Arg: DataItem{Off: 100, N: 4000, Present: true}, MaxReply: 200}, th(1024, 1024))
		_, _ = PlanReply(ReplyInput{MsgLen: 3000, Data: DataItem{Off: 100, N: 2000, Present: true}, Call: call}, 1024)
		_, _ = AppendCall(dst[:0], &h, msg[:200], msg[:1000])
		_, _ = AppendInsert(dst[:0], msg[:200], 100, msg[:1000])
		_ = AppendReduced(dst[:0], msg, DataItem{Off: 100, N: 1000, Present: true})
		_, _ = AppendWriteOps(ops[:0], 0, 3000, call.WriteList[0])
		_ = AppendEchoChunk(echo[:0], call.WriteList[0], 3000)
	})
	if allocs != 0 {
		t.Errorf("allocs = %v, want 0", allocs)
	}
}
