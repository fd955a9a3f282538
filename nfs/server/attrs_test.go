package server_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// TestAttrsLookupMiss: a LOOKUP of a missing name returns the directory's
// attributes (RFC 1813 §3.3.3, LOOKUP3resfail), as knfsd does.
func TestAttrsLookupMiss(t *testing.T) {
	srv := startServer(t, server.Config{Handler: newTestDir(t)})
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
	srv := startServer(t, server.Config{Handler: h})
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

// TestAttrsFailedWcc: failed SETATTR, WRITE, REMOVE, RMDIR and RENAME
// carry the post-operation attributes of the object or directories in
// their wcc_data (RFC 1813 §2.6), so the
// Linux client keeps its cached attributes instead of asking GETATTR.
func TestAttrsFailedWcc(t *testing.T) {
	root, h := bigDir(t, 0)
	require.NoError(t, os.WriteFile(filepath.Join(root, "big", "file"), []byte("x"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(root, "full"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "full", "in"), nil, 0o644))
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	bigFH := lookup(t, c, 2, rootFH, "big")
	fileFH := lookup(t, c, 3, bigFH, "file")

	rm := results(t, c, 4, nfs.ProgNFS, 3, nfs.ProcRemove,
		&nfsv3.Remove3args{Object: nfsv3.Diropargs3{Dir: bigFH, Name: "missing"}}, nfsv3.ReadRemove3res)
	rmFail, ok := rm.(*nfsv3.Remove3res_default)
	require.True(t, ok, "REMOVE of a missing name: %T", rm)
	require.Equal(t, nfsv3.NFS3ERR_NOENT, rmFail.Status)
	requireDirAttrs(t, rmFail.Resfail.DirWcc.After, "REMOVE dir_wcc")

	rd := results(t, c, 5, nfs.ProgNFS, 3, nfs.ProcRmdir,
		&nfsv3.Rmdir3args{Object: nfsv3.Diropargs3{Dir: rootFH, Name: "full"}}, nfsv3.ReadRmdir3res)
	rdFail, ok := rd.(*nfsv3.Rmdir3res_default)
	require.True(t, ok, "RMDIR of a full directory: %T", rd)
	require.Equal(t, nfsv3.NFS3ERR_NOTEMPTY, rdFail.Status, "RMDIR of a full directory")
	requireDirAttrs(t, rdFail.Resfail.DirWcc.After, "RMDIR dir_wcc")

	rn := results(t, c, 6, nfs.ProgNFS, 3, nfs.ProcRename, &nfsv3.Rename3args{
		From: nfsv3.Diropargs3{Dir: bigFH, Name: "missing"}, To: nfsv3.Diropargs3{Dir: rootFH, Name: "x"},
	}, nfsv3.ReadRename3res)
	rnFail, ok := rn.(*nfsv3.Rename3res_default)
	require.True(t, ok, "RENAME of a missing name: %T", rn)
	requireDirAttrs(t, rnFail.Resfail.FromdirWcc.After, "RENAME fromdir_wcc")
	requireDirAttrs(t, rnFail.Resfail.TodirWcc.After, "RENAME todir_wcc")

	sa := results(t, c, 7, nfs.ProgNFS, 3, nfs.ProcSetattr, &nfsv3.Setattr3args{
		Object: fileFH, NewAttributes: sattrNone(),
		Guard: &nfsv3.Sattrguard3_TRUE{ObjCtime: nfsv3.Nfstime3{Seconds: 1, Nseconds: 2}},
	}, nfsv3.ReadSetattr3res)
	saFail, ok := sa.(*nfsv3.Setattr3res_default)
	require.True(t, ok, "SETATTR with a guard that does not match: %T", sa)
	require.Equal(t, nfsv3.NFS3ERR_NOT_SYNC, saFail.Status)
	after, ok := saFail.Resfail.ObjWcc.After.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, ok, "SETATTR obj_wcc.after")
	require.Equal(t, uint64(1), after.Attributes.Size)

	wr := results(t, c, 8, nfs.ProgNFS, 3, nfs.ProcWrite, &nfsv3.Write3args{
		File: bigFH, Count: 1, Stable: nfsv3.UNSTABLE, Data: []byte("y"),
	}, nfsv3.ReadWrite3res)
	wrFail, ok := wr.(*nfsv3.Write3res_default)
	require.True(t, ok, "WRITE to a directory: %T", wr)
	requireDirAttrs(t, wrFail.Resfail.FileWcc.After, "WRITE file_wcc")
}

// requireDirAttrs fails t unless a holds a directory's attributes.
func requireDirAttrs(t *testing.T, a nfsv3.PostOpAttr, what string) {
	t.Helper()
	got, ok := a.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, ok, "%s: no post-operation attributes", what)
	require.Equal(t, nfsv3.NF3DIR, got.Attributes.Type, what)
}

