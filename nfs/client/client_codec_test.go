package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// codecServer is a Caller that answers with the nfs3 codec: serve gets each
// call's procedure and arguments and returns its results.
type codecServer struct {
	t     *testing.T
	serve func(proc uint32, args *xdr.Reader) []byte
}

func (s *codecServer) Call(_ context.Context, msg, reply []byte) ([]byte, error) {
	var h xdr.CallHeader
	off, err := h.Unmarshal(msg)
	if err != nil {
		return reply[:0], err
	}
	r := xdr.NewReader(msg[off:])
	res := s.serve(h.Proc, &r)
	if r.Len() != 0 {
		s.t.Errorf("%d bytes left after the arguments of proc %d", r.Len(), h.Proc)
	}
	rh := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
	return append(rh.Append(reply[:0]), res...), nil
}

// decodeArgs decodes the arguments into x with the codec.
func decodeArgs(t *testing.T, r *xdr.Reader, x interface{ Decode(*xdr.Reader) error }) {
	t.Helper()
	require.NoError(t, x.Decode(r))
}

// Attributes with every field distinct, as the codec and the client hold
// them.
var (
	codecFattr = nfs3.Fattr{
		Type: nfs3.TypeChr, Mode: 0o4751, Nlink: 3, UID: 1001, GID: 1002,
		Size: 1<<40 + 1, Used: 1<<40 + 2, Rdev: nfs3.SpecData{Major: 7, Minor: 9},
		FSID: 0xabc, FileID: 0xdef,
		Atime: nfs3.Time{Sec: 1000, Nsec: 1}, Mtime: nfs3.Time{Sec: 2000, Nsec: 2}, Ctime: nfs3.Time{Sec: 3000, Nsec: 3},
	}
	clientAttr = client.Attr{
		Type: client.TypeChr, Mode: 0o4751, Nlink: 3, UID: 1001, GID: 1002,
		Size: 1<<40 + 1, Used: 1<<40 + 2, RdevMajor: 7, RdevMinor: 9,
		FSID: 0xabc, FileID: 0xdef,
		Atime: time.Unix(1000, 1), Mtime: time.Unix(2000, 2), Ctime: time.Unix(3000, 3),
	}
	codecPostOp = nfs3.PostOpAttr{Set: true, Attr: codecFattr}
	codecWcc    = nfs3.WccData{
		Before: nfs3.PreOpAttr{Set: true, Attr: nfs3.WccAttr{Size: 77, Mtime: nfs3.Time{Sec: 4000, Nsec: 4}, Ctime: nfs3.Time{Sec: 5000, Nsec: 5}}},
		After:  codecPostOp,
	}
)

