package verbstest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// testPingPong bounces messages of varying length: each side's Receive
// gets exactly the bytes and length sent.
func testPingPong(t *testing.T, env Env) {
	const rounds, size = 100, 4096
	var cr, sr verbs.Region
	client, server := connect(t, env,
		&verbs.ConnOptions{Setup: RecvSetup(&cr, 2*size, 1, size)},
		&verbs.ConnOptions{Setup: RecvSetup(&sr, 2*size, 1, size)})
	for i := range rounds {
		n := 1 + i*397%size
		fill(cr.Bytes()[size:size+n], byte(i))
		require.NoError(t, client.PostSend([]verbs.WorkRequest{sendWR(uint64(100+i), cr, size, n)}))

		got := next(t, server)
		requireStatus(t, got, 1, nil)
		require.Equal(t, verbs.OpRecv, got.Op)
		require.Equal(t, n, got.ByteLen)
		require.False(t, got.Invalidated)
		require.Equal(t, cr.Bytes()[size:size+n], sr.Bytes()[:n], "round %d", i)
		copy(sr.Bytes()[size:], sr.Bytes()[:n])
		postRecv(t, server, 1, sr, 0, size)
		require.NoError(t, server.PostSend([]verbs.WorkRequest{sendWR(uint64(200+i), sr, size, n)}))

		cs := byID(t, collect(t, client, 2))
		requireStatus(t, cs[uint64(100+i)], uint64(100+i), nil)
		require.Equal(t, verbs.OpSend, cs[uint64(100+i)].Op)
		requireStatus(t, cs[1], 1, nil)
		require.Equal(t, n, cs[1].ByteLen)
		require.Equal(t, cr.Bytes()[size:size+n], cr.Bytes()[:n], "echo of round %d", i)
		postRecv(t, client, 1, cr, 0, size)
		requireStatus(t, next(t, server), uint64(200+i), nil)
	}
}

// testSendGatherScatter sends a three-element gather list into a
// two-element scatter list.
func testSendGatherScatter(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: func(c verbs.Conn) error {
		var err error
		if sr, err = c.AllocRegion(8192); err != nil {
			return err
		}
		return c.PostRecv([]verbs.RecvRequest{{ID: 7, SGL: []verbs.SGE{
			{Region: sr, Offset: 100, Length: 1000},
			{Region: sr, Offset: 5000, Length: 3000},
		}}})
	}})
	cr := alloc(t, client, 8192)
	fill(cr.Bytes(), 0x5c)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{
		{Region: cr, Offset: 10, Length: 700},
		{Region: cr, Offset: 4000, Length: 0},
		{Region: cr, Offset: 2000, Length: 1500},
	}}}))
	requireStatus(t, next(t, client), 1, nil)
	got := next(t, server)
	requireStatus(t, got, 7, nil)
	require.Equal(t, 2200, got.ByteLen)
	want := append(append([]byte{}, cr.Bytes()[10:710]...), cr.Bytes()[2000:3500]...)
	have := append(append([]byte{}, sr.Bytes()[100:1100]...), sr.Bytes()[5000:6200]...)
	require.Equal(t, want, have)
}

// testZeroLengthSend: an empty Send consumes a Receive.
func testZeroLengthSend(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 4096, 1, 64)})
	cr := alloc(t, client, 64)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{sendWR(1, cr, 0, 0)}))
	requireStatus(t, next(t, client), 1, nil)
	got := next(t, server)
	requireStatus(t, got, 1, nil)
	require.Equal(t, 0, got.ByteLen)
}

// testInOrderCompletions posts a mixed batch and expects completions in
// posting order (RC: a send queue completes in order).
func testInOrderCompletions(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 1<<20, 4, 4096)})
	win := expose(t, server, sr, 65536, 65536, verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	cr := alloc(t, client, 1<<20)
	fill(cr.Bytes(), 3)
	wrs := []verbs.WorkRequest{
		writeWR(1, cr, 0, 65536, win, 0),
		readWR(2, cr, 65536, 4096, win, 100),
		sendWR(3, cr, 0, 100),
		writeWR(4, cr, 1000, 10, win, 5),
		readWR(5, cr, 200000, 65536, win, 0),
		sendWR(6, cr, 0, 4096),
		readWR(7, cr, 300000, 1, win, 65535),
	}
	require.NoError(t, client.PostSend(wrs))
	cs := collect(t, client, len(wrs))
	for i, c := range cs {
		requireStatus(t, c, wrs[i].ID, nil)
		require.Equal(t, wrs[i].Op, c.Op)
	}
	require.Equal(t, 4096, cs[1].ByteLen)
	require.Equal(t, 65536, cs[4].ByteLen)
	require.Equal(t, 1, cs[6].ByteLen)
	// Each Read saw the Writes posted before it, and nothing after.
	require.Equal(t, cr.Bytes()[100:4196], cr.Bytes()[65536:65536+4096])
	w := append([]byte{}, cr.Bytes()[:65536]...)
	copy(w[5:], cr.Bytes()[1000:1010])
	require.Equal(t, w, cr.Bytes()[200000:200000+65536])
	require.Equal(t, w[65535], cr.Bytes()[300000])
	rs := collect(t, server, 2)
	requireStatus(t, rs[0], 1, nil)
	requireStatus(t, rs[1], 2, nil)
	require.Equal(t, 100, rs[0].ByteLen)
	require.Equal(t, 4096, rs[1].ByteLen)
}

