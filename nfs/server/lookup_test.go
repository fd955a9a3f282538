package server_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// lstatAttr returns the fattr3 of name as lstat(2) gives it (RFC 1813
// §2.6): the attributes every reply must carry for that file.
func lstatAttr(t *testing.T, name string) nfsv3.Fattr3 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(name, &st))
	types := map[uint32]nfsv3.Ftype3{
		unix.S_IFREG: nfsv3.NF3REG, unix.S_IFDIR: nfsv3.NF3DIR, unix.S_IFLNK: nfsv3.NF3LNK, unix.S_IFIFO: nfsv3.NF3FIFO,
		unix.S_IFSOCK: nfsv3.NF3SOCK, unix.S_IFCHR: nfsv3.NF3CHR, unix.S_IFBLK: nfsv3.NF3BLK,
	}
	ts := func(t unix.Timespec) nfsv3.Nfstime3 {
		return nfsv3.Nfstime3{Seconds: uint32(t.Sec), Nseconds: uint32(t.Nsec)}
	}
	return nfsv3.Fattr3{
		Type: types[st.Mode&unix.S_IFMT], Mode: st.Mode & 0o7777, Nlink: uint32(st.Nlink), Uid: st.Uid, Gid: st.Gid,
		Size: uint64(st.Size), Used: uint64(st.Blocks) * 512,
		Rdev:   nfsv3.Specdata3{Specdata1: unix.Major(st.Rdev), Specdata2: unix.Minor(st.Rdev)},
		Fileid: st.Ino, Atime: ts(st.Atim), Mtime: ts(st.Mtim), Ctime: ts(st.Ctim),
		Fsid: devFSID(st.Dev), // the export's file system's: no fsid= in these tests
	}
}

// devFSID is fattr3's fsid of a file on the device dev when the export
// has no fsid=: the device number as knfsd gives it (Linux's
// new_encode_dev).
func devFSID(dev uint64) uint64 {
	major, minor := uint64(unix.Major(dev)), uint64(unix.Minor(dev))
	return minor&0xff | major<<8 | (minor&^0xff)<<12
}

// requireAttrs fails t unless a holds the attributes of name.
func requireAttrs(t *testing.T, name string, a nfsv3.PostOpAttr, what string) {
	t.Helper()
	got, ok := a.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, ok, "%s: no attributes", what)
	require.Equal(t, lstatAttr(t, name), got.Attributes, what)
}