// TestClientCodec: every procedure of the client encodes arguments that the
// nfs3 codec decodes to what was asked, and returns every field of results
// the codec encoded; an NFS status is an *Error with the message it always
// had, even when the failure arm is cut short; a malformed result is
// ErrBadReply.
func TestClientCodec(t *testing.T) {
	ctx := callCtx(t)
	fh := client.FH("file-handle-0123")
	dir := client.FH("dir-handle-4567")
	newFH := []byte("new-handle-89ab")
	srv := &codecServer{t: t}
	c, err := client.NewCaller(srv, &client.Config{Auth: &client.Auth{None: true}})
	require.NoError(t, err)

	mode, uid, gid, size := uint32(0o640), uint32(11), uint32(12), uint64(13)
	atime, mtime, guard := time.Unix(100, 5), time.Unix(200, 6), time.Unix(300, 7)

	t.Run("GETATTR", func(t *testing.T) {
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			var a nfs3.GetattrArgs
			decodeArgs(t, r, &a)
			require.EqualValues(t, nfs.ProcGetattr, proc)
			require.Equal(t, []byte(fh), a.Object)
			return (&nfs3.GetattrRes{Attr: codecFattr}).Append(nil)
		}
		a, err := c.Getattr(ctx, fh)
		require.NoError(t, err)
		require.Equal(t, clientAttr, *a)
	})

	t.Run("SETATTR", func(t *testing.T) {
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			var a nfs3.SetattrArgs
			decodeArgs(t, r, &a)
			require.EqualValues(t, nfs.ProcSetattr, proc)
			require.Equal(t, []byte(fh), a.Object)
			require.Equal(t, nfs3.Sattr{
				SetMode: true, Mode: mode, SetUID: true, UID: uid, SetGID: true, GID: gid, SetSize: true, Size: size,
				Atime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: nfs3.TimeOf(atime)},
				Mtime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: nfs3.TimeOf(mtime)},
			}, a.NewAttr)
			require.True(t, a.Check)
			require.Equal(t, nfs3.TimeOf(guard), a.CtimeGuard)
			return (&nfs3.SetattrRes{Wcc: codecWcc}).Append(nil)
		}
		w, err := c.Setattr(ctx, fh, &client.SetAttr{Mode: &mode, UID: &uid, GID: &gid, Size: &size, Atime: &atime, Mtime: &mtime, AtimeNow: true}, &guard)
		require.NoError(t, err)
		require.Equal(t, client.Attr{Size: 77, Mtime: time.Unix(4000, 4), Ctime: time.Unix(5000, 5)}, *w.Before)
		require.Equal(t, clientAttr, *w.After)

		// Nothing set, server times, no guard; a wcc_data with nothing.
		srv.serve = func(_ uint32, r *xdr.Reader) []byte {
			var a nfs3.SetattrArgs
			decodeArgs(t, r, &a)
			require.Equal(t, nfs3.Sattr{Atime: nfs3.SetTime{How: nfs3.SetToServerTime}, Mtime: nfs3.SetTime{How: nfs3.SetToServerTime}}, a.NewAttr)
			require.False(t, a.Check)
			return (&nfs3.SetattrRes{}).Append(nil)
		}
		w, err = c.Setattr(ctx, fh, &client.SetAttr{AtimeNow: true, MtimeNow: true}, nil)
		require.NoError(t, err)
		require.Equal(t, client.WccAttr{}, w)
	})

	t.Run("LOOKUP", func(t *testing.T) {
		var res []byte
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			var a nfs3.LookupArgs
			decodeArgs(t, r, &a)
			require.EqualValues(t, nfs.ProcLookup, proc)
			require.Equal(t, nfs3.DirOpArgs{Dir: dir, Name: "name"}, a.What)
			return res
		}
		res = (&nfs3.LookupRes{Object: newFH, ObjAttr: codecPostOp}).Append(nil)
		got, a, err := c.Lookup(ctx, dir, "name")
		require.NoError(t, err)
		require.Equal(t, client.FH(newFH), got)
		require.Equal(t, clientAttr, *a)
		copy(res, make([]byte, len(res)))
		require.Equal(t, client.FH(newFH), got, "the handle aliases the reply")

		res = (&nfs3.LookupRes{Object: newFH}).Append(nil)
		_, a, err = c.Lookup(ctx, dir, "name")
		require.NoError(t, err)
		require.Nil(t, a)
	})

	t.Run("ACCESS", func(t *testing.T) {
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			var a nfs3.AccessArgs
			decodeArgs(t, r, &a)
			require.EqualValues(t, nfs.ProcAccess, proc)
			require.Equal(t, nfs3.AccessArgs{Object: fh, Access: client.AccessRead | client.AccessExecute}, a)
			return (&nfs3.AccessRes{ObjAttr: codecPostOp, Access: client.AccessRead}).Append(nil)
		}
		granted, err := c.Access(ctx, fh, client.AccessRead|client.AccessExecute)
		require.NoError(t, err)
		require.EqualValues(t, client.AccessRead, granted)
	})

	t.Run("READLINK", func(t *testing.T) {
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			var a nfs3.ReadlinkArgs
			decodeArgs(t, r, &a)
			require.EqualValues(t, nfs.ProcReadlink, proc)
			require.Equal(t, []byte(fh), a.Symlink)
			return (&nfs3.ReadlinkRes{SymlinkAttr: codecPostOp, Path: "../some/target"}).Append(nil)
		}
		p, err := c.Readlink(ctx, fh)
		require.NoError(t, err)
		require.Equal(t, "../some/target", p)
	})

	t.Run("CREATE", func(t *testing.T) {
		var want nfs3.CreateArgs
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			var a nfs3.CreateArgs
			decodeArgs(t, r, &a)
			require.EqualValues(t, nfs.ProcCreate, proc)
			require.Equal(t, want, a)
			return (&nfs3.CreateRes{Obj: nfs3.PostOpFH{Set: true, FH: newFH}, ObjAttr: codecPostOp, DirWcc: codecWcc}).Append(nil)
		}
		where := nfs3.DirOpArgs{Dir: dir, Name: "f"}
		want = nfs3.CreateArgs{Where: where, Mode: nfs3.Guarded, Attr: nfs3.Sattr{SetMode: true, Mode: mode}}
		got, a, err := c.Create(ctx, dir, "f", client.CreateHow{Mode: client.Guarded, Attr: &client.SetAttr{Mode: &mode}})
		require.NoError(t, err)
		require.Equal(t, client.FH(newFH), got)
		require.Equal(t, clientAttr, *a)
		want = nfs3.CreateArgs{Where: where, Mode: nfs3.Exclusive, Verf: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}}
		_, _, err = c.Create(ctx, dir, "f", client.CreateHow{Mode: client.Exclusive, Attr: &client.SetAttr{Mode: &mode}, Verf: want.Verf})
		require.NoError(t, err)
		want = nfs3.CreateArgs{Where: where, Mode: nfs3.Unchecked}
		_, _, err = c.Create(ctx, dir, "f", client.CreateHow{})
		require.NoError(t, err)
	})

	t.Run("CREATE without a handle", func(t *testing.T) {
		var procs []uint32
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			procs = append(procs, proc)
			if proc == nfs.ProcLookup {
				var a nfs3.LookupArgs
				decodeArgs(t, r, &a)
				require.Equal(t, nfs3.DirOpArgs{Dir: dir, Name: "f"}, a.What)
				return (&nfs3.LookupRes{Object: newFH, ObjAttr: codecPostOp}).Append(nil)
			}
			var a nfs3.MkdirArgs
			decodeArgs(t, r, &a)
			return (&nfs3.CreateRes{DirWcc: codecWcc}).Append(nil)
		}
		got, a, err := c.Mkdir(ctx, dir, "f", nil)
		require.NoError(t, err)
		require.Equal(t, client.FH(newFH), got)
		require.Equal(t, clientAttr, *a)
		require.Equal(t, []uint32{nfs.ProcMkdir, nfs.ProcLookup}, procs)
	})

	t.Run("MKDIR and SYMLINK", func(t *testing.T) {
		res := (&nfs3.CreateRes{Obj: nfs3.PostOpFH{Set: true, FH: newFH}}).Append(nil)
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			var a nfs3.MkdirArgs
			decodeArgs(t, r, &a)
			require.EqualValues(t, nfs.ProcMkdir, proc)
			require.Equal(t, nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: "d"}, Attr: nfs3.Sattr{SetMode: true, Mode: mode}}, a)
			return res
		}
		got, a, err := c.Mkdir(ctx, dir, "d", &client.SetAttr{Mode: &mode})
		require.NoError(t, err)
		require.Equal(t, client.FH(newFH), got)
		require.Nil(t, a)

		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			var a nfs3.SymlinkArgs
			decodeArgs(t, r, &a)
			require.EqualValues(t, nfs.ProcSymlink, proc)
			require.Equal(t, nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: "l"}, Attr: nfs3.Sattr{SetUID: true, UID: uid}, Path: "to/there"}, a)
			return res
		}
		got, _, err = c.Symlink(ctx, dir, "l", "to/there", &client.SetAttr{UID: &uid})
		require.NoError(t, err)
		require.Equal(t, client.FH(newFH), got)
	})

	t.Run("REMOVE RMDIR RENAME LINK", func(t *testing.T) {
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			switch proc {
			case nfs.ProcRemove, nfs.ProcRmdir:
				var a nfs3.RemoveArgs
				decodeArgs(t, r, &a)
				require.Equal(t, nfs3.DirOpArgs{Dir: dir, Name: "x"}, a.Object)
				return (&nfs3.RemoveRes{DirWcc: codecWcc}).Append(nil)
			case nfs.ProcRename:
				var a nfs3.RenameArgs
				decodeArgs(t, r, &a)
				require.Equal(t, nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: dir, Name: "a"}, To: nfs3.DirOpArgs{Dir: fh, Name: "b"}}, a)
				return (&nfs3.RenameRes{FromDirWcc: codecWcc, ToDirWcc: codecWcc}).Append(nil)
			case nfs.ProcLink:
				var a nfs3.LinkArgs
				decodeArgs(t, r, &a)
				require.Equal(t, nfs3.LinkArgs{File: fh, Link: nfs3.DirOpArgs{Dir: dir, Name: "h"}}, a)
				return (&nfs3.LinkRes{FileAttr: codecPostOp, LinkDirWcc: codecWcc}).Append(nil)
			}
			t.Fatalf("proc %d", proc)
			return nil
		}
		require.NoError(t, c.Remove(ctx, dir, "x"))
		require.NoError(t, c.Rmdir(ctx, dir, "x"))
		require.NoError(t, c.Rename(ctx, dir, "a", fh, "b"))
		require.NoError(t, c.Link(ctx, fh, dir, "h"))
	})

	t.Run("READDIR", func(t *testing.T) {
		verf := [8]byte{8, 7, 6, 5, 4, 3, 2, 1}
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			var a nfs3.ReaddirArgs
			decodeArgs(t, r, &a)
			require.EqualValues(t, nfs.ProcReaddir, proc)
			require.Equal(t, nfs3.ReaddirArgs{Dir: dir, Cookie: 42, Verf: verf, Count: 4096}, a)
			return (&nfs3.ReaddirRes{DirAttr: codecPostOp, Verf: [8]byte{9}, EOF: true, Entries: []nfs3.Entry{
				{FileID: 1, Name: "one", Cookie: 10}, {FileID: 2, Name: "two", Cookie: 20},
			}}).Append(nil)
		}
		p, err := c.Readdir(ctx, dir, 42, verf, 4096)
		require.NoError(t, err)
		require.Equal(t, &client.DirPage{Verf: [8]byte{9}, EOF: true, Entries: []client.DirEntry{
			{FileID: 1, Name: "one", Cookie: 10}, {FileID: 2, Name: "two", Cookie: 20},
		}}, p)
	})

	t.Run("READDIRPLUS", func(t *testing.T) {
		verf := [8]byte{1, 1, 2, 3, 5, 8, 13, 21}
		fh2 := []byte("second-handle")
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			var a nfs3.ReaddirplusArgs
			decodeArgs(t, r, &a)
			require.EqualValues(t, nfs.ProcReaddirplus, proc)
			require.Equal(t, nfs3.ReaddirplusArgs{Dir: dir, Cookie: 7, Verf: verf, DirCount: 1000, MaxCount: 8000}, a)
			return (&nfs3.ReaddirplusRes{DirAttr: codecPostOp, Verf: [8]byte{3}, Entries: []nfs3.EntryPlus{
				{FileID: 1, Name: "a", Cookie: 10, Attr: codecPostOp, FH: nfs3.PostOpFH{Set: true, FH: newFH}},
				{FileID: 2, Name: "b", Cookie: 20},
				{FileID: 3, Name: "c", Cookie: 30, FH: nfs3.PostOpFH{Set: true, FH: fh2}},
				{FileID: 4, Name: "d", Cookie: 40, Attr: codecPostOp, FH: nfs3.PostOpFH{Set: true}},
			}}).Append(nil)
		}
		p, err := c.Readdirplus(ctx, dir, 7, verf, 1000, 8000)
		require.NoError(t, err)
		attr := clientAttr
		require.Equal(t, &client.DirPage{Verf: [8]byte{3}, Entries: []client.DirEntry{
			{FileID: 1, Name: "a", Cookie: 10, Attr: &attr, FH: newFH},
			{FileID: 2, Name: "b", Cookie: 20},
			{FileID: 3, Name: "c", Cookie: 30, FH: fh2},
			{FileID: 4, Name: "d", Cookie: 40, Attr: &attr},
		}}, p)
		// The handles and attributes are the entries' own.
		p.Entries[0].FH = append(p.Entries[0].FH, 'x')
		require.Equal(t, client.FH(fh2), p.Entries[2].FH)
		p.Entries[0].Attr.Size = 1
		require.Equal(t, clientAttr, *p.Entries[3].Attr)
	})

	t.Run("FSSTAT FSINFO PATHCONF", func(t *testing.T) {
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			switch proc {
			case nfs.ProcFsstat:
				var a nfs3.FsstatArgs
				decodeArgs(t, r, &a)
				require.Equal(t, []byte(fh), a.FSRoot)
				return (&nfs3.FsstatRes{ObjAttr: codecPostOp, Tbytes: 1, Fbytes: 2, Abytes: 3, Tfiles: 4, Ffiles: 5, Afiles: 6, Invarsec: 7}).Append(nil)
			case nfs.ProcFsinfo:
				var a nfs3.FsinfoArgs
				decodeArgs(t, r, &a)
				require.Equal(t, []byte(fh), a.FSRoot)
				return (&nfs3.FsinfoRes{ObjAttr: codecPostOp, Rtmax: 1, Rtpref: 2, Rtmult: 3, Wtmax: 4, Wtpref: 5, Wtmult: 6, Dtpref: 7,
					MaxFileSize: 8, TimeDelta: nfs3.Time{Sec: 9, Nsec: 10}, Properties: client.FSFLink | client.FSFCanSetTime}).Append(nil)
			case nfs.ProcPathconf:
				var a nfs3.PathconfArgs
				decodeArgs(t, r, &a)
				require.Equal(t, []byte(fh), a.Object)
				return (&nfs3.PathconfRes{ObjAttr: codecPostOp, Linkmax: 1, NameMax: 2, NoTrunc: true, CaseInsensitive: true}).Append(nil)
			}
			t.Fatalf("proc %d", proc)
			return nil
		}
		st, err := c.Fsstat(ctx, fh)
		require.NoError(t, err)
		require.Equal(t, client.FSStat{TotalBytes: 1, FreeBytes: 2, AvailBytes: 3, TotalFiles: 4, FreeFiles: 5, AvailFiles: 6, Invarsec: 7}, *st)
		fi, err := c.Fsinfo(ctx, fh)
		require.NoError(t, err)
		require.Equal(t, client.FSInfo{RTMax: 1, RTPref: 2, RTMult: 3, WTMax: 4, WTPref: 5, WTMult: 6, DTPref: 7,
			MaxFileSize: 8, TimeDelta: 9*time.Second + 10, Properties: client.FSFLink | client.FSFCanSetTime}, *fi)
		pc, err := c.Pathconf(ctx, fh)
		require.NoError(t, err)
		require.Equal(t, client.PathConf{LinkMax: 1, NameMax: 2, NoTrunc: true, CaseInsensitive: true}, *pc)
	})

	t.Run("READ WRITE COMMIT", func(t *testing.T) {
		data := []byte("hello, codec")
		srv.serve = func(proc uint32, r *xdr.Reader) []byte {
			switch proc {
			case nfs.ProcRead:
				var a nfs3.ReadArgs
				decodeArgs(t, r, &a)
				require.Equal(t, nfs3.ReadArgs{File: fh, Offset: 1 << 33, Count: 100}, a)
				return (&nfs3.ReadRes{FileAttr: codecPostOp, Count: uint32(len(data)), EOF: true, Data: data}).Append(nil)
			case nfs.ProcWrite:
				var a nfs3.WriteArgs
				decodeArgs(t, r, &a)
				require.Equal(t, nfs3.WriteArgs{File: fh, Offset: 1 << 34, Count: uint32(len(data)), Stable: nfs3.DataSync, Data: data}, a)
				return (&nfs3.WriteRes{Wcc: codecWcc, Count: 5, Committed: nfs3.FileSync, Verf: [8]byte{4, 3, 2, 1}}).Append(nil)
			case nfs.ProcCommit:
				var a nfs3.CommitArgs
				decodeArgs(t, r, &a)
				require.Equal(t, nfs3.CommitArgs{File: fh, Offset: 1 << 35, Count: 99}, a)
				return (&nfs3.CommitRes{Wcc: codecWcc, Verf: [8]byte{5, 6, 7, 8}}).Append(nil)
			}
			t.Fatalf("proc %d", proc)
			return nil
		}
		p := make([]byte, 100)
		n, eof, err := c.Read(ctx, fh, 1<<33, p)
		require.NoError(t, err)
		require.True(t, eof)
		require.Equal(t, data, p[:n])
		wr, err := c.Write(ctx, fh, 1<<34, data, client.DataSync)
		require.NoError(t, err)
		require.Equal(t, client.WriteResult{Count: 5, Committed: client.FileSync, Verf: client.WriteVerf{4, 3, 2, 1}}, wr)
		v, err := c.Commit(ctx, fh, 1<<35, 99)
		require.NoError(t, err)
		require.Equal(t, client.WriteVerf{5, 6, 7, 8}, v)
	})

	t.Run("errors", func(t *testing.T) {
		// A failure status alone, its arm missing: still the status.
		reply := func(res []byte) func(uint32, *xdr.Reader) []byte {
			return func(_ uint32, r *xdr.Reader) []byte {
				_ = r.Skip(r.Len())
				return res
			}
		}
		srv.serve = reply(xdr.AppendUint32(nil, uint32(nfs3.ErrNoEnt)))
		_, _, err := c.Lookup(ctx, dir, "name")
		var ne *client.Error
		require.ErrorAs(t, err, &ne)
		require.Equal(t, "nfs: NFS3 LOOKUP: no such file or directory (NFS3ERR_NOENT)", err.Error())
		_, _, err = c.Read(ctx, fh, 0, make([]byte, 10))
		require.EqualError(t, err, "nfs: NFS3 READ: no such file or directory (NFS3ERR_NOENT)")
		_, err = c.Write(ctx, fh, 0, make([]byte, 10), client.Unstable)
		require.EqualError(t, err, "nfs: NFS3 WRITE: no such file or directory (NFS3ERR_NOENT)")
		_, err = c.Commit(ctx, fh, 0, 0)
		require.EqualError(t, err, "nfs: NFS3 COMMIT: no such file or directory (NFS3ERR_NOENT)")
		srv.serve = reply(xdr.AppendUint32(nil, 12345))
		err = c.Remove(ctx, dir, "x")
		require.EqualError(t, err, "nfs: NFS3 REMOVE: unknown status (nfsstat3(12345))")

		// Malformed results: an ftype3 out of range, a result cut short,
		// a name over NFS3_MAXNAMLEN, a WRITE count over the data sent.
		bad := codecFattr
		bad.Type = 0
		for _, res := range [][]byte{
			(&nfs3.GetattrRes{Attr: bad}).Append(nil),
			(&nfs3.GetattrRes{Attr: codecFattr}).Append(nil)[:40],
		} {
			srv.serve = reply(res)
			_, err = c.Getattr(ctx, fh)
			require.ErrorIs(t, err, client.ErrBadReply)
		}
		long := strings.Repeat("n", nfs3.NameMax+1)
		srv.serve = reply((&nfs3.ReaddirRes{Entries: []nfs3.Entry{{Name: long}}}).Append(nil))
		_, err = c.Readdir(ctx, dir, 0, [8]byte{}, 4096)
		require.ErrorIs(t, err, client.ErrBadReply)
		require.ErrorIs(t, err, xdr.ErrTooLong)
		srv.serve = reply((&nfs3.WriteRes{Count: 11}).Append(nil))
		_, err = c.Write(ctx, fh, 0, make([]byte, 10), client.Unstable)
		require.ErrorIs(t, err, client.ErrBadReply)
		srv.serve = reply((&nfs3.ReadRes{Count: 11, Data: make([]byte, 11)}).Append(nil))
		_, _, err = c.Read(ctx, fh, 0, make([]byte, 10))
		require.ErrorIs(t, err, client.ErrBadReply)
		srv.serve = reply((&nfs3.ReadRes{Count: 9, Data: make([]byte, 10)}).Append(nil))
		_, _, err = c.Read(ctx, fh, 0, make([]byte, 10))
		require.ErrorIs(t, err, client.ErrBadReply)
		require.False(t, errors.As(err, &ne))
	})
}

