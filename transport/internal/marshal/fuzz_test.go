package marshal

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// fuzzMaxRPC bounds the messages the fuzz targets build, to keep each input
// fast.
const fuzzMaxRPC = 256 << 10

// FuzzAppendCall feeds a responder's reconstruction of a call arbitrary
// Sends (transport header and inline bytes) and arbitrary pulled chunk
// data. Headers ParseCall rejects are not rebuilt (the engine answers them
// with ERR_CHUNK or drops them); for the others AppendCall must not panic,
// must leave dst's prefix alone, must bound its output by what it was
// given, and must put every inserted chunk, padded with zeros, at its XDR
// position in the rebuilt message.
func FuzzAppendCall(f *testing.F) {
	call := (&xdr.CallHeader{XID: 7, Prog: 100003, Vers: 3, Proc: 7}).Append(nil)
	long := &chunks.Header{XID: 7, Vers: 1, Credits: 8, Proc: chunks.ProcNoMsg,
		ReadList: []chunks.ReadSegment{{Position: 0, Segment: seg(1, uint32(len(call)))}}}
	f.Add(long.Append(nil), call)
	ddp := &chunks.Header{XID: 7, Vers: 1, Credits: 8, Proc: chunks.ProcMsg,
		ReadList: []chunks.ReadSegment{{Position: uint32(len(call) + 4), Segment: seg(1, 5)}}}
	f.Add(append(ddp.Append(nil), xdr.AppendUint32(call, 5)...), []byte("hello"))
	multi := &chunks.Header{XID: 7, Vers: 1, Credits: 8, Proc: chunks.ProcNoMsg, ReadList: []chunks.ReadSegment{
		{Position: 0, Segment: seg(7, 16)}, {Position: 8, Segment: seg(1, 3)}, {Position: 8, Segment: seg(2, 2)},
		{Position: 20, Segment: seg(3, 8)}}}
	f.Add(multi.Append(nil), []byte("AAAAAAAABBBBCCCC12345abcdefgh"))
	f.Add((&chunks.Header{XID: 7, Vers: 1, Proc: chunks.ProcMsg}).Append(nil), []byte{})
	f.Fuzz(func(t *testing.T, wire, pulled []byte) {
		var h chunks.Header
		n, err := h.ParseCall(wire, nil)
		if err != nil {
			return
		}
		inline := wire[n:]
		prefix := []byte("dst:")
		dst := append(make([]byte, 0, 64), prefix...)
		out, err := AppendCall(dst, &h, inline, pulled)
		checkCallPieces(t, &h, inline, pulled, out[len(prefix):], err)
		if !bytes.Equal(out[:len(prefix)], prefix) {
			t.Fatalf("AppendCall changed dst's prefix: %q", out[:len(prefix)])
		}
		if err != nil {
			if len(out) != len(prefix) {
				t.Fatalf("AppendCall failed (%v) but appended %d bytes", err, len(out)-len(prefix))
			}
			return
		}
		msg := out[len(prefix):]
		nChunks := 0
		for range h.ReadChunks() {
			nChunks++
		}
		if limit := len(inline) + len(pulled) + 3*nChunks; len(msg) > limit {
			t.Fatalf("rebuilt %d bytes from %d inline and %d pulled (%d chunks)", len(msg), len(inline), len(pulled), nChunks)
		}
		if nChunks == 0 && !bytes.Equal(msg, inline) {
			t.Fatal("a call without Read chunks was not rebuilt as its inline bytes")
		}
		// Every inserted chunk sits at its position, followed by its pad.
		var off uint64
		first := true
		for c := range h.ReadChunks() {
			data := pulled[off : off+c.Length()]
			off += c.Length()
			if first && c.Position() == 0 && h.Proc == chunks.ProcNoMsg {
				first = false
				continue
			}
			first = false
			pos := int(c.Position())
			end := pos + xdr.RoundUp(len(data))
			if end > len(msg) || !bytes.Equal(msg[pos:pos+len(data)], data) {
				t.Fatalf("chunk at position %d (%d bytes) is not where it belongs in the rebuilt %d bytes", pos, len(data), len(msg))
			}
			if !bytes.Equal(msg[pos+len(data):end], zeros[:end-pos-len(data)]) {
				t.Fatalf("chunk at position %d: pad %x is not zeros", pos, msg[pos+len(data):end])
			}
		}
	})
}

