package verbstest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// bindWR is an OpBindWindow of w to n bytes of r at off asking for rkey
// (0: verbs.NextRKey of the window's rkey).
func bindWR(id uint64, w verbs.Window, r verbs.Region, off, n int, access verbs.Access, rkey uint32) verbs.WorkRequest {
	return verbs.WorkRequest{
		ID: id, Op: verbs.OpBindWindow, Window: w, RKey: rkey,
		Bind: verbs.SGE{Region: r, Offset: off, Length: n}, Access: access,
	}
}

// testBindChosenKey: a bind gives the window the rkey WorkRequest.RKey
// asks for (the window's index with a key byte of the requester's
// choosing), which works for the peer while the old one does not; a bind
// asking for the current key byte or for another window's index is
// refused when posted and changes nothing; RKey 0 still gives
// verbs.NextRKey.
func testBindChosenKey(t *testing.T, env Env) {
	var sr verbs.Region
	client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 8192, 1, 64)})
	w, err := server.AllocWindow()
	require.NoError(t, err)
	cur := w.RKey()

	err = server.PostSend([]verbs.WorkRequest{bindWR(1, w, sr, 4096, 4096, rw, cur)})
	require.ErrorIs(t, err, verbs.ErrInvalidRKey, "a bind keeping the current key byte")
	err = server.PostSend([]verbs.WorkRequest{bindWR(1, w, sr, 4096, 4096, rw, verbs.WithKey(cur^1<<8, byte(cur)+1))})
	require.ErrorIs(t, err, verbs.ErrInvalidRKey, "a bind naming another window's index")
	require.Equal(t, cur, w.RKey(), "a refused bind leaves the rkey")

	first := verbs.WithKey(cur, byte(cur)^0x5a)
	require.NoError(t, server.PostSend([]verbs.WorkRequest{bindWR(2, w, sr, 4096, 4096, rw, first)}))
	requireStatus(t, next(t, server), 2, nil)
	require.Equal(t, first, w.RKey(), "the bind gives the chosen rkey")
	win := exposed{w: w, rkey: first, addr: sr.Addr(4096)}
	cr := alloc(t, client, 4096)
	fill(cr.Bytes(), 3)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{writeWR(3, cr, 0, 1000, win, 0)}))
	requireStatus(t, next(t, client), 3, nil)
	require.True(t, bytes.Equal(cr.Bytes()[:1000], sr.Bytes()[4096:4096+1000]), "written through the chosen rkey")

	invalidate(t, server, win)
	auto := rebind(t, server, w, sr, 4096, 4096, rw) // RKey 0: NextRKey
	require.Equal(t, verbs.NextRKey(first), auto.rkey)
	invalidate(t, server, auto)
	second := verbs.WithKey(auto.rkey, byte(auto.rkey)+0x81)
	require.NoError(t, server.PostSend([]verbs.WorkRequest{bindWR(4, w, sr, 4096, 2048, rw, second)}))
	requireStatus(t, next(t, server), 4, nil)
	require.Equal(t, second, w.RKey())
	cur2 := exposed{w: w, rkey: second, addr: sr.Addr(4096)}
	require.NoError(t, client.PostSend([]verbs.WorkRequest{readWR(5, cr, 2048, 1000, cur2, 0)}))
	requireStatus(t, next(t, client), 5, nil)
	require.True(t, bytes.Equal(cr.Bytes()[:1000], cr.Bytes()[2048:2048+1000]), "read through the second chosen rkey")

	require.NoError(t, client.PostSend([]verbs.WorkRequest{writeWR(6, cr, 0, 8, win, 0)}))
	requireStatus(t, next(t, client), 6, verbs.ErrRemoteAccess)
	requireDone(t, client, "client")
	requireDone(t, server, "server")
}

