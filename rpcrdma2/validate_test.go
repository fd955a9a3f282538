package rpcrdma2

import (
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

func TestParseCall(t *testing.T) {
	rpc := func(xid uint32) []uint32 { return []uint32{xid, 0, 2} } // the start of an RPC call
	for _, c := range []struct {
		name  string
		wire  []byte
		err   error // nil: parses
		chunk *chunks.ProtocolError
	}{
		{"an inline call", words(append([]uint32{7, 2, 32, 0, 0, 0, 0, 0, 0}, rpc(7)...)...), nil, nil},
		{"a Long Call", words(7, 2, 32, 1, 0, 0, 1, 0, 9, 100, 0, 0, 0, 0, 0), nil, nil},
		{"a CONNPROP", words(0, 2, 32, 5, 0, 0), nil, nil},
		{"an inline call whose RPC XID differs", words(append([]uint32{7, 2, 32, 0, 0, 0, 0, 0, 0}, rpc(8)...)...), ErrXIDMismatch, nil},
		{"an RDMA2_MSG with no RPC message", words(7, 2, 32, 0, 0, 0, 0, 0, 0), ErrXIDMismatch, nil},
		{"an RDMA2_ERROR from a requester", words(7, 2, 32, 4, 1, 9), ErrErrorFromRequester, nil},
		{"a reply", words(append([]uint32{7, 2, 32, 0, 1, 0, 0, 0, 0}, rpc(7)...)...), ErrNotCall, nil},
		{"a NOMSG without a position-zero Read chunk", words(7, 2, 32, 1, 0, 0, 0, 0, 0), nil, chunks.ErrNoMsgNoCallChunk},
		{"a Read chunk at an unaligned position", words(append([]uint32{7, 2, 32, 0, 0, 0, 1, 5, 9, 100, 0, 0, 0, 0, 0}, rpc(7)...)...), nil, chunks.ErrPositionAlign},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h Header
			n, err := h.ParseCall(c.wire, nil)
			switch {
			case c.err == nil && c.chunk == nil:
				if err != nil || n == 0 {
					t.Fatalf("ParseCall: %d, %v", n, err)
				}
			case c.err != nil:
				if !errors.Is(err, c.err) {
					t.Fatalf("ParseCall: %v, want %v", err, c.err)
				}
			default:
				if ChunkError(err) != c.chunk || OutcomeOf(err) != OutcomeErrBadXDR {
					t.Fatalf("ParseCall: %v (chunk error %v), want %v", err, ChunkError(err), c.chunk)
				}
			}
			if err != nil && (n != 0 || h.XID != 7) {
				t.Fatalf("a failed ParseCall: hdrLen %d, XID %d", n, h.XID)
			}
		})
	}
}

func TestParseReply(t *testing.T) {
	rpc := []uint32{7, 1, 0} // the start of an RPC reply
	for _, c := range []struct {
		name  string
		wire  []byte
		err   error
		chunk *chunks.ProtocolError
	}{
		{"an inline reply", words(append([]uint32{7, 2, 32, 0, 1, 0, 0, 0, 0}, rpc...)...), nil, nil},
		{"a reply through the Reply chunk", words(7, 2, 32, 1, 1, 0, 0, 0, 1, 1, 9, 100, 0, 0), nil, nil},
		{"an error", words(7, 2, 32, 4, 1, 8, 5000), nil, nil},
		{"a CONNPROP", words(7, 2, 32, 5, 1, 0), nil, nil},
		{"a call (no F_RESPONSE)", words(append([]uint32{7, 2, 32, 0, 0, 0, 0, 0, 0}, rpc...)...), ErrNotReply, nil},
		{"an inline reply with another XID", words(append([]uint32{7, 2, 32, 0, 1, 0, 0, 0, 0}, 8, 1, 0)...), ErrXIDMismatch, nil},
		{"a reply with a Read list", words(append([]uint32{7, 2, 32, 0, 1, 0, 1, 0, 9, 100, 0, 0, 0, 0, 0}, rpc...)...), nil, chunks.ErrReplyReadList},
		{"a NOMSG reply without a Reply chunk", words(7, 2, 32, 1, 1, 0, 0, 0, 0), nil, chunks.ErrReplyNoMsgNoReplyChunk},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h Header
			n, err := h.ParseReply(c.wire, nil)
			switch {
			case c.err == nil && c.chunk == nil:
				if err != nil || n == 0 {
					t.Fatalf("ParseReply: %d, %v", n, err)
				}
			case c.err != nil:
				if !errors.Is(err, c.err) {
					t.Fatalf("ParseReply: %v, want %v", err, c.err)
				}
			default:
				if ChunkError(err) != c.chunk {
					t.Fatalf("ParseReply: %v, want %v", err, c.chunk)
				}
			}
			if err != nil && (n != 0 || h.XID != 7) {
				t.Fatalf("a failed ParseReply: hdrLen %d, XID %d", n, h.XID)
			}
		})
	}
}
