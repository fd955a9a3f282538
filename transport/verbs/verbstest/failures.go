package verbstest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

const rw = verbs.AccessRemoteRead | verbs.AccessRemoteWrite

// testSendWithInvalidate: the receiver's window is invalidated by the
// Send, the Receive completion names it, and using it afterwards is a
// remote access error that kills the connection on both sides.
func testSendWithInvalidate(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 8192, 2, 64)})
	win := expose(t, server, sr, 4096, 4096, rw)
	cr := alloc(t, client, 4096)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{
		writeWR(1, cr, 0, 100, win, 0), // the window works before
		{ID: 2, Op: verbs.OpSendWithInvalidate, SGL: []verbs.SGE{{Region: cr, Length: 16}}, InvalidateRKey: win.rkey},
	}))
	cs := collect(t, client, 2)
	requireStatus(t, cs[0], 1, nil)
	requireStatus(t, cs[1], 2, nil)
	require.Equal(t, verbs.OpSendWithInvalidate, cs[1].Op)
	got := next(t, server)
	requireStatus(t, got, 1, nil)
	require.Equal(t, 16, got.ByteLen)
	require.True(t, got.Invalidated, "Receive completion of a Send With Invalidate")
	require.Equal(t, win.rkey, got.InvalidatedRKey)
	require.Equal(t, win.rkey, win.w.RKey(), "the window keeps its rkey until rebound")

	require.NoError(t, client.PostSend([]verbs.WorkRequest{writeWR(3, cr, 0, 8, win, 0)}))
	requireStatus(t, next(t, client), 3, verbs.ErrRemoteAccess)
	requireDone(t, client, "client")
	requireDone(t, server, "server")
	require.Equal(t, 1, drainFlushed(t, server), "the server's other Receive")
}

// testAccessAfterLocalInvalidate: the owner's Local Invalidate revokes
// the window.
func testAccessAfterLocalInvalidate(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 8192, 1, 64)})
	win := expose(t, server, sr, 4096, 4096, rw)
	cr := alloc(t, client, 4096)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{readWR(1, cr, 0, 4096, win, 0)}))
	requireStatus(t, next(t, client), 1, nil)
	invalidate(t, server, win)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{readWR(2, cr, 0, 1, win, 0)}))
	requireStatus(t, next(t, client), 2, verbs.ErrRemoteAccess)
	requireDone(t, client, "client")
	requireDone(t, server, "server")
	require.Equal(t, 1, drainFlushed(t, server), "the server's Receive")
}

// testRebindGivesNewRKey: rebinding an invalidated window gives a new
// rkey that works; the old one does not.
func testRebindGivesNewRKey(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 8192, 1, 64)})
	old := expose(t, server, sr, 4096, 4096, rw)
	invalidate(t, server, old)
	cur := rebind(t, server, old.w, sr, 4096, 2048, rw)
	require.NotEqual(t, old.rkey, cur.rkey)
	require.Equal(t, verbs.NextRKey(old.rkey), cur.rkey, "the key byte increments (ibv_inc_rkey)")
	cr := alloc(t, client, 4096)
	fill(cr.Bytes(), 9)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{writeWR(1, cr, 0, 2048, cur, 0)}))
	requireStatus(t, next(t, client), 1, nil)
	require.Equal(t, cr.Bytes()[:2048], sr.Bytes()[4096:4096+2048])
	require.NoError(t, client.PostSend([]verbs.WorkRequest{writeWR(2, cr, 0, 1, old, 0)}))
	requireStatus(t, next(t, client), 2, verbs.ErrRemoteAccess)
	requireDone(t, client, "client")
	requireDone(t, server, "server")
}

