package nfs_test

import (
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
)

// TestAttrsLookupMiss: a LOOKUP of a missing name returns the directory's
// attributes (RFC 1813 §3.3.3, LOOKUP3resfail), as knfsd does.
func TestAttrsLookupMiss(t *testing.T) {
	srv := startServer(t, nfs.ServerConfig{FS: newTestFS(t)})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	res := results(t, c, 2, nfs.ProgNFS, 3, nfs.ProcLookup,
		&nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: rootFH, Name: "missing"}}, nfsv3.ReadLookup3res)
	fail, ok := res.(*nfsv3.Lookup3res_default)
	require.True(t, ok, "%T", res)
	require.Equal(t, nfsv3.NFS3ERR_NOENT, fail.Status)
	require.True(t, fail.Resfail.DirAttributes.GetAttributesFollow(), "dir_attributes")
}

// TestAttrsCreateWcc: CREATE and MKDIR return dir_wcc with pre-operation
// attributes (RFC 1813 §2.6, §3.3.8, §3.3.9).
func TestAttrsCreateWcc(t *testing.T) {
	_, h := bigDir(t, 0)
	srv := startServer(t, nfs.ServerConfig{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	cr := results(t, c, 2, nfs.ProgNFS, 3, nfs.ProcCreate, &nfsv3.Create3args{
		Where: nfsv3.Diropargs3{Dir: rootFH, Name: "new"},
		How:   &nfsv3.Createhow3_UNCHECKED{ObjAttributes: sattrNone()},
	}, nfsv3.ReadCreate3res)
	ok, isOK := cr.(*nfsv3.Create3res_NFS3_OK)
	require.True(t, isOK, "CREATE: %v", cr.GetStatus())
	_, hasPre := ok.Resok.DirWcc.Before.(*nfsv3.PreOpAttr_TRUE)
	require.True(t, hasPre, "CREATE dir_wcc.before")
	require.True(t, ok.Resok.DirWcc.After.GetAttributesFollow(), "CREATE dir_wcc.after")
	require.True(t, ok.Resok.ObjAttributes.GetAttributesFollow())

	mk := results(t, c, 3, nfs.ProgNFS, 3, nfs.ProcMkdir, &nfsv3.Mkdir3args{
		Where: nfsv3.Diropargs3{Dir: rootFH, Name: "sub"}, Attributes: sattrNone(),
	}, nfsv3.ReadMkdir3res)
	mok, isOK := mk.(*nfsv3.Mkdir3res_NFS3_OK)
	require.True(t, isOK, "MKDIR: %v", mk.GetStatus())
	_, hasPre = mok.Resok.DirWcc.Before.(*nfsv3.PreOpAttr_TRUE)
	require.True(t, hasPre, "MKDIR dir_wcc.before")
}