// TestServerFastPaths: GETATTR, LOOKUP and READ, the calls of a client's
// everyday work: the attributes are the files' own (lstat's, times
// included), LOOKUP gives the handles a lookup from elsewhere gives and
// knfsd's answers to the names it refuses (its failures carry the
// directory's attributes; ".." of the root is the root; empty names and
// names knfsd's decoder refuses are GARBAGE_ARGS), READ
// gives the bytes, count and eof of the file's range, and READ of a
// directory is NFS3ERR_ISDIR. The export has the file "a" ("hello") and
// the directory "d" holding "b" ("bee").
func TestServerFastPaths(t *testing.T) {
	root, h := bigDir(t, 0)
	at := func(n string) string { return filepath.Join(root, n) }
	require.NoError(t, os.WriteFile(at("a"), []byte("hello"), 0o644))
	require.NoError(t, os.Mkdir(at("d"), 0o755))
	require.NoError(t, os.WriteFile(at("d/b"), []byte("bee"), 0o644))
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	aFH := lookup(t, c, 2, rootFH, "a")
	dFH := lookup(t, c, 3, rootFH, "d")
	bFH := lookup(t, c, 4, dFH, "b")

	for i, f := range []struct {
		fh   nfsv3.NfsFh3
		name string
	}{{rootFH, "."}, {aFH, "a"}, {dFH, "d"}, {bFH, "d/b"}} {
		st, attr := getattr(t, c, 10+uint32(i), f.fh)
		require.Equal(t, nfsv3.NFS3_OK, st)
		require.Equal(t, lstatAttr(t, at(f.name)), attr, "GETATTR %s", f.name)
	}
	for i, l := range []struct {
		dir        nfsv3.NfsFh3
		dirName    string
		name       string
		want       nfsv3.NfsFh3
		targetName string
	}{
		{rootFH, ".", "a", aFH, "a"}, {dFH, "d", "b", bFH, "d/b"},
		{dFH, "d", ".", dFH, "d"}, {dFH, "d", "..", rootFH, "."}, {rootFH, ".", "..", rootFH, "."},
	} {
		res := results(t, c, 20+uint32(i), nfs.ProgNFS, 3, nfs.ProcLookup,
			&nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: l.dir, Name: nfsv3.Filename3(l.name)}}, nfsv3.ReadLookup3res)
		ok, isOK := res.(*nfsv3.Lookup3res_NFS3_OK)
		require.True(t, isOK, "LOOKUP %s in %s: %v", l.name, l.dirName, res.GetStatus())
		require.True(t, bytes.Equal(l.want.Data, ok.Resok.Object.Data), "LOOKUP %s in %s: the handle", l.name, l.dirName)
		requireAttrs(t, at(l.targetName), ok.Resok.ObjAttributes, "LOOKUP "+l.name+": obj_attributes")
		requireAttrs(t, at(l.dirName), ok.Resok.DirAttributes, "LOOKUP "+l.name+": dir_attributes")
	}
	content := map[string]string{"a": "hello", "d/b": "bee"}
	for i, r := range []struct {
		file   string
		fh     nfsv3.NfsFh3
		offset uint64
		count  uint32
	}{
		{"a", aFH, 0, 2}, {"a", aFH, 0, 5}, {"a", aFH, 0, 4096}, {"a", aFH, 3, 100}, {"a", aFH, 5, 10},
		{"a", aFH, 99, 10}, {"d/b", bFH, 1, 1}, {"a", aFH, 1, 0},
	} {
		attrBefore := lstatAttr(t, at(r.file))
		res := results(t, c, 30+uint32(i), nfs.ProgNFS, 3, nfs.ProcRead,
			&nfsv3.Read3args{File: r.fh, Offset: r.offset, Count: r.count}, nfsv3.ReadRead3res)
		ok, isOK := res.(*nfsv3.Read3res_NFS3_OK)
		require.True(t, isOK, "READ %+v: %v", r, res.GetStatus())
		data := content[r.file]
		want := data[min(int(r.offset), len(data)):min(int(r.offset)+int(r.count), len(data))]
		require.Equal(t, want, string(ok.Resok.Data), "READ %+v", r)
		require.EqualValues(t, len(want), ok.Resok.Count, "READ %+v", r)
		require.Equal(t, int(r.offset)+int(r.count) >= len(data), ok.Resok.Eof, "READ %+v: eof", r)
		attr, hasAttr := ok.Resok.FileAttributes.(*nfsv3.PostOpAttr_TRUE)
		require.True(t, hasAttr, "READ %+v: file_attributes", r)
		attr.Attributes.Atime = attrBefore.Atime // the read may have moved it
		require.Equal(t, attrBefore, attr.Attributes, "READ %+v: file_attributes", r)
	}

	fails := []struct {
		dir    nfsv3.NfsFh3
		name   string
		status nfsv3.Nfsstat3
	}{
		{rootFH, "missing", nfsv3.NFS3ERR_NOENT},
		{dFH, "missing", nfsv3.NFS3ERR_NOENT},
		{aFH, "x", nfsv3.NFS3ERR_NOTDIR},
	}
	for i, f := range fails {
		res := results(t, c, 40+uint32(i), nfs.ProgNFS, 3, nfs.ProcLookup,
			&nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: f.dir, Name: nfsv3.Filename3(f.name)}}, nfsv3.ReadLookup3res)
		fail, ok := res.(*nfsv3.Lookup3res_default)
		require.True(t, ok, "LOOKUP %q: %T", f.name, res)
		require.Equal(t, f.status, fail.Status, "LOOKUP %q", f.name)
		require.True(t, fail.Resfail.DirAttributes.GetAttributesFollow(), "LOOKUP %q: dir_attributes", f.name)
	}

	rd := results(t, c, 51, nfs.ProgNFS, 3, nfs.ProcRead, &nfsv3.Read3args{File: dFH, Count: 10}, nfsv3.ReadRead3res)
	require.Equal(t, nfsv3.NFS3ERR_ISDIR, rd.GetStatus())
	st, _ := getattr(t, c, 52, nfsv3.NfsFh3{Data: bytes.Repeat([]byte{7}, 32)})
	require.Contains(t, []nfsv3.Nfsstat3{nfsv3.NFS3ERR_STALE, nfsv3.NFS3ERR_BADHANDLE}, st)

	rh, _ := call(t, c, 53, nfs.ProgNFS, 3, nfs.ProcRead, []byte{0, 0, 0, 1})
	require.Equal(t, xdr.AcceptGarbageArgs, rh.AcceptStat)
	// Names knfsd's decoder refuses: GARBAGE_ARGS, as from knfsd.
	for i, name := range []string{"", "d/b", "a\x00b", strings.Repeat("x", 256)} {
		rh, _ := call(t, c, 60+uint32(i), nfs.ProgNFS, 3, nfs.ProcLookup,
			encode(t, &nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: rootFH, Name: nfsv3.Filename3(name)}}))
		require.Equal(t, xdr.AcceptGarbageArgs, rh.AcceptStat, "LOOKUP %q", name)
	}
}
