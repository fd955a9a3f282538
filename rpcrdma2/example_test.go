package rpcrdma2_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
)

// A requester's first message on a version 2 connection (draft §7): its
// transport properties, small enough for a version 1 peer's 1,024 bytes.
func ExampleHeader_Append() {
	h := rpcrdma2.Header{
		Prefix: rpcrdma2.Prefix{XID: 1, Vers: rpcrdma2.Version2, Credit: 32, Type: rpcrdma2.HTypeConnProp},
		Props: rpcrdma2.Properties{
			rpcrdma2.ReceiveBufferSize(4096),
			rpcrdma2.ReverseRequests(rpcrdma2.ReverseInline),
		},
	}
	b := h.Append(make([]byte, 0, 1024)) // no allocation: b has room
	fmt.Println(len(b), "bytes; Len", h.Len())
	fmt.Printf("% x\n", b)
	// Output:
	// 48 bytes; Len 48
	// 00 00 00 01 00 00 00 02 00 00 00 20 00 00 00 05 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 04 00 00 10 00 00 00 00 02 00 00 00 04 00 00 00 01
}

// A responder parses a call and decides how to answer: an unknown header
// type gets RDMA2_ERR_INVAL_HTYPE, a call with chunks goes on to version
// 1's validation of its lists.
func ExampleHeader_Unmarshal() {
	var h rpcrdma2.Header
	for _, msg := range [][]byte{
		// An RDMA2_MSG whose reply may come in a Reply chunk, which the
		// responder may invalidate with Send With Invalidate.
		{0, 0, 0, 7, 0, 0, 0, 2, 0, 0, 0, 32, 0, 0, 0, 0, 0, 0, 0, 0,
			0, 0, 0x12, 0x34, // rdma_inv_handle
			0, 0, 0, 0, 0, 0, 0, 0, // no Read list, no Write list
			0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0x12, 0x34, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			0, 0, 0, 7}, // the RPC call starts here
		// A header type no one defined.
		{0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 32, 0, 0, 0, 9, 0, 0, 0, 0},
	} {
		n, err := h.Unmarshal(msg, nil)
		if err != nil {
			fmt.Printf("xid %d: %v: answer %v\n", h.XID, err, rpcrdma2.OutcomeOf(err))
			continue
		}
		fmt.Printf("xid %d: %v, %d header bytes, invalidate %#x, reply chunk of %d bytes\n",
			h.XID, h.Type, n, h.InvHandle, h.Chunks.ReplyChunk.Length())
		fmt.Println("version 1's checks:", h.Chunks.ValidateCall(len(msg)-n, nil) == nil, h.Chunks.Proc == chunks.ProcMsg)
	}
	// Output:
	// xid 7: RDMA2_MSG, 56 header bytes, invalidate 0x1234, reply chunk of 4096 bytes
	// version 1's checks: true true
	// xid 8: rpcrdma2: unknown rdma_htype: answer RDMA2_ERR_INVAL_HTYPE
}