// testRemoteAccessErrors: every way an RDMA access can fall outside what
// the target exposed is a remote access error that kills the connection.
// (With Quirks.WindowBoundsUnchecked, an access outside the window but
// inside its region succeeds and the connection stays up.)
func testRemoteAccessErrors(t *testing.T, env Env) {
	const size = 4096
	for _, tc := range []struct {
		name   string
		access verbs.Access
		wr     func(cr verbs.Region, w exposed) verbs.WorkRequest
		// inRegion: the access leaves the window [size, 2*size) but
		// stays inside the region [0, 3*size).
		inRegion bool
	}{
		{"WriteOneBytePastEnd", rw, func(cr verbs.Region, w exposed) verbs.WorkRequest { return writeWR(1, cr, 0, 8, w, size-7) }, true},
		{"WriteAtEnd", rw, func(cr verbs.Region, w exposed) verbs.WorkRequest { return writeWR(1, cr, 0, 1, w, size) }, true},
		{"ReadPastEnd", rw, func(cr verbs.Region, w exposed) verbs.WorkRequest { return readWR(1, cr, 0, size+1, w, 0) }, true},
		{"ReadBeforeStart", rw, func(cr verbs.Region, w exposed) verbs.WorkRequest {
			wr := readWR(1, cr, 0, 4, w, 0)
			wr.RemoteAddr--
			return wr
		}, true},
		{"WrongKeyByte", rw, func(cr verbs.Region, w exposed) verbs.WorkRequest {
			w.rkey ^= 0x01
			return writeWR(1, cr, 0, 8, w, 0)
		}, false},
		{"UnknownRKey", rw, func(cr verbs.Region, w exposed) verbs.WorkRequest {
			w.rkey ^= 0x00800000
			return writeWR(1, cr, 0, 8, w, 0)
		}, false},
		{"WriteToReadOnly", verbs.AccessRemoteRead, func(cr verbs.Region, w exposed) verbs.WorkRequest { return writeWR(1, cr, 0, 8, w, 0) }, false},
		{"ReadFromWriteOnly", verbs.AccessRemoteWrite, func(cr verbs.Region, w exposed) verbs.WorkRequest { return readWR(1, cr, 0, 8, w, 0) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sr verbs.Region
			client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 3*size, 1, 64)})
			win := expose(t, server, sr, size, size, tc.access)
			cr := alloc(t, client, 2*size)
			require.NoError(t, client.PostSend([]verbs.WorkRequest{tc.wr(cr, win)}))
			if tc.inRegion && env.Quirks.WindowBoundsUnchecked {
				requireStatus(t, next(t, client), 1, nil)
				require.NoError(t, client.Err(), "client")
				require.NoError(t, server.Err(), "server")
				return
			}
			requireStatus(t, next(t, client), 1, verbs.ErrRemoteAccess)
			requireDone(t, client, "client")
			requireDone(t, server, "server")
			require.Equal(t, 1, drainFlushed(t, server), "the server's Receive")
		})
	}
}

// testSendWithInvalidateForeignRKey: a Send With Invalidate naming an rkey
// the receiver cannot invalidate. rxe (and the soft provider) acknowledge
// the Send, so the sender sees success, while the receiver's Receive fails
// with a remote invalid request and its queue pair enters the error state;
// the disconnect that follows takes the sender down too.
func testSendWithInvalidateForeignRKey(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 8192, 2, 64)})
	win := expose(t, server, sr, 4096, 4096, rw)
	cr := alloc(t, client, 64)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{
		{ID: 1, Op: verbs.OpSendWithInvalidate, SGL: []verbs.SGE{{Region: cr, Length: 16}}, InvalidateRKey: win.rkey ^ 0x01},
	}))
	requireStatus(t, next(t, client), 1, nil)
	got := next(t, server)
	requireStatus(t, got, 1, verbs.ErrRemoteInvalidRequest)
	requireDone(t, server, "server")
	requireDone(t, client, "client")
}