// TestMountClientCodec: MNT, UMNT and EXPORT encode their arguments and
// decode their results with the codec; a refusal is an *Error with the
// message it always had; more auth flavors than nfs3.MaxAuthFlavors is
// ErrBadReply.
func TestMountClientCodec(t *testing.T) {
	ctx := callCtx(t)
	srv := &codecServer{t: t}
	m, err := client.NewMountClientCaller(srv, &client.Auth{None: true})
	require.NoError(t, err)

	var mnt nfs3.MntRes
	srv.serve = func(proc uint32, r *xdr.Reader) []byte {
		switch proc {
		case nfs.MountProcMnt:
			var a nfs3.MntArgs
			decodeArgs(t, r, &a)
			require.Equal(t, "/export/path", a.Path)
			return mnt.Append(nil)
		case nfs.MountProcUmnt:
			var a nfs3.UmntArgs
			decodeArgs(t, r, &a)
			require.Equal(t, "/export/path", a.Path)
			return nil
		case nfs.MountProcExport:
			return (&nfs3.ExportRes{Exports: []nfs3.ExportNode{
				{Dir: "/a", Groups: []string{"host1", "@net"}}, {Dir: "/b"},
			}}).Append(nil)
		}
		t.Fatalf("proc %d", proc)
		return nil
	}
	mnt = nfs3.MntRes{FH: []byte("root"), AuthFlavors: []uint32{uint32(xdr.FlavorSys), uint32(xdr.FlavorNone)}}
	root, flavors, err := m.Mnt(ctx, "/export/path")
	require.NoError(t, err)
	require.Equal(t, client.FH("root"), root)
	require.Equal(t, []xdr.AuthFlavor{xdr.FlavorSys, xdr.FlavorNone}, flavors)
	mnt = nfs3.MntRes{FH: []byte("root")}
	_, flavors, err = m.Mnt(ctx, "/export/path")
	require.NoError(t, err)
	require.NotNil(t, flavors)
	require.Empty(t, flavors)
	require.NoError(t, m.Umnt(ctx, "/export/path"))
	ex, err := m.Export(ctx)
	require.NoError(t, err)
	require.Equal(t, []client.ExportEntry{{Dir: "/a", Groups: []string{"host1", "@net"}}, {Dir: "/b"}}, ex)

	mnt = nfs3.MntRes{Status: nfs3.MntErrAcces}
	_, _, err = m.Mnt(ctx, "/export/path")
	var ne *client.Error
	require.ErrorAs(t, err, &ne)
	require.Equal(t, "nfs: MOUNT3 MNT /export/path: permission denied (MNT3ERR_ACCES)", err.Error())
	mnt = nfs3.MntRes{FH: []byte("root"), AuthFlavors: make([]uint32, nfs3.MaxAuthFlavors+1)}
	_, _, err = m.Mnt(ctx, "/export/path")
	require.ErrorIs(t, err, client.ErrBadReply)
}
