package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// exportDir returns a DirHandler exporting root.
func exportDir(t *testing.T, root string) *server.DirHandler {
	t.Helper()
	d, err := server.DirFS(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	h, err := server.NewDirHandler(d, server.DirHandlerOptions{IndexOnly: true})
	require.NoError(t, err)
	return h
}

// getattr returns the status and attributes of GETATTR of fh.
func getattr(t *testing.T, c msgConn, xid uint32, fh nfsv3.NfsFh3) (nfsv3.Nfsstat3, nfsv3.Fattr3) {
	t.Helper()
	res := results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcGetattr, &nfsv3.Getattr3args{Object: fh}, nfsv3.ReadGetattr3res)
	if ok, isOK := res.(*nfsv3.Getattr3res_NFS3_OK); isOK {
		return nfsv3.NFS3_OK, ok.Resok.ObjAttributes
	}
	return res.GetStatus(), nfsv3.Fattr3{}
}

// TestDirOverNFS: a Dir served by the Server, driven through the
// procedures a client uses on it: the files, modes, links, times and
// owners land in the directory; a handle follows its file across a
// rename and goes stale with its last name.
func TestDirOverNFS(t *testing.T) {
	root := t.TempDir()
	srv := startServer(t, server.Config{Handler: exportDir(t, root)})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	at := func(n string) string { return filepath.Join(root, n) }
	xid := uint32(1)
	next := func() uint32 { xid++; return xid }
	status := func(res interface{ GetStatus() nfsv3.Nfsstat3 }) nfsv3.Nfsstat3 { return res.GetStatus() }

	// CREATE, WRITE, READ.
	sattr := sattrNone()
	sattr.Mode = &nfsv3.SetMode3_TRUE{Mode: 0o640}
	cr := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcCreate, &nfsv3.Create3args{
		Where: nfsv3.Diropargs3{Dir: rootFH, Name: "hello.txt"}, How: &nfsv3.Createhow3_UNCHECKED{ObjAttributes: sattr},
	}, nfsv3.ReadCreate3res)
	require.Equal(t, nfsv3.NFS3_OK, status(cr))
	fi, err := os.Stat(at("hello.txt"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	fh := lookup(t, c, next(), rootFH, "hello.txt")
	wr := write(t, c, next(), fh, 0, []byte("hello, world"), nfsv3.FILE_SYNC)
	require.Equal(t, nfsv3.NFS3_OK, status(wr))
	got, err := os.ReadFile(at("hello.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello, world", string(got))
	rd := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcRead, &nfsv3.Read3args{File: fh, Count: 100}, nfsv3.ReadRead3res)
	rok, isOK := rd.(*nfsv3.Read3res_NFS3_OK)
	require.True(t, isOK, "READ: %v", status(rd))
	require.Equal(t, "hello, world", string(rok.Resok.Data))
	require.True(t, rok.Resok.Eof)

	// MKDIR, RENAME into it.
	sattr.Mode = &nfsv3.SetMode3_TRUE{Mode: 0o750}
	mk := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcMkdir, &nfsv3.Mkdir3args{
		Where: nfsv3.Diropargs3{Dir: rootFH, Name: "dir"}, Attributes: sattr,
	}, nfsv3.ReadMkdir3res)
	require.Equal(t, nfsv3.NFS3_OK, status(mk))
	fi, err = os.Stat(at("dir"))
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	require.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
	dirFH := lookup(t, c, next(), rootFH, "dir")
	rn := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcRename, &nfsv3.Rename3args{
		From: nfsv3.Diropargs3{Dir: rootFH, Name: "hello.txt"}, To: nfsv3.Diropargs3{Dir: dirFH, Name: "moved.txt"},
	}, nfsv3.ReadRename3res)
	require.Equal(t, nfsv3.NFS3_OK, status(rn))
	_, err = os.Stat(at("dir/moved.txt"))
	require.NoError(t, err)
	// The handle from before the rename still names the file.
	st, attr := getattr(t, c, next(), fh)
	require.Equal(t, nfsv3.NFS3_OK, st, "GETATTR of the renamed file's old handle")
	require.EqualValues(t, 12, attr.Size)

	// LINK.
	ln := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcLink, &nfsv3.Link3args{
		File: fh, Link: nfsv3.Diropargs3{Dir: rootFH, Name: "hard"},
	}, nfsv3.ReadLink3res)
	require.Equal(t, nfsv3.NFS3_OK, status(ln))
	st, attr = getattr(t, c, next(), lookup(t, c, next(), rootFH, "hard"))
	require.Equal(t, nfsv3.NFS3_OK, st)
	require.EqualValues(t, 2, attr.Nlink)
	require.EqualValues(t, 12, attr.Size)

	// SYMLINK, READLINK.
	sl := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcSymlink, &nfsv3.Symlink3args{
		Where:   nfsv3.Diropargs3{Dir: rootFH, Name: "sym"},
		Symlink: nfsv3.Symlinkdata3{SymlinkAttributes: sattrNone(), SymlinkData: "dir/moved.txt"},
	}, nfsv3.ReadSymlink3res)
	require.Equal(t, nfsv3.NFS3_OK, status(sl))
	target, err := os.Readlink(at("sym"))
	require.NoError(t, err)
	require.Equal(t, "dir/moved.txt", target)
	rl := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcReadlink,
		&nfsv3.Readlink3args{Symlink: lookup(t, c, next(), rootFH, "sym")}, nfsv3.ReadReadlink3res)
	rlok, isOK := rl.(*nfsv3.Readlink3res_NFS3_OK)
	require.True(t, isOK, "READLINK: %v", status(rl))
	require.Equal(t, "dir/moved.txt", rlok.Resok.Data)

	// SETATTR: mode, times, owner (the tests run as root).
	mtime, atime := nfsv3.Nfstime3{Seconds: 1_000_000_000}, nfsv3.Nfstime3{Seconds: 999_999_000}
	set := sattrNone()
	set.Mode = &nfsv3.SetMode3_TRUE{Mode: 0o604}
	set.Atime = &nfsv3.SetAtime_SET_TO_CLIENT_TIME{Atime: atime}
	set.Mtime = &nfsv3.SetMtime_SET_TO_CLIENT_TIME{Mtime: mtime}
	root0 := os.Geteuid() == 0
	if root0 {
		set.Uid, set.Gid = &nfsv3.SetUid3_TRUE{Uid: 1234}, &nfsv3.SetGid3_TRUE{Gid: 4321}
	}
	sa := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcSetattr,
		&nfsv3.Setattr3args{Object: fh, NewAttributes: set, Guard: &nfsv3.Sattrguard3_FALSE{}}, nfsv3.ReadSetattr3res)
	require.Equal(t, nfsv3.NFS3_OK, status(sa))
	fi, err = os.Stat(at("dir/moved.txt"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o604), fi.Mode().Perm())
	require.EqualValues(t, mtime.Seconds, fi.ModTime().Unix())
	if sys := fi.Sys().(*syscall.Stat_t); root0 {
		require.Equal(t, [2]uint32{1234, 4321}, [2]uint32{sys.Uid, sys.Gid}, "owner")
	}

	// REMOVE, RMDIR; the removed file's handle is stale.
	for _, rm := range []struct {
		dir  nfsv3.NfsFh3
		name string
	}{{rootFH, "hard"}, {rootFH, "sym"}, {dirFH, "moved.txt"}} {
		res := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcRemove,
			&nfsv3.Remove3args{Object: nfsv3.Diropargs3{Dir: rm.dir, Name: rm.name}}, nfsv3.ReadRemove3res)
		require.Equal(t, nfsv3.NFS3_OK, status(res), "REMOVE %s", rm.name)
	}
	st, _ = getattr(t, c, next(), fh)
	require.Equal(t, nfsv3.NFS3ERR_STALE, st, "GETATTR of a removed file")
	rmd := results(t, c, next(), nfs.ProgNFS, 3, nfs.ProcRmdir,
		&nfsv3.Rmdir3args{Object: nfsv3.Diropargs3{Dir: rootFH, Name: "dir"}}, nfsv3.ReadRmdir3res)
	require.Equal(t, nfsv3.NFS3_OK, status(rmd))
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Empty(t, ents, "left in the export")
}

