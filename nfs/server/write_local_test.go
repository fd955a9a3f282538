package server_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestServerWriteLocal: WRITE to a DirHandler's file in the dispatch
// layer (RFC 1813 §3.3.7): the data lands at the offset (a hole before
// it), UNSTABLE is answered UNSTABLE and DATA_SYNC/FILE_SYNC FILE_SYNC,
// every reply carries the server's write verifier and the file's wcc_data
// (size before and after), count is what was written; a read-only export
// answers NFS3ERR_ROFS with the file's attributes.
func TestServerWriteLocal(t *testing.T) {
	root, srv, c, fFH := startWriteFile(t)
	verf := srv.WriteVerifier()
	for i, w := range []struct {
		off      uint64
		data     string
		stable   nfsv3.StableHow
		want     nfsv3.StableHow
		pre, end uint64
	}{
		{2, "ab", nfsv3.UNSTABLE, nfsv3.UNSTABLE, 10, 10},
		{12, "xyz", nfsv3.DATA_SYNC, nfsv3.FILE_SYNC, 10, 15},
		{15, "!", nfsv3.FILE_SYNC, nfsv3.FILE_SYNC, 15, 16},
	} {
		res := write(t, c, 3+uint32(i), fFH, w.off, []byte(w.data), w.stable)
		ok, isOK := res.(*nfsv3.Write3res_NFS3_OK)
		require.True(t, isOK, "WRITE %d: %v", i, res.GetStatus())
		require.Equal(t, uint32(len(w.data)), ok.Resok.Count)
		require.Equal(t, w.want, ok.Resok.Committed)
		require.Equal(t, verf, ok.Resok.Verf)
		pre, hasPre := ok.Resok.FileWcc.Before.(*nfsv3.PreOpAttr_TRUE)
		require.True(t, hasPre, "WRITE %d: pre_op_attr", i)
		require.Equal(t, w.pre, pre.Attributes.Size)
		post, hasPost := ok.Resok.FileWcc.After.(*nfsv3.PostOpAttr_TRUE)
		require.True(t, hasPost, "WRITE %d: post_op_attr", i)
		require.Equal(t, w.end, post.Attributes.Size)
	}
	got, err := os.ReadFile(filepath.Join(root, "f"))
	require.NoError(t, err)
	require.True(t, bytes.Equal([]byte("01ab456789\x00\x00xyz!"), got), "%q", got)

	d, err := server.DirFS(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	d.SetReadOnly()
	roh, err := server.NewDirHandler(d, server.DirHandlerOptions{IndexOnly: true})
	require.NoError(t, err)
	ro := startServer(t, server.Config{Handler: roh})
	rc := dialRDMANFS(t, ro)
	roF := lookup(t, rc, 2, mountRoot(t, ro), "f")
	res := write(t, rc, 3, roF, 0, []byte("no"), nfsv3.FILE_SYNC)
	fail, isFail := res.(*nfsv3.Write3res_default)
	require.True(t, isFail, "%T", res)
	require.Equal(t, nfsv3.NFS3ERR_ROFS, fail.Status)
	require.True(t, fail.Resfail.FileWcc.After.GetAttributesFollow())
}

// TestServerWriteStableSync: a DATA_SYNC or FILE_SYNC WRITE to a cached
// file is written with RWF_SYNC (one pwritev2, no fsync after it), an
// UNSTABLE one is not; where the kernel refuses RWF_SYNC the server writes
// and fsyncs instead, and still answers FILE_SYNC with the data in place.
func TestServerWriteStableSync(t *testing.T) {
	root, _, c, fFH := startWriteFile(t)

	var synced []string
	refuse := false
	defer server.WrapSyncWrite(func(real server.SyncWriteFunc) server.SyncWriteFunc {
		return func(fd int, b []byte, off int64) (int, error) {
			if refuse {
				return 0, unix.ENOSYS
			}
			synced = append(synced, string(b))
			return real(fd, b, off)
		}
	})()
	xid := uint32(3)
	for _, w := range []struct {
		data   string
		stable nfsv3.StableHow
		want   nfsv3.StableHow
	}{{"u", nfsv3.UNSTABLE, nfsv3.UNSTABLE}, {"d", nfsv3.DATA_SYNC, nfsv3.FILE_SYNC}, {"f", nfsv3.FILE_SYNC, nfsv3.FILE_SYNC}} {
		xid++
		res := write(t, c, xid, fFH, 0, []byte(w.data), w.stable)
		ok, isOK := res.(*nfsv3.Write3res_NFS3_OK)
		require.True(t, isOK, "%v", res.GetStatus())
		require.Equal(t, w.want, ok.Resok.Committed)
	}
	require.Equal(t, []string{"d", "f"}, synced, "the stable WRITEs, with RWF_SYNC")

	refuse = true
	for i, data := range []string{"A", "B"} {
		xid++
		res := write(t, c, xid, fFH, uint64(1+i), []byte(data), nfsv3.FILE_SYNC)
		ok, isOK := res.(*nfsv3.Write3res_NFS3_OK)
		require.True(t, isOK, "%v", res.GetStatus())
		require.Equal(t, nfsv3.FILE_SYNC, ok.Resok.Committed)
	}
	got, err := os.ReadFile(filepath.Join(root, "f"))
	require.NoError(t, err)
	require.Equal(t, "fAB3456789", string(got))
}

// startWriteFile serves a directory holding f ("0123456789") and returns
// the directory, the server, a connection to it and f's handle.
func startWriteFile(t *testing.T) (root string, srv *server.Server, c *transport.Conn, fFH nfsv3.NfsFh3) {
	root, h := bigDir(t, 0)
	require.NoError(t, os.WriteFile(filepath.Join(root, "f"), []byte("0123456789"), 0o644))
	srv = startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c = dialRDMANFS(t, srv)
	return root, srv, c, lookup(t, c, 2, rootFH, "f")
}

// TestServerWriteLimits: a WRITE whose count is not its data's length is
// GARBAGE_ARGS, and one past the largest offset (2^63-1) NFS3ERR_FBIG
// with the file's attributes, as from knfsd; the file is untouched.
func TestServerWriteLimits(t *testing.T) {
	root, _, c, fFH := startWriteFile(t)
	args := encode(t, &nfsv3.Write3args{File: fFH, Count: 3, Stable: nfsv3.FILE_SYNC, Data: []byte("ab")})
	rh, _ := call(t, c, 3, nfs.ProgNFS, 3, nfs.ProcWrite, args)
	require.Equal(t, xdr.AcceptGarbageArgs, rh.AcceptStat, "count 3, 2 bytes of data")
	res := write(t, c, 4, fFH, 1<<63-1, []byte("ab"), nfsv3.FILE_SYNC)
	fail, isFail := res.(*nfsv3.Write3res_default)
	require.True(t, isFail, "%T", res)
	require.Equal(t, nfsv3.NFS3ERR_FBIG, fail.Status)
	require.True(t, fail.Resfail.FileWcc.After.GetAttributesFollow())
	got, err := os.ReadFile(filepath.Join(root, "f"))
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(got))
}
