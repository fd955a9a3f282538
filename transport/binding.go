package transport

import (
	"github.com/go-rpcrdma/rpcrdma/transport/internal/marshal"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// DataItem is a DDP-eligible data item of an RPC message (RFC 8166 §6.1): its
// opaque bytes, not their XDR length word, start at byte Off of the message
// and are N bytes long. Present is false when there is none.
type DataItem = marshal.DataItem

// CallInfo is what an upper-layer binding tells the transport about one call.
type CallInfo struct {
	// Arg is the DDP-eligible argument (NFSv3 WRITE data, SYMLINK path).
	Arg DataItem
	// MaxReply is the largest possible reply message, header included;
	// 0 means unknown (the transport then assumes Config.MaxRPCSize).
	MaxReply int
	// ReplyData is the largest DDP-eligible result the reply may carry
	// (the count of an NFSv3 READ); 0 means none. A requester refuses a
	// call whose ReplyData exceeds Config.MaxRPCSize (ErrMessageTooLarge)
	// before it registers anything for it: no reply can carry more.
	ReplyData int
}

// Binding is an RPC-over-RDMA upper-layer binding (RFC 8166 §6): for each
// program it names the data items that may move by direct data placement and
// bounds reply sizes. The transport asks it about every call (on both sides:
// the requester to plan the call, the responder to know what the reply may
// place) and about every reply that may carry a DDP-eligible result.
//
// Implementations must be pure and safe for concurrent use; they must not
// keep msg or reply.
type Binding interface {
	// Call inspects an encoded RPC call. h is its decoded header; args is
	// the offset of the procedure arguments in msg.
	Call(h *xdr.CallHeader, msg []byte, args int) CallInfo
	// ReplyData locates the DDP-eligible result in a reply to the call
	// described by h: the offset of its bytes (just after its length word)
	// and their length, taken from the length word. results is the offset
	// of the procedure results in reply. The bytes of the result itself
	// need not be present: a requester calls it on a reply whose result
	// was removed and placed in a Write chunk.
	ReplyData(h *xdr.CallHeader, reply []byte, results int) DataItem
}

// NullBinding is the binding for programs without DDP-eligible items: every
// call and reply moves inline, or whole through a Long Call or the Reply
// chunk. A NULL procedure (0) is known to have an empty reply; any other
// procedure may have a reply of any size up to Config.MaxRPCSize, so the
// requester offers a Reply chunk whenever the inline threshold is smaller.
type NullBinding struct{}

// nullReplyMax is the largest reply to a NULL procedure: an accepted reply
// header with a verifier of the largest size RFC 5531 allows (§8.2).
const nullReplyMax = 6*4 + xdr.MaxAuthBytes

// Call implements Binding.
func (NullBinding) Call(h *xdr.CallHeader, msg []byte, args int) CallInfo {
	if h.Proc == 0 {
		return CallInfo{MaxReply: nullReplyMax}
	}
	return CallInfo{}
}

// ReplyData implements Binding.
func (NullBinding) ReplyData(*xdr.CallHeader, []byte, int) DataItem { return DataItem{} }
