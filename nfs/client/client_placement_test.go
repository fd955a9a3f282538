package client_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
)

// TestClientReadPlacement: Client.Read over the transport places a READ's
// data straight into the caller's buffer from DirectPlacementMin (32 KiB)
// on — the server's RDMA Write lands in p (transport.Stats.DirectPlacements)
// — and copies a smaller one once (PlacementCopies); short reads at the end
// of the file and reads past it report eof and leave the rest of p alone.
func TestClientReadPlacement(t *testing.T) {
	env := startClientEnv(t, nil)
	const size = 300<<10 + 123
	want := pattern(size, 7)
	require.NoError(t, os.WriteFile(env.path("f"), want, 0o644))
	fh, _, err := env.exp.Lookup(env.ctx, "f", true)
	require.NoError(t, err)
	c := env.exp.Client
	conn := c.Conn()
	before := conn.Stats()

	for _, tc := range []struct {
		off, n       int
		direct, copy uint64
		wantN        int
		wantEOF      bool
	}{
		{0, 64 << 10, 1, 0, 64 << 10, false},
		{100 << 10, 256 << 10, 1, 0, size - 100<<10, true}, // short: the end of the file
		{1000, 4 << 10, 0, 1, 4 << 10, false},
		{size - 10, 64 << 10, 1, 0, 10, true},
		{size + 10, 64 << 10, 1, 0, 0, true},
	} {
		p := bytes.Repeat([]byte{0xcc}, tc.n)
		st0 := conn.Stats()
		n, eof, err := c.Read(env.ctx, fh, uint64(tc.off), p)
		require.NoError(t, err)
		require.Equal(t, tc.wantN, n, "read %d at %d", tc.n, tc.off)
		require.Equal(t, tc.wantEOF, eof, "eof of read %d at %d", tc.n, tc.off)
		if n > 0 {
			require.True(t, bytes.Equal(want[tc.off:tc.off+n], p[:n]), "data of read %d at %d", tc.n, tc.off)
		}
		require.Equal(t, bytes.Repeat([]byte{0xcc}, tc.n-n), p[n:], "bytes past the data changed")
		st := conn.Stats()
		require.Equal(t, tc.direct, st.DirectPlacements-st0.DirectPlacements, "direct placements of read %d at %d", tc.n, tc.off)
		require.Equal(t, tc.copy, st.PlacementCopies-st0.PlacementCopies, "copies of read %d at %d", tc.n, tc.off)
	}
	require.Zero(t, conn.Stats().DirectPlacementErrors-before.DirectPlacementErrors)
}

// TestClientInline4096NoChunks: with 4096 bytes negotiated each way (the
// transport's default), READs and WRITEs of 1 to 3.5 KiB move inline, with
// no chunk of any kind (issue 12): the binding plans the AUTH_NONE reply
// verifier an AUTH_SYS call gets, as the Linux client does, so a 3.5 KiB
// READ's reply bound fits 4096.
func TestClientInline4096NoChunks(t *testing.T) {
	env := startClientEnv(t, nil)
	c := env.exp.Client
	fh, _, err := c.Create(env.ctx, env.exp.Root, "f", client.CreateHow{Mode: client.Unchecked})
	require.NoError(t, err)
	conn := c.Conn()
	require.Equal(t, 4096, conn.Stats().Negotiated.SendInline)
	require.Equal(t, 4096, conn.Stats().Negotiated.RecvInline)
	for _, n := range []int{1 << 10, 2 << 10, 3<<10 + 512} {
		data := pattern(n, byte(n))
		st0 := conn.Stats()
		res, err := c.Write(env.ctx, fh, 0, data, client.FileSync)
		require.NoError(t, err)
		require.Equal(t, n, res.Count)
		got := make([]byte, n)
		k, _, err := c.Read(env.ctx, fh, 0, got)
		require.NoError(t, err)
		require.Equal(t, data, got[:k])
		st := conn.Stats()
		require.Zero(t, st.ReadChunks-st0.ReadChunks+st.WriteChunks-st0.WriteChunks+st.ReplyChunks-st0.ReplyChunks,
			"chunks for the WRITE and READ of %d bytes", n)
		require.EqualValues(t, 2, st.InlineCalls-st0.InlineCalls, "inline calls for %d bytes", n)
	}
}

// TestClientReadNullBinding: over a connection whose binding does not know
// NFS (transport.NullBinding: the reply comes whole, through the Reply
// chunk when large), Client.Read still returns the data, copied out of the
// reply.
func TestClientReadNullBinding(t *testing.T) {
	env := startClientEnv(t, func(_ *server.Config, mo *client.MountOptions) {
		mo.Client.Transport.Binding = transport.NullBinding{}
	})
	want := pattern(100<<10, 3)
	require.NoError(t, os.WriteFile(env.path("f"), want, 0o644))
	fh, _, err := env.exp.Lookup(env.ctx, "f", true)
	require.NoError(t, err)
	for _, n := range []int{100, 64 << 10, 200 << 10} {
		p := make([]byte, n)
		k, eof, err := env.exp.Client.Read(env.ctx, fh, 0, p)
		require.NoError(t, err)
		require.Equal(t, min(n, len(want)), k)
		require.Equal(t, n >= len(want), eof)
		require.Equal(t, want[:k], p[:k])
	}
	st := env.exp.Client.Conn().Stats()
	require.Zero(t, st.DirectPlacements+st.PlacementCopies+st.WriteChunks, "nothing placed without nfs.Binding")
	require.NotZero(t, st.ReplyChunks)
}