// TestDirOverNFSLargeDirAndRestart: READDIRPLUS lists a directory of
// 2,000 entries with their handles, and a restarted server (a new Dir,
// DirHandler and connection) takes the handles the first one gave out.
func TestDirOverNFSLargeDirAndRestart(t *testing.T) {
	const n = 2000
	root, h := bigDir(t, n)
	srv := startServer(t, server.Config{Handler: h})
	c := dialRDMANFS(t, srv)
	big := lookup(t, c, 2, mountRoot(t, srv), "big")
	l := readdirplusAll(t, c, big, 4096, 32768, true)
	require.Len(t, l.names, n)
	fh := l.fhs["entry-1999"]
	require.NotEmpty(t, fh, "no handle for entry-1999")

	srv2 := startServer(t, server.Config{Handler: exportDir(t, root)})
	st, attr := getattr(t, dialRDMANFS(t, srv2), 2, nfsv3.NfsFh3{Data: fh})
	require.Equal(t, nfsv3.NFS3_OK, st, "GETATTR after restart")
	require.Equal(t, l.names["entry-1999"], attr.Fileid)
	require.Equal(t, fmt.Sprint(fileID(t, filepath.Join(root, "big", "entry-1999"))), fmt.Sprint(attr.Fileid))
}

// fileID returns the inode number of name.
func fileID(t *testing.T, name string) uint64 {
	t.Helper()
	fi, err := os.Lstat(name)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}
