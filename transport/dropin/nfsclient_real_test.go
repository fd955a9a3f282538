package dropin_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	gonfs "github.com/willscott/go-nfs"
	nfshelper "github.com/willscott/go-nfs/helpers"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/transport"
)

// testRealClient is the drop-in proof from the other side: go-nfs served
// unchanged on a *transport.Listener configured with the NFSv3 binding
// (nfs.Binding: the listener places READ data in the client's Write chunk
// and pulls WRITE data from its Read chunk, under go-nfs's byte stream),
// MOUNT on a TCP listener sharing the handler, and package nfs/client,
// which calls through transport.Conn.Call. A 3 MiB file goes in with
// write-behind (UNSTABLE WRITEs and COMMIT) and comes back with
// read-ahead, checked against the server's file system; the directory is
// listed with READDIRPLUS; the counters show the data moved by RDMA Read
// and RDMA Write.
func testRealClient(t *testing.T, s stack) {
	fs := newMemFS()
	handler := nfshelper.NewCachingHandler(nfshelper.NewNullAuthHandler(fs), 1024)
	l := listen(t, s, &transport.Config{Binding: nfs.Binding{}})
	host, _, err := net.SplitHostPort(s.addr)
	require.NoError(t, err)
	tl, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = tl.Close() })
	go func() { _ = gonfs.Serve(l, handler) }()
	go func() { _ = gonfs.Serve(tl, handler) }()

	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	defer cancel()
	mc, err := client.DialMount(ctx, tl.Addr().String(), nil)
	require.NoError(t, err)
	defer mc.Close()
	root, _, err := mc.Mnt(ctx, "/")
	require.NoError(t, err)
	c, err := client.Dial(ctx, l.Addr().String(), &client.Config{Transport: *s.config(nil)})
	require.NoError(t, err)
	defer c.Close()
	exp, err := client.NewExport(ctx, c, root)
	require.NoError(t, err)
	rsize, wsize := c.IOSize()
	require.Less(t, rsize, 1<<30, "rsize not capped below go-nfs's rtmax (1 GiB)")
	require.LessOrEqual(t, wsize, transport.DefaultMaxRPCSize)

	// go-billy's memfs refuses attributes on CREATE: none are set.
	fh, _, err := c.Create(ctx, exp.Root, "big.bin", client.CreateHow{Mode: client.Unchecked})
	require.NoError(t, err)
	data := pattern(3<<20+5, 42)
	f := c.OpenHandle(ctx, fh, -1)
	_, err = io.Copy(f, bytes.NewReader(data))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	requireFile(t, fs, "big.bin", data)

	f = c.OpenHandle(ctx, fh, int64(len(data)))
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.True(t, bytes.Equal(data, got), "3 MiB read back")

	ents, err := c.ReadDirAll(ctx, exp.Root, true)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	require.Equal(t, "big.bin", ents[0].Name)
	require.NotNil(t, ents[0].Attr)
	require.EqualValues(t, len(data), ents[0].Attr.Size)

	cs := c.Conn().Stats()
	require.NotZero(t, cs.ReadChunkCalls, "WRITEs with their data in a Read chunk")
	require.NotZero(t, cs.WriteChunks, "READs offering a Write chunk")
	require.Zero(t, cs.LongCalls, "Long Calls: the binding moves only the data")
	require.Zero(t, cs.BadReplies+cs.BadXIDs+cs.RemoteErrors)
	ss := l.serverStats(t, 0)
	// The last 5 bytes' WRITE fits inline.
	require.GreaterOrEqual(t, ss.RDMAReadBytes, uint64(3<<20), "bytes go-nfs's listener pulled by RDMA Read")
	require.GreaterOrEqual(t, ss.RDMAWriteBytes, uint64(len(data)), "bytes it pushed by RDMA Write")
}

func TestRealClient(t *testing.T) { testRealClient(t, softStack) }
