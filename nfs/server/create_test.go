package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// TestServerCreate: CREATE of a DirHandler's file (RFC 1813 §3.3.8): UNCHECKED makes the file with the mode asked for and
// returns its handle, attributes and the directory's wcc_data with both
// sides; UNCHECKED on an existing file leaves its data (no size asked);
// GUARDED on an existing file, and any CREATE over a directory, is
// NFS3ERR_EXIST with the directory's wcc_data; EXCLUSIVE succeeds once
// per verifier; a read-only export answers NFS3ERR_ROFS.
func TestServerCreate(t *testing.T) {
	root, h := bigDir(t, 0)
	require.NoError(t, os.WriteFile(filepath.Join(root, "old"), []byte("keep"), 0o644))
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	create := func(xid uint32, name string, how nfsv3.Createhow3) nfsv3.Create3res {
		t.Helper()
		return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcCreate,
			&nfsv3.Create3args{Where: nfsv3.Diropargs3{Dir: rootFH, Name: nfsv3.Filename3(name)}, How: how},
			nfsv3.ReadCreate3res)
	}
	mode := sattrNone()
	mode.Mode = &nfsv3.SetMode3_TRUE{Mode: 0o600}
	res := create(2, "new", &nfsv3.Createhow3_UNCHECKED{ObjAttributes: mode})
	ok, isOK := res.(*nfsv3.Create3res_NFS3_OK)
	require.True(t, isOK, "CREATE: %v", res.GetStatus())
	fi, err := os.Lstat(filepath.Join(root, "new"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	fh, hasFH := ok.Resok.Obj.(*nfsv3.PostOpFh3_TRUE)
	require.True(t, hasFH, "CREATE: no handle")
	require.Equal(t, lookup(t, c, 3, rootFH, "new").Data, fh.Handle.Data)
	attr, hasAttr := ok.Resok.ObjAttributes.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, hasAttr)
	require.Equal(t, uint32(0o600), attr.Attributes.Mode&0o7777)
	pre, hasPre := ok.Resok.DirWcc.Before.(*nfsv3.PreOpAttr_TRUE)
	require.True(t, hasPre, "dir_wcc.before")
	post, hasPost := ok.Resok.DirWcc.After.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, hasPost, "dir_wcc.after")
	require.NotEqual(t, pre.Attributes.Ctime, post.Attributes.Ctime, "the directory changed")

	res = create(4, "old", &nfsv3.Createhow3_UNCHECKED{ObjAttributes: sattrNone()})
	require.Equal(t, nfsv3.NFS3_OK, res.GetStatus())
	got, err := os.ReadFile(filepath.Join(root, "old"))
	require.NoError(t, err)
	require.Equal(t, "keep", string(got), "UNCHECKED without a size kept the data")

	for i, c := range []struct {
		name string
		how  nfsv3.Createhow3
	}{
		{"old", &nfsv3.Createhow3_GUARDED{ObjAttributes: sattrNone()}},
		{"big", &nfsv3.Createhow3_UNCHECKED{ObjAttributes: sattrNone()}},
	} {
		res := create(5+uint32(i), c.name, c.how)
		fail, isFail := res.(*nfsv3.Create3res_default)
		require.True(t, isFail, "CREATE %s: %T", c.name, res)
		require.Equal(t, nfsv3.NFS3ERR_EXIST, fail.Status, c.name)
		require.True(t, fail.Resfail.DirWcc.After.GetAttributesFollow(), "CREATE %s: dir_wcc", c.name)
	}
	// EXCLUSIVE (§3.3.8): the verifier is kept in the new file, so that
	// the same call again (a retransmission) succeeds on the same file
	// and another verifier finds the name taken.
	verf := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	res = create(7, "excl", &nfsv3.Createhow3_EXCLUSIVE{Verf: verf})
	first, isOK := res.(*nfsv3.Create3res_NFS3_OK)
	require.True(t, isOK, "EXCLUSIVE: %v", res.GetStatus())
	res = create(8, "excl", &nfsv3.Createhow3_EXCLUSIVE{Verf: verf})
	again, isOK := res.(*nfsv3.Create3res_NFS3_OK)
	require.True(t, isOK, "EXCLUSIVE again with its verifier: %v", res.GetStatus())
	require.Equal(t, first.Resok.Obj, again.Resok.Obj, "the same file")
	res = create(9, "excl", &nfsv3.Createhow3_EXCLUSIVE{Verf: [8]byte{9}})
	require.Equal(t, nfsv3.NFS3ERR_EXIST, res.GetStatus(), "EXCLUSIVE with another verifier")

	d, err := server.DirFS(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	d.SetReadOnly()
	roh, err := server.NewDirHandler(d, server.DirHandlerOptions{IndexOnly: true})
	require.NoError(t, err)
	ro := startServer(t, server.Config{Handler: roh})
	roFH := mountRoot(t, ro)
	res = results(t, dialRDMANFS(t, ro), 8, nfs.ProgNFS, 3, nfs.ProcCreate, &nfsv3.Create3args{
		Where: nfsv3.Diropargs3{Dir: roFH, Name: "ro"}, How: &nfsv3.Createhow3_UNCHECKED{ObjAttributes: sattrNone()},
	}, nfsv3.ReadCreate3res)
	require.Equal(t, nfsv3.NFS3ERR_ROFS, res.GetStatus())
	_, err = os.Lstat(filepath.Join(root, "ro"))
	require.True(t, os.IsNotExist(err))
}
