package chunks_test

import (
	"encoding/binary"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// A requester builds a Long Call: the whole RPC Call travels in a
// position-zero Read chunk, and the reply is to come back in a Reply chunk.
func ExampleHeader_Append() {
	h := chunks.Header{
		XID: 0x5a3c0001, Vers: chunks.Version1, Credits: 128, Proc: chunks.ProcNoMsg,
		ReadList: []chunks.ReadSegment{
			{Position: 0, Segment: chunks.Segment{Handle: 0x101, Length: 4096, Offset: 0x7f0000}},
			{Position: 0, Segment: chunks.Segment{Handle: 0x102, Length: 104, Offset: 0x7f1000}},
		},
		HasReplyChunk: true,
		ReplyChunk:    chunks.WriteChunk{{Handle: 0x103, Length: 8192, Offset: 0x7f2000}},
	}
	buf := h.Append(make([]byte, 0, 1024)) // no allocation: buf has room
	fmt.Println(len(buf), "bytes; Len", h.Len())
	for i := 0; i < len(buf); i += 16 {
		fmt.Printf("% x\n", buf[i:min(i+16, len(buf))])
	}
	// Output:
	// 96 bytes; Len 96
	// 5a 3c 00 01 00 00 00 01 00 00 00 80 00 00 00 01
	// 00 00 00 01 00 00 00 00 00 00 01 01 00 00 10 00
	// 00 00 00 00 00 7f 00 00 00 00 00 01 00 00 00 00
	// 00 00 01 02 00 00 00 68 00 00 00 00 00 7f 10 00
	// 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 01
	// 00 00 01 03 00 00 20 00 00 00 00 00 00 7f 20 00
}

// A responder parses a call, answers a malformed one as RFC 8166 §4.5
// requires, and walks the Read chunks of a good one.
func ExampleHeader_ParseCall() {
	// An NFSv3 WRITE as a Linux client sends it: the inline arguments
	// (140 bytes here) and the data in a Read chunk at position 140.
	call := chunks.Header{XID: 7, Vers: chunks.Version1, Credits: 128, Proc: chunks.ProcMsg,
		ReadList: []chunks.ReadSegment{
			{Position: 140, Segment: chunks.Segment{Handle: 1, Length: 4096, Offset: 0x10000}},
			{Position: 140, Segment: chunks.Segment{Handle: 2, Length: 3001, Offset: 0x11000}},
		},
	}
	rpc := make([]byte, 140) // the RPC Call; it starts with the XID
	rpc[3] = 7
	msg := append(call.Append(nil), rpc...)

	var h chunks.Header // reused for every call on a connection
	hdrLen, err := h.ParseCall(msg, nil)
	switch chunks.OutcomeOf(err) {
	case chunks.OutcomeErrVers:
		reply := chunks.AppendErrVers(nil, h.XID, 64)
		fmt.Printf("send ERR_VERS: %x\n", reply)
	case chunks.OutcomeErrChunk:
		reply := chunks.AppendErrChunk(nil, h.XID, 64)
		fmt.Printf("send ERR_CHUNK: %x\n", reply)
	case chunks.OutcomeDrop:
		fmt.Println("drop")
	case chunks.OutcomeOK:
		fmt.Printf("%v xid %d: %d inline bytes after a %d-byte header\n",
			h.Proc, h.XID, len(msg[hdrLen:]), hdrLen)
		for c := range h.ReadChunks() {
			fmt.Printf("read chunk at %d: %d segments, %d bytes\n", c.Position(), len(c), c.Length())
		}
	}
	// Output:
	// RDMA_MSG xid 7: 140 inline bytes after a 76-byte header
	// read chunk at 140: 2 segments, 7097 bytes
}

// A call with the wrong version is answered with ERR_VERS, one whose Read
// chunk position is not a multiple of four with ERR_CHUNK, and a header too
// short to carry an XID is dropped.
func ExampleOutcomeOf() {
	var h chunks.Header
	for _, msg := range [][]byte{
		{0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		(&chunks.Header{XID: 10, Vers: 1, Proc: chunks.ProcMsg,
			ReadList: []chunks.ReadSegment{{Position: 6}}}).Append(nil),
		{0, 0, 0, 11, 0, 0, 0, 1},
	} {
		_, err := h.ParseCall(msg, nil)
		switch o := chunks.OutcomeOf(err); o {
		case chunks.OutcomeErrVers:
			fmt.Printf("%v (%v): % x\n", o, err, chunks.AppendErrVers(nil, h.XID, 64))
		case chunks.OutcomeErrChunk:
			fmt.Printf("%v (%v): % x\n", o, err, chunks.AppendErrChunk(nil, h.XID, 64))
		default:
			fmt.Printf("%v (%v)\n", o, err)
		}
	}
	// Output:
	// ERR_VERS (chunks: unsupported transport header version): 00 00 00 09 00 00 00 01 00 00 00 40 00 00 00 04 00 00 00 01 00 00 00 01 00 00 00 01
	// ERR_CHUNK (chunks: Read chunk position is not a multiple of 4): 00 00 00 0a 00 00 00 01 00 00 00 40 00 00 00 04 00 00 00 02
	// drop (chunks: header shorter than 16 bytes)
}

// A requester parses replies: a Long Reply in the Reply chunk, and an
// RDMA_ERROR that fails the RPC.
func ExampleHeader_ParseReply() {
	var h chunks.Header
	longReply := (&chunks.Header{XID: 3, Vers: 1, Credits: 64, Proc: chunks.ProcNoMsg,
		HasReplyChunk: true, ReplyChunk: chunks.WriteChunk{{Handle: 9, Length: 5000}}}).Append(nil)
	for _, msg := range [][]byte{longReply, chunks.AppendErrChunk(nil, 4, 64)} {
		if _, err := h.ParseReply(msg, nil); err != nil {
			fmt.Println(chunks.ReplyOutcomeOf(err), err)
			continue
		}
		switch h.Proc {
		case chunks.ProcError:
			fmt.Printf("xid %d: %v: fail the RPC\n", h.XID, h.ErrCode)
		case chunks.ProcNoMsg:
			fmt.Printf("xid %d: reply of %d bytes in the Reply chunk; %d credits\n",
				h.XID, h.ReplyChunk.Length(), h.Credits)
		}
	}
	// Output:
	// xid 3: reply of 5000 bytes in the Reply chunk; 64 credits
	// xid 4: ERR_CHUNK: fail the RPC
}

// The structural parser alone, for tools that only decode headers.
func ExampleHeader_Unmarshal() {
	b := (&chunks.Header{XID: 1, Vers: 1, Credits: 32, Proc: chunks.ProcMsg,
		WriteList: []chunks.WriteChunk{
			{{Handle: 1, Length: 4096}, {Handle: 2, Length: 4096}},
			{{Handle: 3, Length: 512}},
		}}).Append(nil)
	var h chunks.Header
	n, err := h.Unmarshal(b, nil)
	fmt.Println(n, err, h.Counts())
	for i, wc := range h.WriteList {
		fmt.Printf("write chunk %d: %d segments, %d bytes\n", i, len(wc), wc.Length())
	}
	// Output:
	// 92 <nil> {0 2 3 0 false}
	// write chunk 0: 2 segments, 8192 bytes
	// write chunk 1: 1 segments, 512 bytes
}

// How much of an RPC Call fits inline with its transport header: the exact
// size for a given header shape, and the largest header a sender that uses
// at most one 8-segment chunk per list can produce.
func ExampleSize() {
	const inline = 4096 // the inline threshold Linux negotiates (RFC 8797)
	oneReadChunk := chunks.Size(chunks.Counts{ReadSegments: 2})
	fmt.Println("empty header:", chunks.Size(chunks.Counts{}))
	fmt.Println("header with a 2-segment Read chunk:", oneReadChunk, "leaves", inline-oneReadChunk)

	lim := chunks.Limits{MaxReadChunks: 1, MaxWriteChunks: 1, MaxSegments: 8}
	fmt.Println("largest header:", chunks.MaxHeaderSize(lim), "leaves", inline-chunks.MaxHeaderSize(lim))
	// Output:
	// empty header: 28
	// header with a 2-segment Read chunk: 76 leaves 4020
	// largest header: 488 leaves 3608
}

// The Read chunks of a Long Call that also carries a data item, such as an
// NFSv4 COMPOUND whose WRITE data is reduced out of the position-zero chunk.
func ExampleHeader_ReadChunks() {
	h := chunks.Header{Vers: 1, Proc: chunks.ProcNoMsg, ReadList: []chunks.ReadSegment{
		{Position: 0, Segment: chunks.Segment{Handle: 1, Length: 4096}},
		{Position: 0, Segment: chunks.Segment{Handle: 2, Length: 200}},
		{Position: 296, Segment: chunks.Segment{Handle: 3, Length: 65536}},
	}}
	fmt.Println(h.NumReadChunks(), "chunks; call chunk", h.CallChunk().Length(), "bytes")
	for c := range h.ReadChunks() {
		fmt.Println(c.Position(), len(c), c.Length())
	}
	fmt.Println(h.ValidateCall(0, nil))
	// Output:
	// 2 chunks; call chunk 4296 bytes
	// 0 2 4296
	// 296 1 65536
	// <nil>
}

// A requester encodes an RDMA_MSG call whose data travels in a Read chunk;
// a responder parses it and would answer ERR_CHUNK had it been malformed.
func Example() {
	call := chunks.Header{XID: 7, Vers: chunks.Version1, Credits: 128, Proc: chunks.ProcMsg,
		ReadList: []chunks.ReadSegment{{Position: 140, Segment: chunks.Segment{Handle: 1, Length: 8192}}}}
	rpc := make([]byte, 140)
	binary.BigEndian.PutUint32(rpc, 7) // the RPC Call starts with its XID
	msg := append(call.Append(nil), rpc...)

	var h chunks.Header // reused for every message of a connection
	n, err := h.ParseCall(msg, nil)
	if chunks.OutcomeOf(err) == chunks.OutcomeErrChunk {
		msg = chunks.AppendErrChunk(msg[:0], h.XID, 64) // send this instead
	}
	fmt.Println(n, err, h.NumReadChunks(), h.ReadList[0].Length, len(msg[n:]))
	// Output: 52 <nil> 1 8192 140
}
