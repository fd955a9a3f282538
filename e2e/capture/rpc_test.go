package capture

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

var (
	client = netip.MustParseAddr("10.0.0.2")
	server = netip.MustParseAddr("10.0.0.1")
)

// rpcCall returns an RPC call message with AUTH_NONE and the given
// arguments.
func rpcCall(xid, prog, vers, proc uint32, args ...byte) []byte {
	h := xdr.CallHeader{XID: xid, Prog: prog, Vers: vers, Proc: proc}
	return append(h.Append(nil), args...)
}

// rpcReply returns a successful RPC reply with the given results.
func rpcReply(xid uint32, results ...byte) []byte {
	h := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
	return append(h.Append(nil), results...)
}

// send builds a Send message from src with the transport header words and
// the inline message.
func send(src netip.Addr, hdr []uint32, inline []byte) Message {
	dst := server
	if src == server {
		dst = client
	}
	return Message{Src: src, Dst: dst, DestQP: 17, Kind: KindSend, Opcode: OpSendOnly, Packets: 1,
		Payload: append(words(hdr...), inline...)}
}

func TestFindRPCs(t *testing.T) {
	msgs := []Message{
		send(client, []uint32{1, 1, 128, 0, 0, 0, 0}, rpcCall(1, ProgNFS, 3, 0)),              // NULL
		{Src: client, Dst: server, DestQP: 1, Kind: KindSend, Payload: make([]byte, MADSize)}, // a MAD
		{Src: server, Dst: client, DestQP: 17, Kind: KindWrite, Payload: []byte("w")},
		send(client, []uint32{2, 1, 128, 0, 0, 0, 1, 1, 9, 600, 0, 0}, rpcCall(2, ProgNFS, 3, 17)), // READDIRPLUS, Reply chunk
		send(server, []uint32{1, 1, 64, 0, 0, 0, 0}, rpcReply(1)),
		send(server, []uint32{2, 1, 64, 1, 0, 0, 1, 1, 9, 500, 0, 0}, nil),     // Long Reply
		send(server, []uint32{3, 1, 64, 0, 0, 0, 0}, rpcReply(3)),              // a reply to no call
		send(client, []uint32{4, 1, 128, 1, 1, 0, 5, 300, 0, 0, 0, 0, 0}, nil), // Long Call
		send(client, []uint32{5, 1, 128}, nil),                                 // too short
		send(client, []uint32{6, 1, 128, 0, 0, 0, 0}, []byte{0, 0}),            // no room for an RPC header
		send(client, []uint32{7, 1, 128, 0, 0, 0, 0}, rpcCall(7, ProgNFS, 3, 0)[:20]),
	}
	rs := FindRPCs(msgs)
	require.Len(t, rs, 9)
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name()
	}
	assert.Equal(t, []string{"NFSv3 NULL call", "NFSv3 READDIRPLUS call", "NFSv3 NULL reply",
		"NFSv3 READDIRPLUS reply", "unknown reply", "program 0 version 0 procedure 0 call",
		"not RPC-over-RDMA", "not RPC-over-RDMA", "not RPC-over-RDMA"}, names)
	assert.Same(t, rs[0], rs[2].Call)
	assert.Same(t, rs[2], rs[0].Reply)
	assert.Same(t, rs[1], rs[3].Call)
	assert.Nil(t, rs[3].Inline)
	assert.Equal(t, rpcReply(1), rs[2].Inline)
	assert.True(t, rs[5].IsCall, "a position-zero Read chunk makes a Long Call")
	for _, i := range []int{6, 7, 8} {
		assert.Error(t, rs[i].Err, names[i])
	}
	assert.ErrorIs(t, rs[6].Err, ErrTransportHeader)
	for _, i := range []int{0, 1, 2, 3, 4, 5} {
		assert.NoError(t, rs[i].Err)
	}
}

func TestProcName(t *testing.T) {
	assert.Equal(t, "NFSv3 WRITE", ProcName(ProgNFS, 3, 7))
	assert.Equal(t, "NFSv3 COMMIT", ProcName(ProgNFS, 3, 21))
	assert.Equal(t, "NFSACLv3 GETACL", ProcName(ProgNFSACL, 3, 1))
	assert.Equal(t, "program 100003 version 3 procedure 22", ProcName(ProgNFS, 3, 22))
	assert.Equal(t, "program 100003 version 4 procedure 1", ProcName(ProgNFS, 4, 1))
	assert.Equal(t, "program 100021 version 4 procedure 2", ProcName(ProgNLM, 4, 2))
}