// testBindBoundWindowFails: a type 2 window must be invalidated before it
// is bound again (o10-37.2.30); the failed bind kills the connection.
func testBindBoundWindowFails(t *testing.T, env Env) {
	var sr verbs.Region
	_, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 8192, 1, 64)})
	win := expose(t, server, sr, 4096, 4096, rw)
	require.NoError(t, server.PostSend([]verbs.WorkRequest{{
		ID: 2, Op: verbs.OpBindWindow, Window: win.w,
		Bind: verbs.SGE{Region: sr, Offset: 4096, Length: 100}, Access: rw,
	}}))
	got := next(t, server)
	require.Equal(t, uint64(2), got.ID)
	require.Error(t, got.Err(), "binding a bound type 2 window")
	requireDone(t, server, "server")
}

// testRegionCloseWithBoundWindow: a region cannot be deregistered while a
// window is bound to it (IBA 10.6.7.2.6), and can once it is invalidated.
func testRegionCloseWithBoundWindow(t *testing.T, env Env) {
	_, server := connect(t, env, nil, nil)
	sr := alloc(t, server, 8192)
	win := expose(t, server, sr, 0, 4096, rw)
	require.Error(t, sr.Close(), "closing a region with a bound window")
	invalidate(t, server, win)
	require.NoError(t, sr.Close())
	require.NoError(t, win.w.Close())
}

// testRNR: a Send that finds no Receive fails at once with RNR (retry
// count 0) and both sides go down.
func testRNR(t *testing.T, env Env) {
	client, server := connect(t, env, nil, nil)
	cr := alloc(t, client, 64)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{sendWR(1, cr, 0, 8)}))
	requireStatus(t, next(t, client), 1, verbs.ErrRNR)
	requireDone(t, client, "client")
	requireDone(t, server, "server")
	require.ErrorIs(t, client.Err(), verbs.ErrDisconnected)
	require.ErrorIs(t, server.Err(), verbs.ErrDisconnected)
}

// testRNRFlushesLaterRequests: in a batch of Sends, the first one that
// finds no Receive fails with RNR and those after it are flushed, in
// order.
func testRNRFlushesLaterRequests(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 4096, 1, 64)})
	cr := alloc(t, client, 64)
	wrs := []verbs.WorkRequest{sendWR(1, cr, 0, 8), sendWR(2, cr, 0, 8), sendWR(3, cr, 0, 8), sendWR(4, cr, 0, 8)}
	require.NoError(t, client.PostSend(wrs))
	cs := collect(t, client, 4)
	requireStatus(t, cs[0], 1, nil)
	requireStatus(t, cs[1], 2, verbs.ErrRNR)
	requireStatus(t, cs[2], 3, verbs.ErrFlushed)
	requireStatus(t, cs[3], 4, verbs.ErrFlushed)
	requireStatus(t, next(t, server), 1, nil)
	requireDone(t, client, "client")
	requireDone(t, server, "server")
}

// testLengthError: a Send longer than the Receive. The sender's status is
// a remote invalid request (NAK); the receiver's is a length error
// (IBV_WC_LOC_LEN_ERR) or a remote invalid request. With
// Quirks.OverlongSendRemoteOpError both are StatusOther (rxe:
// IBV_WC_REM_OP_ERR and IBV_WC_LOC_QP_OP_ERR).
func testLengthError(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 4096, 2, 16)})
	cr := alloc(t, client, 64)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{sendWR(1, cr, 0, 17)}))
	sent := next(t, client)
	got := next(t, server)
	require.Equal(t, uint64(1), got.ID)
	if env.Quirks.OverlongSendRemoteOpError {
		require.Equal(t, uint64(1), sent.ID)
		require.Equal(t, verbs.StatusOther, sent.Status, "sender's status")
		require.Equal(t, verbs.StatusOther, got.Status, "receiver's status")
	} else {
		requireStatus(t, sent, 1, verbs.ErrRemoteInvalidRequest)
		require.True(t, errors.Is(got.Err(), verbs.ErrLength) || errors.Is(got.Err(), verbs.ErrRemoteInvalidRequest),
			"receiver's status %v", got.Status)
	}
	requireDone(t, client, "client")
	requireDone(t, server, "server")
	require.Equal(t, 1, drainFlushed(t, server), "the server's other Receive")
}