// testWindowAccessRights: a window bound for remote reads only serves
// RDMA Reads and refuses RDMA Writes, and one bound for remote writes
// only the other way round (the region is registered so that both binds
// are allowed). The refused access is a remote access error that takes
// both sides down.
func testWindowAccessRights(t *testing.T, env Env) {
	const size = 4096
	for _, tc := range []struct {
		name    string
		access  verbs.Access
		allowed verbs.Opcode
	}{
		{"ReadOnly", verbs.AccessRemoteRead, verbs.OpRDMARead},
		{"WriteOnly", verbs.AccessRemoteWrite, verbs.OpRDMAWrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sr verbs.Region
			client, server := connect(t, env, nil, &verbs.ConnOptions{Setup: RecvSetup(&sr, 2*size, 1, 64)})
			fill(sr.Bytes()[size:], 7)
			win := expose(t, server, sr, size, size, tc.access)
			cr := alloc(t, client, 2*size)
			fill(cr.Bytes()[:size], 8)
			ok, refused := writeWR(1, cr, 0, size, win, 0), readWR(2, cr, size, size, win, 0)
			if tc.allowed == verbs.OpRDMARead {
				ok, refused = readWR(1, cr, size, size, win, 0), writeWR(2, cr, 0, size, win, 0)
			}
			require.NoError(t, client.PostSend([]verbs.WorkRequest{ok}))
			requireStatus(t, next(t, client), 1, nil)
			if tc.allowed == verbs.OpRDMARead {
				require.True(t, bytes.Equal(sr.Bytes()[size:], cr.Bytes()[size:]), "read through a read-only window")
			} else {
				require.True(t, bytes.Equal(cr.Bytes()[:size], sr.Bytes()[size:]), "written through a write-only window")
			}
			before := bytes.Clone(sr.Bytes()[size:])
			require.NoError(t, client.PostSend([]verbs.WorkRequest{refused}))
			requireStatus(t, next(t, client), 2, verbs.ErrRemoteAccess)
			requireDone(t, client, "client")
			requireDone(t, server, "server")
			require.Equal(t, before, sr.Bytes()[size:], "the refused access changed the window's memory")
		})
	}
}

// testMemoryMeter: a provider that implements verbs.MemoryMeter counts the
// bytes of the regions allocated through it until they are closed, one by
// one or with their connection.
func testMemoryMeter(t *testing.T, env Env) {
	m, ok := env.Client.(verbs.MemoryMeter)
	if !ok {
		t.Skipf("provider %s does not implement verbs.MemoryMeter", env.Client.Name())
	}
	base := m.RegisteredBytes()
	client, server := connect(t, env, nil, nil)
	require.Equal(t, base, m.RegisteredBytes(), "connecting registers nothing")
	r1 := alloc(t, client, 10000)
	require.Equal(t, base+10000, m.RegisteredBytes())
	r2 := alloc(t, client, 5000)
	require.Equal(t, base+15000, m.RegisteredBytes())
	require.NoError(t, r1.Close())
	require.Equal(t, base+5000, m.RegisteredBytes())
	require.NoError(t, r1.Close(), "closing a closed region")
	require.Equal(t, base+5000, m.RegisteredBytes())
	expose(t, client, r2, 0, 4096, rw)
	require.Error(t, r2.Close(), "closing a region with a bound window")
	require.Equal(t, base+5000, m.RegisteredBytes(), "a failed Close keeps the region")
	alloc(t, client, 1)
	require.Equal(t, base+5001, m.RegisteredBytes())
	require.NoError(t, client.Close())
	require.Equal(t, base, m.RegisteredBytes(), "closing the connection frees its regions")

	if sm, ok := env.Server.(verbs.MemoryMeter); ok {
		sbase := sm.RegisteredBytes()
		alloc(t, server, 3000)
		require.Equal(t, sbase+3000, sm.RegisteredBytes())
		require.NoError(t, server.Close())
		require.Equal(t, sbase, sm.RegisteredBytes())
	}
}