// testReadDepth posts many more RDMA Reads than the read depth at once:
// the provider must pace them, not fail.
func testReadDepth(t *testing.T, env Env) {
	const reads, size = 64, 4096
	caps := verbs.QueueCaps{SendQueue: 128, RecvQueue: 8, MaxSGE: 1, ReadDepth: 4}
	var sr verbs.Region
	client, server := connect(t, env, &verbs.ConnOptions{Caps: caps},
		&verbs.ConnOptions{Caps: caps, Setup: func(c verbs.Conn) error {
			var err error
			sr, err = c.AllocRegion(reads * size)
			return err
		}})
	fill(sr.Bytes(), 0x77)
	win := expose(t, server, sr, 0, reads*size, verbs.AccessRemoteRead)
	cr := alloc(t, client, reads*size)
	wrs := make([]verbs.WorkRequest, reads)
	for i := range wrs {
		// Read the slots in reverse order.
		wrs[i] = readWR(uint64(i), cr, i*size, size, win, uint64((reads-1-i)*size))
	}
	require.NoError(t, client.PostSend(wrs))
	for i, c := range collect(t, client, reads) {
		requireStatus(t, c, uint64(i), nil)
		require.Equal(t, size, c.ByteLen)
		require.True(t, bytes.Equal(sr.Bytes()[(reads-1-i)*size:(reads-i)*size], cr.Bytes()[i*size:(i+1)*size]), "read %d", i)
	}
}

// testWaitContext: Wait returns the context's error when nothing comes.
func testWaitContext(t *testing.T, env Env) {
	client, _ := connect(t, env, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, client.Wait(ctx), context.Canceled)
	var cs [4]verbs.Completion
	n, err := client.Poll(cs[:])
	require.NoError(t, err)
	require.Zero(t, n)
}

// testQueueFull: the queues hold exactly what QueueCaps says; a batch that
// does not fit is posted up to the first request that does not.
func testQueueFull(t *testing.T, env Env) {
	caps := verbs.QueueCaps{SendQueue: 4, RecvQueue: 2, MaxSGE: 1, ReadDepth: 1}
	var sr verbs.Region
	client, server := connect(t, env, &verbs.ConnOptions{Caps: caps},
		&verbs.ConnOptions{Caps: caps, Setup: RecvSetup(&sr, 4096, 2, 64)})
	err := server.PostRecv([]verbs.RecvRequest{{ID: 3, SGL: []verbs.SGE{{Region: sr, Offset: 200, Length: 64}}}})
	require.ErrorIs(t, err, verbs.ErrQueueFull, "third Receive with RecvQueue 2")

	cr := alloc(t, client, 4096)
	wrs := make([]verbs.WorkRequest, 5)
	for i := range wrs {
		wrs[i] = sendWR(uint64(i+1), cr, 0, 8)
	}
	// Two Sends, then two empty RDMA Writes (no Receive needed), then one
	// that does not fit.
	wrs[2] = verbs.WorkRequest{ID: 3, Op: verbs.OpRDMAWrite}
	wrs[3] = verbs.WorkRequest{ID: 4, Op: verbs.OpRDMAWrite}
	require.ErrorIs(t, client.PostSend(wrs), verbs.ErrQueueFull)
	cs := collect(t, client, 4)
	for i, c := range cs {
		requireStatus(t, c, uint64(i+1), nil)
	}
	// Polled completions free their slots.
	require.NoError(t, client.PostSend(wrs[2:4]))
	collect(t, client, 2)
	requireStatus(t, next(t, server), 1, nil)
	requireStatus(t, next(t, server), 2, nil)
}

// testLocalProtection: a gather list outside its region fails, at post
// time or (as on hardware, IBV_WC_LOC_PROT_ERR) in the completion, and
// then the connection is down.
func testLocalProtection(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 4096, 1, 4096)})
	cr := alloc(t, client, 4096)
	err := client.PostSend([]verbs.WorkRequest{sendWR(1, cr, 4000, 200)})
	if err != nil {
		return // refused at post time: nothing was sent
	}
	requireStatus(t, next(t, client), 1, verbs.ErrLocalProtection)
	requireDone(t, client, "client")
	requireDone(t, server, "server")
}

// errSetup is the error of a failing Setup.
var errSetup = errors.New("verbstest: setup refuses")
