package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoldenFormat(t *testing.T) {
	call := send(client, []uint32{0x9053b497, 1, 128, 0, 1, 112, 0x9d3, 102400, 0x9053b497, 0x7d93b000, 0, 0, 0},
		rpcCall(0x9053b497, ProgNFS, 3, 7, make([]byte, 72)...))
	reply := send(server, []uint32{0x9053b497, 1, 64, 0, 0, 0, 0}, rpcReply(0x9053b497, 0, 0, 0, 0))
	reply.Opcode, reply.Ext, reply.InvalidateRKey = OpSendOnlyInvalidate, ExtIETH, 0x9d3
	rs := FindRPCs([]Message{call, reply})
	require.Len(t, rs, 2)

	g := Golden{RPC: rs[0], Operation: "write 100 KiB"}
	b, err := g.Format()
	require.NoError(t, err)
	assert.Equal(t, `# NFSv3 WRITE call, xid 0x9053b497, 10.0.0.2 -> 10.0.0.1, 1-packet SEND_ONLY
# operation: write 100 KiB
direction call
send SEND_ONLY
length 164
shape RDMA_MSG reads=1/1 writes=0/0 reply=none
header
9053b497  # rdma_xid
00000001  # rdma_vers
00000080  # rdma_credit (128)
00000000  # rdma_proc: RDMA_MSG
00000001  # Read list: a Read segment follows
00000070  #   position (112)
000009d3  #   handle
00019000  #   length (102400)
9053b497  #   offset (high)
7d93b000  #   offset (low)
00000000  # Read list: end
00000000  # Write list: end
00000000  # Reply chunk: absent
rpc  # 32 of 112 bytes inline
9053b497 00000000 00000002 000186a3
00000003 00000007 00000000 00000000
`, string(b))

	g = Golden{RPC: rs[1], PrefixLen: 6}
	b, err = g.Format()
	require.NoError(t, err)
	assert.Contains(t, string(b), "direction reply\nsend SEND_ONLY_WITH_INVALIDATE invalidate 0x000009d3\nlength 56\n")
	assert.Contains(t, string(b), "rpc  # 6 of 28 bytes inline\n9053b497 0000\n")

	rs[1].Header.XID++ // the words no longer encode the Send's header
	_, err = g.Format()
	assert.Error(t, err)
	_, err = (&Golden{RPC: &RPC{Send: &call, Err: ErrTransportHeader}}).Format()
	assert.Error(t, err)
	_, err = (&Golden{}).Format()
	assert.Error(t, err)
}
