package capture

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The captures under testdata/ were taken in the VM of e2e by
// TestKernelCapture: the Linux 6.1 NFS client (10.0.0.2) and knfsd
// (10.0.0.1) over Soft-RoCE, path MTU 1024.

// analyzeKernel analyzes a committed capture and checks what holds for all
// of them: every frame decodes with a good ICRC, every message completes,
// every Send is RPC-over-RDMA and every call has its reply.
func analyzeKernel(t *testing.T, name string) (*Capture, []*RPC) {
	t.Helper()
	frames := loadPCAP(t, name)
	c := Analyze(frames)
	require.NoError(t, c.Err)
	require.Len(t, c.Packets, len(frames))
	for i, p := range c.Packets {
		require.True(t, p.ICRCValid, "packet %d (%v): ICRC %08x", i, p.Opcode, p.ICRC)
	}
	require.Zero(t, c.Incomplete)
	st := c.Stats
	require.Zero(t, st.BadICRC+st.Duplicates+st.OutOfSequence+st.Orphans+st.Abandoned+st.Oversize+st.Other, "%+v", st)
	rpcs := FindRPCs(c.Messages)
	require.NotEmpty(t, rpcs)
	for _, r := range rpcs {
		require.NoError(t, r.Err)
		require.Equal(t, r.IsCall, r.Send.Src == client, r.Name())
		if r.IsCall {
			require.NotNil(t, r.Reply, "%s xid %#08x has no reply", r.Name(), r.Header.XID)
		}
		require.Equal(t, uint32(1), r.Header.Vers)
	}
	return c, rpcs
}

func names(rpcs []*RPC) []string {
	var out []string
	for _, r := range rpcs {
		out = append(out, r.Name())
	}
	return out
}

func TestKernelMount(t *testing.T) {
	c, rpcs := analyzeKernel(t, "kernel-mount.pcap")
	assert.Equal(t, []string{
		"NFSv3 NULL call", "NFSv3 NULL reply", "NFSv3 FSINFO call", "NFSv3 FSINFO reply",
		"NFSv3 PATHCONF call", "NFSv3 PATHCONF reply", "NFSv3 GETATTR call", "NFSv3 GETATTR reply",
		"NFSACLv3 NULL call", "NFSACLv3 NULL reply", "NFSv3 FSINFO call", "NFSv3 FSINFO reply",
		"NFSv3 GETATTR call", "NFSv3 GETATTR reply",
	}, names(rpcs))
	for _, r := range rpcs {
		assert.Equal(t, "RDMA_MSG reads=0/0 writes=0/0 reply=none", r.Header.Shape(), r.Name())
		want := uint32(64) // knfsd grants a constant 64
		if r.IsCall {
			want = 128 // xprtrdma asks for 128
		}
		assert.Equal(t, want, r.Header.Credits, r.Name())
	}

	// The connection set-up: REQ, REP, RTU on QP1, with the RFC 8797
	// private data of the client (R=1, 4 KiB both ways) and of knfsd (R=0).
	var cms []string
	pds := map[CMAttr][]byte{}
	for _, m := range c.Messages {
		if m.DestQP != 1 {
			continue
		}
		cm, ok := ParseCM(m.Payload)
		require.True(t, ok)
		cms = append(cms, cm.Attr.String())
		pds[cm.Attr], _ = RPCRDMAPrivateData(cm.PrivateData)
	}
	assert.Equal(t, []string{"REQ", "REP", "RTU"}, cms)
	assert.Equal(t, []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}, pds[CMREQ])
	assert.Equal(t, []byte{0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3}, pds[CMREP])
}

// TestKernelReplyChunk: READDIRPLUS offers a Reply chunk of three segments
// (head, pages, tail); knfsd answers RDMA_NOMSG and RDMA Writes the reply
// into it.
func TestKernelReplyChunk(t *testing.T) {
	c, rpcs := analyzeKernel(t, "kernel-ls.pcap")
	var r *RPC
	for _, x := range rpcs {
		if x.Name() == "NFSv3 READDIRPLUS reply" {
			r = x
		}
	}
	require.NotNil(t, r)
	assert.Equal(t, "RDMA_MSG reads=0/0 writes=0/0 reply=3", r.Call.Header.Shape())
	assert.Equal(t, "RDMA_NOMSG reads=0/0 writes=0/0 reply=3", r.Header.Shape())
	assert.Equal(t, r.Header.Len, len(r.Send.Payload), "nothing inline")
	msg, err := ChunkData(Transfers(c.Messages), KindWrite, server, client, r.Header.ReplyChunk)
	require.NoError(t, err)
	assert.Equal(t, int(Length(r.Header.ReplyChunk)), len(msg))
	var rh xdr.ReplyHeader
	_, err = rh.Unmarshal(msg)
	require.NoError(t, err)
	assert.Equal(t, r.Header.XID, rh.XID)
	assert.Contains(t, string(msg), "hello.txt")
	assert.Contains(t, string(msg), "subdir")
	assert.Zero(t, r.Send.Ext&ExtIETH, "three handles: no remote invalidation")
}