// checkCallPieces checks CallPieces against AppendCall's result msg (and
// error): pieces that join into msg whenever it gives them, and pieces
// whenever the call has at most one Read chunk and AppendCall succeeded.
func checkCallPieces(t *testing.T, h *chunks.Header, inline, pulled, msg []byte, err error) {
	t.Helper()
	head, data, tail, ok := CallPieces(h, inline, pulled)
	nChunks := 0
	for range h.ReadChunks() {
		nChunks++
	}
	switch {
	case ok && err != nil:
		t.Fatalf("CallPieces gave pieces of a call AppendCall rejects (%v)", err)
	case !ok && err == nil && nChunks <= 1:
		t.Fatalf("CallPieces gave no pieces for a call of %d chunk(s) that AppendCall rebuilt", nChunks)
	case !ok:
		return
	}
	joined := append(append(slices.Clone(head), data...), make([]byte, xdr.Padding(len(data)))...)
	if joined = append(joined, tail...); !bytes.Equal(joined, msg) {
		t.Fatalf("CallPieces joined %q, AppendCall rebuilt %q", joined, msg)
	}
	checkLayoutCall(t, h, inline, pulled, msg, nChunks)
}

// checkLayoutCall checks LayoutCall and AssembleCall against AppendCall's
// msg, for a call of at most one Read chunk that AppendCall rebuilt: laid
// out whenever the chunk's data is all of pulled, and the message
// assembled around the data byte for byte (the buffer's bytes outside the
// data scribbled first: AssembleCall must write every one of them).
func checkLayoutCall(t *testing.T, h *chunks.Header, inline, pulled, msg []byte, nChunks int) {
	t.Helper()
	if h.Proc == chunks.ProcNoMsg {
		inline = nil
	}
	l, ok := LayoutCall(h, len(inline), len(pulled))
	var length uint64
	for c := range h.ReadChunks() {
		length = c.Length()
	}
	if want := nChunks == 1 && length == uint64(len(pulled)); ok != want {
		t.Fatalf("LayoutCall ok %v for %d chunk(s) of %d bytes, %d pulled", ok, nChunks, length, len(pulled))
	}
	if !ok {
		return
	}
	if l.Len != len(msg) {
		t.Fatalf("LayoutCall length %d, AppendCall rebuilt %d bytes", l.Len, len(msg))
	}
	buf := bytes.Repeat([]byte{0xa5}, l.Len)
	copy(buf[l.DataOff:], pulled[:l.DataLen])
	AssembleCall(buf, inline, l)
	if !bytes.Equal(buf, msg) {
		t.Fatalf("AssembleCall made %q, AppendCall rebuilt %q", buf, msg)
	}
}

