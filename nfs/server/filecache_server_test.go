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

// TestServerOpenFileCache: a DirHandler's READ, WRITE, GETATTR and COMMIT
// share one cached descriptor per file; through it they see the file, not
// the name: a rename changes nothing, a removal makes every call on the
// handle NFS3ERR_STALE and drops the descriptor. SETATTR and a REMOVE
// through the server drop it too. A LOOKUP caches its directory.
func TestServerOpenFileCache(t *testing.T) {
	root, h := bigDir(t, 0)
	at := func(n string) string { return filepath.Join(root, n) }
	require.NoError(t, os.WriteFile(at("f"), []byte("0123456789"), 0o644))
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	xid := uint32(1)
	next := func() uint32 { xid++; return xid }
	fFH := lookup(t, c, next(), rootFH, "f")
	const dirs = 1 // the root, cached by the LOOKUP (for the LOOKUPs that follow)
	require.Equal(t, dirs, server.OpenFiles(h), "LOOKUP cached its directory")

	getattr := func(fh nfsv3.NfsFh3) nfsv3.Getattr3res {
		return results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcGetattr, &nfsv3.Getattr3args{Object: fh}, nfsv3.ReadGetattr3res)
	}
	read := func(fh nfsv3.NfsFh3, off uint64, n uint32) nfsv3.Read3res {
		return results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcRead, &nfsv3.Read3args{File: fh, Offset: off, Count: n}, nfsv3.ReadRead3res)
	}
	commit := func(fh nfsv3.NfsFh3) nfsv3.Commit3res {
		return results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcCommit, &nfsv3.Commit3args{File: fh}, nfsv3.ReadCommit3res)
	}

	w := write(t, c, next(), fFH, 2, []byte("ab"), nfsv3.UNSTABLE)
	require.Equal(t, nfsv3.NFS3_OK, w.GetStatus())
	require.Equal(t, dirs+1, server.OpenFiles(h), "WRITE cached its file")
	ga, ok := getattr(fFH).(*nfsv3.Getattr3res_NFS3_OK)
	require.True(t, ok)
	require.Equal(t, uint64(10), ga.Resok.ObjAttributes.Size)
	fi, err := os.Stat(at("f"))
	require.NoError(t, err)
	require.Equal(t, uint64(fi.ModTime().Unix()), uint64(ga.Resok.ObjAttributes.Mtime.Seconds))
	rd, ok := read(fFH, 0, 100).(*nfsv3.Read3res_NFS3_OK)
	require.True(t, ok)
	require.Equal(t, "01ab456789", string(rd.Resok.Data))
	require.True(t, rd.Resok.Eof)
	cm, ok := commit(fFH).(*nfsv3.Commit3res_NFS3_OK)
	require.True(t, ok)
	require.Equal(t, srv.WriteVerifier(), cm.Resok.Verf)
	require.Equal(t, dirs+1, server.OpenFiles(h), "one descriptor for the file's four calls")

	// A rename on the server's disk: the handle still is the file.
	require.NoError(t, os.Rename(at("f"), at("g")))
	require.Equal(t, nfsv3.NFS3_OK, write(t, c, next(), fFH, 10, []byte("!"), nfsv3.FILE_SYNC).GetStatus())
	b, err := os.ReadFile(at("g"))
	require.NoError(t, err)
	require.Equal(t, "01ab456789!", string(b))

	// Removed on the server's disk, another file under the old name.
	require.NoError(t, os.Remove(at("g")))
	require.NoError(t, os.WriteFile(at("f"), []byte("new"), 0o644))
	require.Equal(t, nfsv3.NFS3ERR_STALE, getattr(fFH).GetStatus())
	require.Equal(t, dirs+0, server.OpenFiles(h), "a removed file's descriptor stays open")
	require.Equal(t, nfsv3.NFS3ERR_STALE, read(fFH, 0, 10).GetStatus())
	require.Equal(t, nfsv3.NFS3ERR_STALE, write(t, c, next(), fFH, 0, []byte("x"), nfsv3.UNSTABLE).GetStatus())
	require.Equal(t, nfsv3.NFS3ERR_STALE, commit(fFH).GetStatus())
	b, err = os.ReadFile(at("f"))
	require.NoError(t, err)
	require.Equal(t, "new", string(b), "a call on the old handle touched the new file")

	// SETATTR of the mode keeps the descriptor the server may still open
	// as it is (its own access, checked again: TestIdentityUnprivileged
	// has a file made read-only, whose descriptor goes); REMOVE drops it.
	nFH := lookup(t, c, next(), rootFH, "f")
	require.Equal(t, nfsv3.NFS3_OK, getattr(nFH).GetStatus())
	require.Equal(t, dirs+1, server.OpenFiles(h))
	sa := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcSetattr, &nfsv3.Setattr3args{
		Object: nFH, NewAttributes: sattrMode(0o600), Guard: &nfsv3.Sattrguard3_FALSE{},
	}, nfsv3.ReadSetattr3res)
	require.Equal(t, nfsv3.NFS3_OK, sa.GetStatus())
	require.Equal(t, dirs+1, server.OpenFiles(h), "SETATTR dropped the descriptor")
	require.Equal(t, nfsv3.NFS3_OK, getattr(nFH).GetStatus())
	require.Equal(t, dirs+1, server.OpenFiles(h))
	rm := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcRemove,
		&nfsv3.Remove3args{Object: nfsv3.Diropargs3{Dir: rootFH, Name: "f"}}, nfsv3.ReadRemove3res)
	require.Equal(t, nfsv3.NFS3_OK, rm.GetStatus())
	require.Equal(t, dirs+0, server.OpenFiles(h), "REMOVE left the descriptor cached")

	// CREATE leaves the new file open for the WRITE that follows, even
	// with a mode that lets nobody write (as knfsd lets the owner).
	ro := sattrMode(0o444)
	cr := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcCreate, &nfsv3.Create3args{
		Where: nfsv3.Diropargs3{Dir: rootFH, Name: "c"}, How: &nfsv3.Createhow3_GUARDED{ObjAttributes: ro},
	}, nfsv3.ReadCreate3res)
	crOK, ok := cr.(*nfsv3.Create3res_NFS3_OK)
	require.True(t, ok, "CREATE: %v", cr.GetStatus())
	require.Equal(t, dirs+1, server.OpenFiles(h), "CREATE did not cache the new file")
	cFH := crOK.Resok.Obj.(*nfsv3.PostOpFh3_TRUE).Handle
	require.Equal(t, nfsv3.NFS3_OK, write(t, c, next(), cFH, 0, []byte("created"), nfsv3.UNSTABLE).GetStatus())
	require.Equal(t, dirs+1, server.OpenFiles(h))
	b, err = os.ReadFile(at("c"))
	require.NoError(t, err)
	require.Equal(t, "created", string(b))
	fi, err = os.Stat(at("c"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o444), fi.Mode().Perm())
}

// sattrMode sets the mode alone.
func sattrMode(m uint32) nfsv3.Sattr3 {
	a := sattrNone()
	a.Mode = &nfsv3.SetMode3_TRUE{Mode: m}
	a.Mtime = &nfsv3.SetMtime_default{SetIt: nfsv3.DONT_CHANGE}
	return a
}