// TestKernelMultiPacketSend: a 3000-byte WRITE fits the 4 KiB inline
// threshold, so it goes inline in a Send of four packets.
func TestKernelMultiPacketSend(t *testing.T) {
	c, rpcs := analyzeKernel(t, "kernel-write-3000B.pcap")
	var ops []Opcode
	for _, p := range c.Packets {
		if p.Src.Addr() == client && p.Opcode <= OpSendOnly {
			ops = append(ops, p.Opcode)
		}
	}
	assert.Contains(t, ops, OpSendFirst)
	assert.Contains(t, ops, OpSendMiddle)
	assert.Contains(t, ops, OpSendLast)
	var w *RPC
	for _, r := range rpcs {
		if r.Name() == "NFSv3 WRITE call" {
			w = r
		}
	}
	require.NotNil(t, w)
	assert.Equal(t, 4, w.Send.Packets)
	assert.Equal(t, OpSendLast, w.Send.Opcode)
	assert.Equal(t, "RDMA_MSG reads=0/0 writes=0/0 reply=none", w.Header.Shape())
	assert.True(t, bytes.Contains(w.Inline, seqPattern(3000)))
}

// TestKernelReadChunk: an 8 KiB WRITE puts its data in a Read chunk after
// the inline arguments; knfsd pulls it with an RDMA Read whose response
// spans eight packets, and answers with a Send With Invalidate of the
// chunk's handle.
func TestKernelReadChunk(t *testing.T) {
	c, rpcs := analyzeKernel(t, "kernel-write-8KiB.pcap")
	var w *RPC
	for _, r := range rpcs {
		if r.Name() == "NFSv3 WRITE call" {
			w = r
		}
	}
	require.NotNil(t, w)
	require.Len(t, w.Header.ReadList, 1)
	rs := w.Header.ReadList[0]
	assert.Equal(t, uint32(len(w.Inline)), rs.Position, "the data follows the inline arguments")
	assert.Equal(t, uint32(8192), rs.Length)
	data, err := ChunkData(Transfers(c.Messages), KindReadRequest, server, client, []Segment{rs.Segment})
	require.NoError(t, err)
	assert.Equal(t, seqPattern(8192), data)
	assert.Equal(t, OpSendOnlyInvalidate, w.Reply.Send.Opcode)
	assert.Equal(t, rs.Handle, w.Reply.Send.InvalidateRKey)
	n := 0
	for _, m := range c.Messages {
		if m.Kind == KindReadResponse {
			n += m.Packets
		}
	}
	assert.Equal(t, 8, n, "read response packets")
}

// TestKernelWriteChunk: an 8 KiB READ offers a Write chunk; knfsd RDMA
// Writes the data in eight packets and reports the length in its reply.
func TestKernelWriteChunk(t *testing.T) {
	c, rpcs := analyzeKernel(t, "kernel-read-8KiB.pcap")
	var r *RPC
	for _, x := range rpcs {
		if x.Name() == "NFSv3 READ reply" {
			r = x
		}
	}
	require.NotNil(t, r)
	require.Len(t, r.Header.WriteList, 1)
	data, err := ChunkData(Transfers(c.Messages), KindWrite, server, client, r.Header.WriteList[0])
	require.NoError(t, err)
	assert.Equal(t, seqPattern(8192), data)
	assert.Equal(t, OpSendOnlyInvalidate, r.Send.Opcode)
	assert.Equal(t, []uint32{r.Send.InvalidateRKey}, r.Call.Header.Handles())
	var writes []Opcode
	for _, p := range c.Packets {
		if p.Src.Addr() == server && p.Opcode >= OpWriteFirst && p.Opcode <= OpWriteOnlyImm {
			writes = append(writes, p.Opcode)
		}
	}
	assert.Equal(t, []Opcode{OpWriteFirst, OpWriteMiddle, OpWriteMiddle, OpWriteMiddle,
		OpWriteMiddle, OpWriteMiddle, OpWriteMiddle, OpWriteLast}, writes)
}
