package verbstest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// rdmaSizes are the transfer sizes of testRDMAWriteRead: the edges of
// bytes, words, pages, the soft provider's 64 KiB buffers and 1 MiB.
var rdmaSizes = []int{1, 2, 3, 4, 7, 64, 1000, 4095, 4096, 4097, 65535, 65536, 65537, 1<<20 - 1, 1 << 20}

// testRDMAWriteRead writes into a window at an odd offset, checks the
// bytes and the guard bytes around it at the target, then reads the
// window back after the target changed it.
func testRDMAWriteRead(t *testing.T, env Env) {
	for _, size := range rdmaSizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) { testWriteRead(t, env, size) })
	}
}

func testWriteRead(t *testing.T, env Env, size int) {
	const guard, off = 64, 64 + 3
	var cr, sr verbs.Region
	client, server := connect(t, env,
		&verbs.ConnOptions{Setup: RecvSetup(&cr, 2*size+64, 1, 64)},
		&verbs.ConnOptions{Setup: RecvSetup(&sr, 64+off+size+guard, 1, 64)})
	sb := sr.Bytes()
	for i := 64; i < len(sb); i++ {
		sb[i] = 0xee
	}
	win := expose(t, server, sr, off, size, verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	require.Equal(t, sr.Addr(off), win.addr)

	cb := cr.Bytes()
	src, dst := cb[64:64+size], cb[64+size:64+2*size]
	fill(src, byte(size))
	require.NoError(t, client.PostSend([]verbs.WorkRequest{
		writeWR(1, cr, 64, size, win, 0),
		sendWR(2, cr, 0, 8),
	}))
	requireStatus(t, next(t, server), 1, nil)
	require.True(t, bytes.Equal(src, sb[off:off+size]), "written bytes")
	for i := 64; i < off; i++ {
		require.Equal(t, byte(0xee), sb[i], "guard byte before the window at %d", i)
	}
	for i := off + size; i < len(sb); i++ {
		require.Equal(t, byte(0xee), sb[i], "guard byte after the window at %d", i)
	}
	cs := collect(t, client, 2)
	requireStatus(t, cs[0], 1, nil)
	requireStatus(t, cs[1], 2, nil)
	require.Equal(t, verbs.OpRDMAWrite, cs[0].Op)

	for i := off; i < off+size; i++ {
		sb[i] = ^sb[i]
	}
	require.NoError(t, server.PostSend([]verbs.WorkRequest{sendWR(3, sr, 0, 8)}))
	requireStatus(t, next(t, server), 3, nil)
	requireStatus(t, next(t, client), 1, nil)

	require.NoError(t, client.PostSend([]verbs.WorkRequest{readWR(4, cr, 64+size, size, win, 0)}))
	got := next(t, client)
	requireStatus(t, got, 4, nil)
	require.Equal(t, verbs.OpRDMARead, got.Op)
	require.Equal(t, size, got.ByteLen)
	require.True(t, bytes.Equal(sb[off:off+size], dst), "read bytes")
}

// testWriteThenSendOrdering checks, many times over, that a Send posted
// after an RDMA Write is delivered only once the Write's data is placed:
// the RPC-over-RDMA reply depends on it.
func testWriteThenSendOrdering(t *testing.T, env Env) {
	const rounds, size = 200, 32 << 10
	var sr verbs.Region
	client, server := connect(t, env, nil,
		&verbs.ConnOptions{Setup: RecvSetup(&sr, size+64*64, 64, 64)})
	// Receives are at [0, 4096); the window follows.
	win := expose(t, server, sr, 64*64, size, verbs.AccessRemoteWrite)
	cr := alloc(t, client, 64*size)
	for i := range 64 {
		fill(cr.Bytes()[i*size:(i+1)*size], byte(i))
	}
	sb := sr.Bytes()[64*64:]
	for i := range rounds {
		k := i % 64
		require.NoError(t, client.PostSend([]verbs.WorkRequest{
			writeWR(uint64(2*i), cr, k*size, size, win, 0),
			sendWR(uint64(2*i+1), cr, k*size, 1),
		}))
		got := next(t, server)
		require.NoError(t, got.Err())
		require.True(t, bytes.Equal(cr.Bytes()[k*size:(k+1)*size], sb), "round %d: the Send overtook the Write", i)
		postRecv(t, server, got.ID, sr, int(got.ID-1)*64, 64)
		collect(t, client, 2)
	}
}