// FuzzPlanCall plans arbitrary calls at arbitrary thresholds within what
// RFC 8797 allows (1024 and up). A plan must fit the send threshold, match
// its form, and round-trip: the call header it implies has HeaderLen bytes
// and passes ParseCall, and a responder's AppendCall rebuilds the message
// byte for byte from the Send and the chunk.
func FuzzPlanCall(f *testing.F) {
	f.Add(uint32(40), uint32(0), uint32(0), false, uint32(24), uint32(0), uint32(1024), uint32(1024))
	f.Add(uint32(140+8192), uint32(140), uint32(8192), true, uint32(200), uint32(0), uint32(1024), uint32(1024))
	f.Add(uint32(140+3004), uint32(140), uint32(3001), true, uint32(200), uint32(0), uint32(1024), uint32(1024))
	f.Add(uint32(2000+8192), uint32(2000), uint32(8192), true, uint32(200), uint32(0), uint32(1024), uint32(1024))
	f.Add(uint32(120), uint32(0), uint32(0), false, uint32(120+65536), uint32(65536), uint32(1024), uint32(1024))
	f.Add(uint32(100), uint32(0), uint32(0), false, uint32(8192+3000), uint32(8192), uint32(1024), uint32(1024))
	f.Add(uint32(100), uint32(0), uint32(0), false, uint32(0), uint32(0), uint32(65536), uint32(1024))
	f.Fuzz(func(t *testing.T, msgLen, argOff, argN uint32, present bool, maxReply, replyData, send, recv uint32) {
		thr := Thresholds{SendInline: 1024 + int(send%(255<<10)), RecvInline: 1024 + int(recv%(255<<10)), MaxRPC: fuzzMaxRPC}
		in := CallInput{MsgLen: int(msgLen % (fuzzMaxRPC + 1024)), MaxReply: int(maxReply % (2 * fuzzMaxRPC)),
			ReplyData: int(replyData % (2 * fuzzMaxRPC))}
		if present {
			in.Arg = DataItem{Off: int(argOff % (fuzzMaxRPC + 64)), N: int(argN % (fuzzMaxRPC + 64)), Present: true}
		}
		p, err := PlanCall(in, thr)
		if err != nil {
			return
		}
		if in.MsgLen > thr.MaxRPC {
			t.Fatalf("planned a %d-byte call over MaxRPC %d", in.MsgLen, thr.MaxRPC)
		}
		if p.WriteLen > thr.MaxRPC || p.ReplyLen > thr.MaxRPC {
			t.Fatalf("plan %+v offers a chunk over MaxRPC %d", p, thr.MaxRPC)
		}
		if p.HeaderLen+p.InlineLen > thr.SendInline {
			t.Fatalf("plan %+v overflows the send threshold %d", p, thr.SendInline)
		}
		switch p.Form {
		case CallInline:
			if p.InlineLen != in.MsgLen || p.ChunkLen != 0 {
				t.Fatalf("inline plan %+v for a %d-byte call", p, in.MsgLen)
			}
		case CallReadChunk:
			if !in.Arg.Present || p.Data != in.Arg || p.ChunkLen != in.Arg.N || p.InlineLen != in.MsgLen-xdr.RoundUp(in.Arg.N) {
				t.Fatalf("read-chunk plan %+v for %+v", p, in)
			}
		case CallLong:
			if p.ChunkLen != in.MsgLen || p.InlineLen != 0 {
				t.Fatalf("long plan %+v for a %d-byte call", p, in.MsgLen)
			}
		default:
			t.Fatalf("unknown form %v", p.Form)
		}
		if p.Reply&ReplyInline != 0 && p.Reply != ReplyInline {
			t.Fatalf("reply forms %b mix inline and chunks", p.Reply)
		}
		if p.Reply&ReplyWrite != 0 && (p.WriteLen != in.ReplyData || in.ReplyData == 0) {
			t.Fatalf("write chunk of %d for reply data %d", p.WriteLen, in.ReplyData)
		}
		if p.Reply&ReplyLong != 0 && (p.ReplyLen <= 0 || p.ReplyLen > thr.MaxRPC) {
			t.Fatalf("reply chunk of %d (MaxRPC %d)", p.ReplyLen, thr.MaxRPC)
		}

		// Round trip: the message (its item's pad zero, as XDR has it), the
		// header the plan implies, the responder's parse and rebuild.
		msg := make([]byte, in.MsgLen)
		for i := range msg {
			msg[i] = byte(i*7) | 1
		}
		if in.Arg.Present {
			clear(msg[in.Arg.Off+in.Arg.N : in.Arg.end()])
		}
		h := chunks.Header{XID: 1, Vers: chunks.Version1, Credits: 8, Proc: chunks.ProcMsg}
		var inline, pulled []byte
		switch p.Form {
		case CallInline:
			inline = msg
		case CallReadChunk:
			inline = AppendReduced(nil, msg, p.Data)
			pulled = msg[p.Data.Off : p.Data.Off+p.Data.N]
			h.ReadList = []chunks.ReadSegment{{Position: uint32(p.Data.Off), Segment: seg(9, uint32(len(pulled)))}}
		case CallLong:
			h.Proc = chunks.ProcNoMsg
			pulled = msg
			h.ReadList = []chunks.ReadSegment{{Position: 0, Segment: seg(9, uint32(len(msg)))}}
		}
		if p.Reply&ReplyWrite != 0 {
			h.WriteList = []chunks.WriteChunk{{seg(10, uint32(p.WriteLen))}}
		}
		if p.Reply&ReplyLong != 0 {
			h.HasReplyChunk, h.ReplyChunk = true, chunks.WriteChunk{seg(11, uint32(p.ReplyLen))}
		}
		if len(inline) >= 4 {
			h.XID = binary.BigEndian.Uint32(inline) // rdma_xid repeats the call's XID
		}
		wire := h.Append(nil)
		if len(wire) != p.HeaderLen || len(inline) != p.InlineLen {
			t.Fatalf("plan %+v: the header is %d bytes, the inline part %d", p, len(wire), len(inline))
		}
		wire = append(wire, inline...)
		var ph chunks.Header
		n, err := ph.ParseCall(wire, nil)
		if err != nil {
			// PlanCall does not look inside the message: one whose inline
			// part cannot hold an XID, or whose argument sits at offset 0
			// (a Read chunk at position zero of an RDMA_MSG), is no call
			// a binding hands it.
			if h.Proc == chunks.ProcMsg && len(inline) < 4 || p.Form == CallReadChunk && p.Data.Off == 0 {
				return
			}
			t.Fatalf("ParseCall of the planned %v call: %v", p.Form, err)
		}
		got, err := AppendCall(nil, &ph, wire[n:], pulled)
		checkCallPieces(t, &ph, wire[n:], pulled, got, err)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("plan %+v: rebuilt call differs (%d bytes, want %d): %v", p, len(got), len(msg), err)
		}
	})
}

