//go:build e2eguest

package knfsdclient_test

import (
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"
)

// NFS version 3 (RFC 1813 §3).
const (
	nfsProg = nfsv3.NFS_PROGRAM_PROGRAM_NUMBER // 100003
	nfsVers = 3

	nfsProcNull     = 0
	nfsProcGetattr  = 1
	nfsProcLookup   = 3
	nfsProcReadlink = 5
	nfsProcRead     = 6
	nfsProcWrite    = 7
	nfsProcCreate   = 8
	nfsProcSymlink  = 10
	nfsProcRemove   = 12
	nfsProcFsinfo   = 19
)

// nfsClient is an NFSv3 client on an rpcClient, with buildbarn/go-xdr's
// generated types. Each method fails t unless knfsd answers NFS3_OK (or
// what the method says it returns).
type nfsClient struct {
	t   testing.TB
	rpc *rpcClient
}

func fh(h []byte) nfsv3.NfsFh3 { return nfsv3.NfsFh3{Data: h} }

// null calls NFSPROC3_NULL, whose reply has no results.
func (c nfsClient) null() {
	c.t.Helper()
	r := c.rpc.call(c.t, nfsProg, nfsVers, nfsProcNull, nil)
	require.Zero(c.t, r.Len(), "NULL results")
}

func (c nfsClient) getattr(h []byte) nfsv3.Fattr3 {
	c.t.Helper()
	res := decode(c.t, c.rpc.call(c.t, nfsProg, nfsVers, nfsProcGetattr, &nfsv3.Getattr3args{Object: fh(h)}), nfsv3.ReadGetattr3res)
	ok, isOK := res.(*nfsv3.Getattr3res_NFS3_OK)
	require.True(c.t, isOK, "GETATTR status %v", res.GetStatus())
	return ok.Resok.ObjAttributes
}

func (c nfsClient) fsinfo(root []byte) *nfsv3.Fsinfo3resok {
	c.t.Helper()
	res := decode(c.t, c.rpc.call(c.t, nfsProg, nfsVers, nfsProcFsinfo, &nfsv3.Fsinfo3args{Fsroot: fh(root)}), nfsv3.ReadFsinfo3res)
	ok, isOK := res.(*nfsv3.Fsinfo3res_NFS3_OK)
	require.True(c.t, isOK, "FSINFO status %v", res.GetStatus())
	return &ok.Resok
}

// lookup returns the handle of name in dir, or the error status.
func (c nfsClient) lookup(dir []byte, name string) ([]byte, nfsv3.Nfsstat3) {
	c.t.Helper()
	args := &nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: fh(dir), Name: name}}
	res := decode(c.t, c.rpc.call(c.t, nfsProg, nfsVers, nfsProcLookup, args), nfsv3.ReadLookup3res)
	if ok, isOK := res.(*nfsv3.Lookup3res_NFS3_OK); isOK {
		return ok.Resok.Object.Data, nfsv3.NFS3_OK
	}
	return nil, res.GetStatus()
}

// create creates name in dir (GUARDED: it must not exist) with the given
// mode and returns its handle.
func (c nfsClient) create(dir []byte, name string, mode uint32) []byte {
	c.t.Helper()
	args := &nfsv3.Create3args{
		Where: nfsv3.Diropargs3{Dir: fh(dir), Name: name},
		How: &nfsv3.Createhow3_GUARDED{ObjAttributes: nfsv3.Sattr3{
			Mode:  &nfsv3.SetMode3_TRUE{Mode: mode},
			Uid:   &nfsv3.SetUid3_default{},
			Gid:   &nfsv3.SetGid3_default{},
			Size:  &nfsv3.SetSize3_default{},
			Atime: &nfsv3.SetAtime_default{SetIt: nfsv3.DONT_CHANGE},
			Mtime: &nfsv3.SetMtime_default{SetIt: nfsv3.DONT_CHANGE},
		}},
	}
	res := decode(c.t, c.rpc.call(c.t, nfsProg, nfsVers, nfsProcCreate, args), nfsv3.ReadCreate3res)
	ok, isOK := res.(*nfsv3.Create3res_NFS3_OK)
	require.True(c.t, isOK, "CREATE %q status %v", name, res.GetStatus())
	h, isH := ok.Resok.Obj.(*nfsv3.PostOpFh3_TRUE)
	require.True(c.t, isH, "CREATE %q returned no handle", name)
	return h.Handle.Data
}

