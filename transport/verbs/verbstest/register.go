package verbstest

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// testRegisterRegion: a connection that implements verbs.Registrar
// registers memory the caller owns; the peer's RDMA Writes through a window
// bound to it land in the caller's own slice (direct data placement, no
// bounce buffer), only in the bound range; the region cannot be closed while
// the window is bound; once the window is invalidated and the region closed,
// the slice is still the caller's (not unmapped, not changed) and the old
// rkey no longer reaches it. An empty slice is refused.
func testRegisterRegion(t *testing.T, env Env) {
	client, server := connect(t, env, nil, nil)
	reg, ok := server.(verbs.Registrar)
	if !ok {
		t.Skipf("provider %s does not implement verbs.Registrar", env.Server.Name())
	}
	_, err := reg.RegisterRegion(nil)
	require.Error(t, err, "registering no memory")

	const size = 3*4096 + 13 // not page-sized, not 4-aligned
	p := make([]byte, size)
	fill(p, 9)
	orig := bytes.Clone(p)
	r, err := reg.RegisterRegion(p)
	require.NoError(t, err)
	require.Equal(t, size, len(r.Bytes()))
	require.Same(t, &p[0], &r.Bytes()[0], "the region is the caller's memory")
	runtime.GC() // the pinned slice stays where it is

	win := expose(t, server, r, 4096, 8192, verbs.AccessRemoteWrite)
	cr := alloc(t, client, 8192)
	fill(cr.Bytes(), 21)
	require.NoError(t, client.PostSend([]verbs.WorkRequest{writeWR(1, cr, 0, 8192, win, 0)}))
	requireStatus(t, next(t, client), 1, nil)
	require.Equal(t, cr.Bytes(), p[4096:4096+8192], "the peer's RDMA Write placed the data in the caller's slice")
	require.Equal(t, orig[:4096], p[:4096], "bytes before the window changed")
	require.Equal(t, orig[4096+8192:], p[4096+8192:], "bytes after the window changed")

	require.Error(t, r.Close(), "closing a region with a bound window")
	invalidate(t, server, win)
	require.NoError(t, r.Close())
	got := bytes.Clone(p)
	p[0] ^= 0xff // still ours to write
	p[0] ^= 0xff

	require.NoError(t, client.PostSend([]verbs.WorkRequest{writeWR(2, cr, 0, 16, win, 0)}))
	requireStatus(t, next(t, client), 2, verbs.ErrRemoteAccess)
	requireDone(t, client, "client")
	requireDone(t, server, "server")
	require.Equal(t, got, p, "a write through the invalidated rkey changed the caller's memory")
}