// FuzzPlanReply plans arbitrary replies to arbitrary (valid) call headers.
// A plan must fit the send threshold, never write more than was offered,
// account for every byte of the message, and its RDMA Writes must cover
// the result exactly within the offered segments.
func FuzzPlanReply(f *testing.F) {
	call := &chunks.Header{XID: 3, Vers: 1, Credits: 8, Proc: chunks.ProcMsg,
		WriteList: []chunks.WriteChunk{{seg(1, 8192)}}, HasReplyChunk: true, ReplyChunk: chunks.WriteChunk{seg(2, 1<<16)}}
	cw := append(call.Append(nil), (&xdr.CallHeader{XID: 3, Prog: 100003, Vers: 3, Proc: 6}).Append(nil)...)
	f.Add(cw, uint32(8300), uint32(100), uint32(8192), true, uint32(1024))
	f.Add(cw, uint32(100), uint32(0), uint32(0), false, uint32(4096))
	f.Add(cw, uint32(20000), uint32(0), uint32(0), false, uint32(1024))
	f.Fuzz(func(t *testing.T, wire []byte, msgLen, dataOff, dataN uint32, present bool, send uint32) {
		var h chunks.Header
		if _, err := h.ParseCall(wire, nil); err != nil {
			return
		}
		in := ReplyInput{MsgLen: int(msgLen % fuzzMaxRPC), Call: &h}
		if present {
			in.Data = DataItem{Off: int(dataOff % fuzzMaxRPC), N: int(dataN % fuzzMaxRPC), Present: true}
		}
		sendInline := 1024 + int(send%(255<<10))
		p, err := PlanReply(in, sendInline)
		if err != nil {
			return
		}
		moved := 0
		if p.Data.Present {
			if len(h.WriteList) == 0 || p.Data != in.Data || uint64(p.Data.N) > h.WriteList[0].Length() {
				t.Fatalf("plan %+v writes a result the call did not offer room for", p)
			}
			moved = p.Data.end() - p.Data.Off
			ops, err := AppendWriteOps(nil, p.Data.Off, p.Data.N, h.WriteList[0])
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for i, op := range ops {
				s := h.WriteList[0][i]
				if op.Len <= 0 || op.Len > int(s.Length) || op.Handle != s.Handle || op.Offset != s.Offset || op.Local != p.Data.Off+total {
					t.Fatalf("write op %d %+v for segment %+v", i, op, s)
				}
				total += op.Len
			}
			if total != p.Data.N {
				t.Fatalf("write ops move %d bytes of a %d-byte result", total, p.Data.N)
			}
			if echo := AppendEchoChunk(nil, h.WriteList[0], p.Data.N); echo.Length() != uint64(p.Data.N) || len(echo) != len(h.WriteList[0]) {
				t.Fatalf("echoed Write chunk reports %d bytes in %d segments", echo.Length(), len(echo))
			}
		}
		if p.InlineLen+p.ReplyLen+moved != in.MsgLen || (p.InlineLen != 0 && p.ReplyLen != 0) {
			t.Fatalf("plan %+v accounts for %d+%d+%d of %d bytes", p, p.InlineLen, p.ReplyLen, moved, in.MsgLen)
		}
		switch p.Proc {
		case chunks.ProcMsg:
			if p.HeaderLen+p.InlineLen > sendInline {
				t.Fatalf("inline reply plan %+v overflows %d", p, sendInline)
			}
		case chunks.ProcNoMsg:
			if !h.HasReplyChunk || uint64(p.ReplyLen) > h.ReplyChunk.Length() || p.HeaderLen > sendInline {
				t.Fatalf("reply-chunk plan %+v for a Reply chunk of %d bytes at %d", p, h.ReplyChunk.Length(), sendInline)
			}
		default:
			t.Fatalf("plan proc %v", p.Proc)
		}
	})
}
