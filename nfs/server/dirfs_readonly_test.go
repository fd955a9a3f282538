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

// TestDirReadOnly: a read-only export (Dir.SetReadOnly) reads as before,
// answers every call that would change it NFS3ERR_ROFS, grants no
// MODIFY, EXTEND or DELETE in ACCESS, and stays as it was.
func TestDirReadOnly(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "f"), []byte("data"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	d, err := server.DirFS(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	d.SetReadOnly()
	h, err := server.NewDirHandler(d, server.DirHandlerOptions{IndexOnly: true})
	require.NoError(t, err)
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	f := lookup(t, c, 2, rootFH, "f")
	dir := lookup(t, c, 3, rootFH, "d")

	rd := results(t, c, 4, nfs.ProgNFS, 3, nfs.ProcRead, &nfsv3.Read3args{File: f, Count: 10}, nfsv3.ReadRead3res)
	rok, isOK := rd.(*nfsv3.Read3res_NFS3_OK)
	require.True(t, isOK, "READ: %v", rd.GetStatus())
	require.Equal(t, "data", string(rok.Resok.Data))
	ac := results(t, c, 5, nfs.ProgNFS, 3, nfs.ProcAccess, &nfsv3.Access3args{Object: f, Access: 0x3f}, nfsv3.ReadAccess3res)
	aok, isOK := ac.(*nfsv3.Access3res_NFS3_OK)
	require.True(t, isOK, "ACCESS: %v", ac.GetStatus())
	require.NotZero(t, aok.Resok.Access&nfsv3.ACCESS3_READ)
	require.Zero(t, aok.Resok.Access&(nfsv3.ACCESS3_MODIFY|nfsv3.ACCESS3_EXTEND|nfsv3.ACCESS3_DELETE))

	type statusRes interface{ GetStatus() nfsv3.Nfsstat3 }
	set := sattrNone()
	set.Mode = &nfsv3.SetMode3_TRUE{Mode: 0o600}
	where := func(dir nfsv3.NfsFh3, name string) nfsv3.Diropargs3 { return nfsv3.Diropargs3{Dir: dir, Name: name} }
	changes := map[string]func(xid uint32) statusRes{
		"SETATTR": func(xid uint32) statusRes {
			return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcSetattr,
				&nfsv3.Setattr3args{Object: f, NewAttributes: set, Guard: &nfsv3.Sattrguard3_FALSE{}}, nfsv3.ReadSetattr3res)
		},
		"WRITE": func(xid uint32) statusRes { return write(t, c, xid, f, 0, []byte("x"), nfsv3.FILE_SYNC) },
		"CREATE": func(xid uint32) statusRes {
			return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcCreate,
				&nfsv3.Create3args{Where: where(rootFH, "g"), How: &nfsv3.Createhow3_UNCHECKED{ObjAttributes: sattrNone()}}, nfsv3.ReadCreate3res)
		},
		"MKDIR": func(xid uint32) statusRes {
			return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcMkdir,
				&nfsv3.Mkdir3args{Where: where(rootFH, "e"), Attributes: sattrNone()}, nfsv3.ReadMkdir3res)
		},
		"SYMLINK": func(xid uint32) statusRes {
			return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcSymlink, &nfsv3.Symlink3args{Where: where(rootFH, "s"),
				Symlink: nfsv3.Symlinkdata3{SymlinkAttributes: sattrNone(), SymlinkData: "f"}}, nfsv3.ReadSymlink3res)
		},
		"MKNOD": func(xid uint32) statusRes {
			return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcMknod,
				&nfsv3.Mknod3args{Where: where(rootFH, "p"), What: &nfsv3.Mknoddata3_NF3FIFO{PipeAttributes: sattrNone()}}, nfsv3.ReadMknod3res)
		},
		"REMOVE": func(xid uint32) statusRes {
			return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcRemove, &nfsv3.Remove3args{Object: where(rootFH, "f")}, nfsv3.ReadRemove3res)
		},
		"RMDIR": func(xid uint32) statusRes {
			return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcRmdir, &nfsv3.Rmdir3args{Object: where(rootFH, "d")}, nfsv3.ReadRmdir3res)
		},
		"RENAME": func(xid uint32) statusRes {
			return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcRename,
				&nfsv3.Rename3args{From: where(rootFH, "f"), To: where(dir, "g")}, nfsv3.ReadRename3res)
		},
		"LINK": func(xid uint32) statusRes {
			return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcLink, &nfsv3.Link3args{File: f, Link: where(dir, "g")}, nfsv3.ReadLink3res)
		},
	}
	xid := uint32(10)
	for name, change := range changes {
		xid++
		require.Equal(t, nfsv3.NFS3ERR_ROFS, change(xid).GetStatus(), name)
	}
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, ents, 2, "the directory's entries after refused changes")
	sub, err := os.ReadDir(filepath.Join(root, "d"))
	require.NoError(t, err)
	require.Empty(t, sub)
	data, err := os.ReadFile(filepath.Join(root, "f"))
	require.NoError(t, err)
	require.Equal(t, "data", string(data))
	fi, err := os.Stat(filepath.Join(root, "f"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
}