// TestAttrsSameEverywhere: every procedure that returns a file's
// attributes returns the same ones, the file's own (RFC 1813 §2.6: its
// atime, mtime and ctime, all different here, and the bytes its blocks
// take), so that a client's attribute cache never sees a file change
// that did not happen.
func TestAttrsSameEverywhere(t *testing.T) {
	root, h := newTestExport(t)
	f := filepath.Join(root, "f")
	require.NoError(t, os.WriteFile(f, make([]byte, 10000), 0o644))
	require.NoError(t, os.Chtimes(f, time.Unix(1_000_000_000, 1), time.Unix(1_100_000_000, 2)))
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	want := lstatAttr(t, f)
	require.NotEqual(t, want.Atime, want.Mtime)
	require.NotEqual(t, want.Mtime, want.Ctime)
	require.NotZero(t, want.Used)

	fh := lookup(t, c, 2, rootFH, "f")
	st, attr := getattr(t, c, 3, fh)
	require.Equal(t, nfsv3.NFS3_OK, st)
	require.Equal(t, want, attr, "GETATTR")
	lk := results(t, c, 4, nfs.ProgNFS, 3, nfs.ProcLookup,
		&nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: rootFH, Name: "f"}}, nfsv3.ReadLookup3res)
	requireAttrs(t, f, lk.(*nfsv3.Lookup3res_NFS3_OK).Resok.ObjAttributes, "LOOKUP")
	ac := results(t, c, 5, nfs.ProgNFS, 3, nfs.ProcAccess, &nfsv3.Access3args{Object: fh, Access: 0x3f}, nfsv3.ReadAccess3res)
	requireAttrs(t, f, ac.(*nfsv3.Access3res_NFS3_OK).Resok.ObjAttributes, "ACCESS")
	pc := results(t, c, 6, nfs.ProgNFS, 3, nfs.ProcPathconf, &nfsv3.Pathconf3args{Object: fh}, nfsv3.ReadPathconf3res)
	requireAttrs(t, f, pc.(*nfsv3.Pathconf3res_NFS3_OK).Resok.ObjAttributes, "PATHCONF")
	cm := results(t, c, 7, nfs.ProgNFS, 3, nfs.ProcCommit, &nfsv3.Commit3args{File: fh}, nfsv3.ReadCommit3res)
	requireAttrs(t, f, cm.(*nfsv3.Commit3res_NFS3_OK).Resok.FileWcc.After, "COMMIT")
	l := readdirplusAll(t, c, rootFH, 4096, 32768, true)
	require.Equal(t, want.Fileid, l.names["f"], "READDIRPLUS fileid")
	rp := results(t, c, 8, nfs.ProgNFS, 3, nfs.ProcReaddirplus,
		&nfsv3.Readdirplus3args{Dir: rootFH, Dircount: 4096, Maxcount: 32768}, nfsv3.ReadReaddirplus3res)
	found := false
	for e := rp.(*nfsv3.Readdirplus3res_NFS3_OK).Resok.Reply.Entries; e != nil; e = e.Nextentry {
		if e.Name == "f" {
			requireAttrs(t, f, e.NameAttributes, "READDIRPLUS")
			found = true
		}
	}
	require.True(t, found, "f listed")
	rd := results(t, c, 9, nfs.ProgNFS, 3, nfs.ProcRead, &nfsv3.Read3args{File: fh, Count: 10}, nfsv3.ReadRead3res)
	got := rd.(*nfsv3.Read3res_NFS3_OK).Resok.FileAttributes.(*nfsv3.PostOpAttr_TRUE).Attributes
	require.Equal(t, want, got, "READ: the attributes before the read")
}