// write writes data at off, FILE_SYNC, and requires all of it written.
func (c nfsClient) write(h []byte, off uint64, data []byte) nfsv3.Write3resok {
	c.t.Helper()
	args := &nfsv3.Write3args{File: fh(h), Offset: off, Count: uint32(len(data)), Stable: nfsv3.FILE_SYNC, Data: data}
	res := decode(c.t, c.rpc.call(c.t, nfsProg, nfsVers, nfsProcWrite, args), nfsv3.ReadWrite3res)
	ok, isOK := res.(*nfsv3.Write3res_NFS3_OK)
	require.True(c.t, isOK, "WRITE status %v", res.GetStatus())
	require.EqualValues(c.t, len(data), ok.Resok.Count, "WRITE count")
	require.Equal(c.t, nfsv3.FILE_SYNC, ok.Resok.Committed, "WRITE committed")
	return ok.Resok
}

// read reads up to count bytes at off.
func (c nfsClient) read(h []byte, off uint64, count uint32) (data []byte, eof bool) {
	c.t.Helper()
	args := &nfsv3.Read3args{File: fh(h), Offset: off, Count: count}
	res := decode(c.t, c.rpc.call(c.t, nfsProg, nfsVers, nfsProcRead, args), nfsv3.ReadRead3res)
	return readResult(c.t, res)
}

func readResult(t testing.TB, res nfsv3.Read3res) ([]byte, bool) {
	t.Helper()
	ok, isOK := res.(*nfsv3.Read3res_NFS3_OK)
	require.True(t, isOK, "READ status %v", res.GetStatus())
	require.EqualValues(t, len(ok.Resok.Data), ok.Resok.Count, "READ count vs data")
	return ok.Resok.Data, ok.Resok.Eof
}

func (c nfsClient) remove(dir []byte, name string) {
	c.t.Helper()
	args := &nfsv3.Remove3args{Object: nfsv3.Diropargs3{Dir: fh(dir), Name: name}}
	res := decode(c.t, c.rpc.call(c.t, nfsProg, nfsVers, nfsProcRemove, args), nfsv3.ReadRemove3res)
	require.Equal(c.t, nfsv3.NFS3_OK, res.GetStatus(), "REMOVE %q", name)
}

// symlink creates name in dir, a symbolic link to target, with no
// attributes set.
func (c nfsClient) symlink(dir []byte, name, target string) {
	c.t.Helper()
	args := &nfsv3.Symlink3args{
		Where: nfsv3.Diropargs3{Dir: fh(dir), Name: name},
		Symlink: nfsv3.Symlinkdata3{SymlinkAttributes: nfsv3.Sattr3{
			Mode:  &nfsv3.SetMode3_default{},
			Uid:   &nfsv3.SetUid3_default{},
			Gid:   &nfsv3.SetGid3_default{},
			Size:  &nfsv3.SetSize3_default{},
			Atime: &nfsv3.SetAtime_default{SetIt: nfsv3.DONT_CHANGE},
			Mtime: &nfsv3.SetMtime_default{SetIt: nfsv3.DONT_CHANGE},
		}, SymlinkData: target},
	}
	res := decode(c.t, c.rpc.call(c.t, nfsProg, nfsVers, nfsProcSymlink, args), nfsv3.ReadSymlink3res)
	require.Equal(c.t, nfsv3.NFS3_OK, res.GetStatus(), "SYMLINK %q", name)
}

// readlink returns the target of the symbolic link h.
func (c nfsClient) readlink(h []byte) string {
	c.t.Helper()
	res := decode(c.t, c.rpc.call(c.t, nfsProg, nfsVers, nfsProcReadlink, &nfsv3.Readlink3args{Symlink: fh(h)}), nfsv3.ReadReadlink3res)
	ok, isOK := res.(*nfsv3.Readlink3res_NFS3_OK)
	require.True(c.t, isOK, "READLINK status %v", res.GetStatus())
	return ok.Resok.Data
}
