package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// pastJiffy waits past the kernel's timestamp granularity (a jiffy), so that
// what a call changes gets a time distinct from what came before.
func pastJiffy() { time.Sleep(20 * time.Millisecond) }

// timeAfter reports whether a is later than b.
func timeAfter(a, b nfs3.Time) bool {
	return a.Sec > b.Sec || (a.Sec == b.Sec && a.Nsec > b.Nsec)
}

// nfsTimeOf is a local timestamp as an nfstime3.
func nfsTimeOf(ts unix.Timespec) nfs3.Time {
	return nfs3.Time{Sec: uint32(ts.Sec), Nsec: uint32(ts.Nsec)}
}

// What a call changes of a wcc_data's object.
type wccChange int

const (
	changesNothing wccChange = iota // a failure
	changesCtime                    // a SETATTR of the mode, owner or group
	changesBoth                     // a directory's entries, a file's data
)

// requireWcc checks a wcc_data (RFC 1813 §2.6): both sides present, the
// before side the size and times of name before the call (st), the after
// side its attributes now; ch says which of its times must have advanced
// (the others are unchanged).
func (e *nfsRig) requireWcc(w nfs3.WccData, name string, st unix.Stat_t, ch wccChange, what string) {
	e.t.Helper()
	require.True(e.t, w.Before.Set, "%s: wcc before", what)
	require.True(e.t, w.After.Set, "%s: wcc after", what)
	require.Equal(e.t, nfs3.WccAttr{Size: uint64(st.Size), Mtime: nfsTimeOf(st.Mtim), Ctime: nfsTimeOf(st.Ctim)},
		w.Before.Attr, "%s: wcc before is %s before the call", what, name)
	now := e.stat(name)
	require.Equal(e.t, now.Ino, w.After.Attr.FileID, "%s: wcc after is %s's", what, name)
	require.Equal(e.t, nfsTimeOf(now.Mtim), w.After.Attr.Mtime, "%s: wcc after is %s now", what, name)
	require.Equal(e.t, nfsTimeOf(now.Ctim), w.After.Attr.Ctime, "%s: wcc after is %s now", what, name)
	require.Equal(e.t, now.Mode&0o7777, w.After.Attr.Mode, "%s: wcc after is %s now", what, name)
	require.Equal(e.t, uint64(now.Size), w.After.Attr.Size, "%s: wcc after is %s now", what, name)
	if ch == changesNothing {
		require.Equal(e.t, w.Before.Attr.Mtime, w.After.Attr.Mtime, "%s: %s's mtime unchanged", what, name)
		require.Equal(e.t, w.Before.Attr.Ctime, w.After.Attr.Ctime, "%s: %s's ctime unchanged", what, name)
		return
	}
	require.True(e.t, timeAfter(w.After.Attr.Ctime, w.Before.Attr.Ctime), "%s: %s's ctime advanced", what, name)
	if ch == changesBoth {
		require.True(e.t, timeAfter(w.After.Attr.Mtime, w.Before.Attr.Mtime), "%s: %s's mtime advanced", what, name)
	} else {
		require.Equal(e.t, w.Before.Attr.Mtime, w.After.Attr.Mtime, "%s: %s's mtime unchanged", what, name)
	}
}

// TestSemanticsSetattr: SETATTR (RFC 1813 §3.3.2) follows the kernel's
// rules for its caller, as knfsd's nfsd_setattr: only the owner changes
// the mode (NFS3ERR_PERM), only root the owner, the owner the group to
// one of its groups; explicit times only by the owner, the server's time
// by anyone who may write; a size needs write permission, except for the
// owner (knfsd's owner override); a guard with another ctime is
// NFS3ERR_NOT_SYNC. Every reply carries the file's wcc_data.
func TestSemanticsSetattr(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	e.mkdirAs("w", 0o777, 0, 0)
	e.fileAs("w/f", "12345", 0o644, 1234, 1234)
	e.fileAs("w/shared", "12345", 0o666, 1234, 1234)
	e.fileAs("w/ro", "12345", 0o444, 1234, 1234)
	f, shared, ro := e.fh("w/f"), e.fh("w/shared"), e.fh("w/ro")
	set := func(who xdr.OpaqueAuth, fh []byte, name string, a nfs3.Sattr, want nfs3.Status, what string) nfs3.SetattrRes {
		t.Helper()
		before := e.stat(name)
		pastJiffy()
		res := e.setattr(who, fh, a)
		require.Equal(t, want, res.Status, what)
		ch := changesNothing
		switch {
		case want != nfs3.OK:
		case a.SetSize || a.Mtime.How == nfs3.SetToServerTime:
			ch = changesBoth
		default:
			ch = changesCtime
		}
		e.requireWcc(res.Wcc, name, before, ch, what)
		return res
	}
	clientTime := func(sec, nsec uint32) nfs3.SetTime {
		return nfs3.SetTime{How: nfs3.SetToClientTime, Time: nfs3.Time{Sec: sec, Nsec: nsec}}
	}

	set(credOther, f, "w/f", modeSattr(0o666), nfs3.ErrPerm, "chmod by another user")
	require.Equal(t, uint32(0o644), e.stat("w/f").Mode&0o7777)
	set(credUser, f, "w/f", modeSattr(0o640), nfs3.OK, "chmod by the owner")
	require.Equal(t, uint32(0o640), e.stat("w/f").Mode&0o7777)

	set(credUser, f, "w/f", nfs3.Sattr{SetUID: true, UID: 1235}, nfs3.ErrPerm, "chown by the owner")
	set(credUser, f, "w/f", nfs3.Sattr{SetGID: true, GID: 2000}, nfs3.ErrPerm, "chgrp to a group the owner is not in")
	e.requireOwner("w/f", 1234, 1234)
	set(credUser, f, "w/f", nfs3.Sattr{SetGID: true, GID: 1000}, nfs3.OK, "chgrp to the owner's group 1000")
	e.requireOwner("w/f", 1234, 1000)
	set(credUser, f, "w/f", nfs3.Sattr{SetUID: true, UID: 1234}, nfs3.OK, "chown to oneself")
	set(credOther, f, "w/f", nfs3.Sattr{SetGID: true, GID: 1235}, nfs3.ErrPerm, "chgrp by another user")
	set(credRoot, f, "w/f", nfs3.Sattr{SetUID: true, UID: 1235, SetGID: true, GID: 1235}, nfs3.OK, "chown by root")
	e.requireOwner("w/f", 1235, 1235)

	// Times: explicit ones only by the owner (utimensat's EPERM); the
	// server's time by anyone who may write.
	set(credOther, shared, "w/shared", nfs3.Sattr{Mtime: clientTime(1e9, 0)}, nfs3.ErrPerm, "explicit mtime by a writer not the owner")
	set(credOther, shared, "w/shared", nfs3.Sattr{Atime: clientTime(1e9, 0)}, nfs3.ErrPerm, "explicit atime by a writer not the owner")
	// The server's time for one time, the other unchanged, as knfsd's
	// nfsd_setattr (write permission, no ATTR_TIMES_SET), which
	// utimensat would refuse to anyone but the owner.
	atime := e.stat("w/shared").Atim
	res := set(credOther, shared, "w/shared", nfs3.Sattr{Mtime: nfs3.SetTime{How: nfs3.SetToServerTime}},
		nfs3.OK, "server's mtime by a writer not the owner")
	require.Less(t, time.Since(res.Wcc.After.Attr.Mtime.Time()), time.Minute, "the server's time")
	require.Equal(t, nfsTimeOf(atime), nfsTimeOf(e.stat("w/shared").Atim), "atime left as it was")
	mtime := e.stat("w/shared").Mtim
	set(credOther, shared, "w/shared", nfs3.Sattr{Atime: nfs3.SetTime{How: nfs3.SetToServerTime}},
		nfs3.OK, "server's atime by a writer not the owner")
	require.Equal(t, nfsTimeOf(mtime), nfsTimeOf(e.stat("w/shared").Mtim), "mtime left as it was")
	require.True(t, timeAfter(nfsTimeOf(e.stat("w/shared").Atim), nfsTimeOf(atime)), "atime is now")
	set(credOther, shared, "w/shared", nfs3.Sattr{Atime: nfs3.SetTime{How: nfs3.SetToServerTime},
		Mtime: nfs3.SetTime{How: nfs3.SetToServerTime}}, nfs3.OK, "both server's times by a writer not the owner")
	set(credOther, shared, "w/shared", nfs3.Sattr{Atime: nfs3.SetTime{How: nfs3.SetToServerTime},
		Mtime: clientTime(1e9, 0)}, nfs3.ErrPerm, "the server's atime and an explicit mtime by a writer not the owner")
	set(credOther, f, "w/f", nfs3.Sattr{Mtime: nfs3.SetTime{How: nfs3.SetToServerTime}}, nfs3.OK, "server's mtime by the owner")
	set(credUser, f, "w/f", nfs3.Sattr{Mtime: nfs3.SetTime{How: nfs3.SetToServerTime}}, nfs3.ErrAcces,
		"server's mtime by a user who may not write")

	// Size: write permission, or the owner.
	set(credUser, f, "w/f", nfs3.Sattr{SetSize: true}, nfs3.ErrAcces, "truncate by a user who may not write")
	require.EqualValues(t, 5, e.stat("w/f").Size)
	set(credOther, shared, "w/shared", nfs3.Sattr{SetSize: true, Size: 2}, nfs3.OK, "truncate by a writer")
	require.EqualValues(t, 2, e.stat("w/shared").Size)
	set(credUser, ro, "w/ro", nfs3.Sattr{SetSize: true, Size: 1}, nfs3.OK, "truncate of the owner's 0444 file")
	require.EqualValues(t, 1, e.stat("w/ro").Size)
	set(credOther, ro, "w/ro", nfs3.Sattr{SetSize: true}, nfs3.ErrAcces, "truncate of a 0444 file by another user")
	set(credUser, e.fh("w"), "w", nfs3.Sattr{SetSize: true}, nfs3.ErrIsDir, "size of a directory")

	// The guard (§3.3.2): the file's ctime, or NFS3ERR_NOT_SYNC.
	ctime := e.ctimeOf("w/shared")
	bad := &nfs3.SetattrArgs{Object: shared, NewAttr: modeSattr(0o600), Check: true, CtimeGuard: nfs3.Time{Sec: ctime.Sec - 1, Nsec: ctime.Nsec}}
	var gres nfs3.SetattrRes
	e.do(credUser, nfs.ProcSetattr, bad, &gres)
	require.Equal(t, nfs3.ErrNotSync, gres.Status, "guard with another ctime")
	require.True(t, gres.Wcc.Before.Set && gres.Wcc.After.Set, "NOT_SYNC carries wcc_data")
	require.Equal(t, uint32(0o666), e.stat("w/shared").Mode&0o7777, "nothing set")
	good := &nfs3.SetattrArgs{Object: shared, NewAttr: modeSattr(0o600), Check: true, CtimeGuard: ctime}
	e.do(credUser, nfs.ProcSetattr, good, &gres)
	require.Equal(t, nfs3.OK, gres.Status, "guard with the file's ctime")
	require.Equal(t, uint32(0o600), e.stat("w/shared").Mode&0o7777)
}

// ctimeOf is the local ctime of name.
func (e *nfsRig) ctimeOf(name string) nfs3.Time { return nfsTimeOf(e.stat(name).Ctim) }

// TestSemanticsKillPriv: a WRITE by anyone but root clears the file's
// setuid bit, and its setgid bit when the group may execute (the
// kernel's file_remove_privs for the writer, as with knfsd); root keeps
// them (CAP_FSETID).
func TestSemanticsKillPriv(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	for _, c := range []struct {
		who        xdr.OpaqueAuth
		mode, want uint32
	}{
		{credOther, 0o4666, 0o666},  // a writer not the owner
		{credUser, 0o4644, 0o644},   // the owner
		{credOther, 0o6676, 0o676},  // setgid with group execute
		{credOther, 0o2666, 0o2666}, // setgid without group execute stays
		{credRoot, 0o6777, 0o6777},  // root keeps both
		{credOther, 0o1666, 0o1666}, // the sticky bit is not a privilege
		{credOther, 0o4640, 0o4640}, // a failed write changes nothing
	} {
		name := fmt.Sprintf("f%o-%d", c.mode, credUID(c.who))
		e.fileAs(name, "data", c.mode, 1234, 1234)
		res := e.write(c.who, e.fh(name), 0, "D")
		if c.mode == 0o4640 {
			require.Equal(t, nfs3.ErrAcces, res.Status, name)
		} else {
			require.Equal(t, nfs3.OK, res.Status, name)
		}
		require.Equal(t, c.want, e.stat(name).Mode&0o7777, name)
		require.Equal(t, c.want, e.access(credRoot, e.fh(name), nfs3.AccessRead).ObjAttr.Attr.Mode, "ACCESS's attributes of %s after a WRITE", name)
	}
}

// TestSemanticsOwnerOverride: the owner's I/O passes whatever the mode
// says (knfsd's NFSD_MAY_OWNER_OVERRIDE: a client checked access when it
// opened or created the file): a file created 0444 is written and
// committed, a 0200 file read; another user is refused. A file only
// executable is read by anyone who may execute it (NFSD_MAY_READ_IF_EXEC).
func TestSemanticsOwnerOverride(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	e.mkdirAs("u", 0o755, 1234, 1234)
	u := e.fh("u")
	cr := e.create(credUser, u, "ro", 0o444)
	e.requireCreated(cr, "u/ro", nfs3.TypeReg, 1234, 1234)
	require.Equal(t, uint32(0o444), cr.ObjAttr.Attr.Mode&0o7777)
	fh := cr.Obj.FH
	w := e.write(credUser, fh, 0, "hello")
	require.Equal(t, nfs3.OK, w.Status, "WRITE by the owner of a 0444 file")
	require.EqualValues(t, 5, w.Count)
	c := e.commit(credUser, fh)
	require.Equal(t, nfs3.OK, c.Status, "COMMIT by the owner of a 0444 file")
	require.Equal(t, w.Verf, c.Verf)
	require.Equal(t, nfs3.ErrAcces, e.write(credOther, fh, 0, "x").Status, "WRITE by another user")
	require.Equal(t, nfs3.ErrAcces, e.commit(credOther, fh).Status, "COMMIT by another user")
	r := e.read(credOther, fh)
	require.Equal(t, nfs3.OK, r.Status)
	require.Equal(t, "hello", string(r.Data))

	e.fileAs("u/wo", "secret", 0o200, 1234, 1234)
	r = e.read(credUser, e.fh("u/wo"))
	require.Equal(t, nfs3.OK, r.Status, "READ by the owner of a 0200 file")
	require.Equal(t, "secret", string(r.Data))
	require.Equal(t, nfs3.ErrAcces, e.read(credOther, e.fh("u/wo")).Status)

	e.fileAs("u/x", "binary", 0o711, 1234, 1234)
	r = e.read(credOther, e.fh("u/x"))
	require.Equal(t, nfs3.OK, r.Status, "READ of a file the caller may execute")
	require.Equal(t, "binary", string(r.Data))
	e.fileAs("u/none", "nothing", 0o700, 1234, 1234)
	require.Equal(t, nfs3.ErrAcces, e.read(credOther, e.fh("u/none")).Status)
	require.Equal(t, nfs3.OK, e.read(credUser, e.fh("u/none")).Status)
}

// TestSemanticsSticky: in a sticky directory (1777) only a file's owner
// (or the directory's, or root) removes or renames it: unlink and
// rename's EPERM, NFS3ERR_PERM from knfsd.
func TestSemanticsSticky(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	e.mkdirAs("tmp", 0o1777, 0, 0)
	e.fileAs("tmp/mine", "1234's", 0o644, 1234, 1234)
	e.fileAs("tmp/mine2", "1234's", 0o644, 1234, 1234)
	tmp := e.fh("tmp")
	require.Equal(t, nfs3.ErrPerm, e.remove(credOther, tmp, "mine").Status, "REMOVE of another's file")
	require.Equal(t, nfs3.ErrPerm, e.rename(credOther, tmp, "mine", tmp, "taken").Status, "RENAME of another's file")
	e.fileAs("tmp/theirs", "1235's", 0o644, 1235, 1235)
	require.Equal(t, nfs3.ErrPerm, e.rename(credUser, tmp, "mine", tmp, "theirs").Status, "RENAME over another's file")
	require.True(t, e.exists("tmp/mine") && e.exists("tmp/theirs"))
	require.False(t, e.exists("tmp/taken"))
	require.Equal(t, nfs3.OK, e.rename(credUser, tmp, "mine", tmp, "renamed").Status, "RENAME by the owner")
	require.Equal(t, nfs3.OK, e.remove(credUser, tmp, "renamed").Status, "REMOVE by the owner")
	require.False(t, e.exists("tmp/renamed"))
	require.Equal(t, nfs3.OK, e.remove(credRoot, tmp, "mine2").Status, "REMOVE by root")
}

// TestSemanticsMknod: MKNOD (RFC 1813 §3.3.11) makes FIFOs and sockets
// for anyone who may create in the directory, devices for root only
// (mknod's EPERM: NFS3ERR_PERM), with the major and minor numbers asked
// for; a type that is not special is NFS3ERR_BADTYPE.
func TestSemanticsMknod(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{Squash: server.NoRootSquash})
	e.mkdirAs("pub", 0o777, 0, 0)
	pub := e.fh("pub")
	e.requireCreated(e.mknod(credUser, pub, "fifo", nfs3.TypeFIFO, nfs3.SpecData{}), "pub/fifo", nfs3.TypeFIFO, 1234, 1234)
	require.Equal(t, uint32(unix.S_IFIFO), e.stat("pub/fifo").Mode&unix.S_IFMT)
	e.requireCreated(e.mknod(credUser, pub, "sock", nfs3.TypeSock, nfs3.SpecData{}), "pub/sock", nfs3.TypeSock, 1234, 1234)
	require.Equal(t, uint32(unix.S_IFSOCK), e.stat("pub/sock").Mode&unix.S_IFMT)
	require.Equal(t, uint32(0o644), e.stat("pub/sock").Mode&0o7777)

	before := e.stat("pub")
	pastJiffy()
	res := e.mknod(credUser, pub, "chr", nfs3.TypeChr, nfs3.SpecData{Major: 1, Minor: 3})
	require.Equal(t, nfs3.ErrPerm, res.Status, "a character device by a user")
	e.requireWcc(res.DirWcc, "pub", before, changesNothing, "MKNOD refused")
	require.False(t, e.exists("pub/chr"))
	require.Equal(t, nfs3.ErrPerm, e.mknod(credUser, pub, "blk", nfs3.TypeBlk, nfs3.SpecData{Major: 7, Minor: 0}).Status)

	for _, c := range []struct {
		name  string
		typ   nfs3.FileType
		ifmt  uint32
		major uint32
		minor uint32
	}{
		{"chr", nfs3.TypeChr, unix.S_IFCHR, 1, 3},
		{"chr2", nfs3.TypeChr, unix.S_IFCHR, 300, 70000},
		{"blk", nfs3.TypeBlk, unix.S_IFBLK, 7, 5},
	} {
		res := e.mknod(credRoot, pub, c.name, c.typ, nfs3.SpecData{Major: c.major, Minor: c.minor})
		e.requireCreated(res, "pub/"+c.name, c.typ, 0, 0)
		require.Equal(t, nfs3.SpecData{Major: c.major, Minor: c.minor}, res.ObjAttr.Attr.Rdev, c.name)
		st := e.stat("pub/" + c.name)
		require.Equal(t, c.ifmt, st.Mode&unix.S_IFMT, c.name)
		require.Equal(t, [2]uint32{c.major, c.minor}, [2]uint32{unix.Major(st.Rdev), unix.Minor(st.Rdev)}, c.name)
	}

	for _, typ := range []nfs3.FileType{nfs3.TypeReg, nfs3.TypeDir, nfs3.TypeLnk} {
		before := e.stat("pub")
		res := e.mknod(credRoot, pub, "bad", typ, nfs3.SpecData{})
		require.Equal(t, nfs3.ErrBadType, res.Status, "MKNOD of type %d", typ)
		e.requireWcc(res.DirWcc, "pub", before, changesNothing, "MKNOD of a bad type")
		require.False(t, e.exists("pub/bad"))
	}
}

// TestSemanticsNames: names as knfsd's decoder takes them (fs/nfsd/
// nfs3xdr.c, svcxdr_decode_filename3): an empty name, one with "/" or a
// NUL, or longer than 255 bytes does not decode (GARBAGE_ARGS), in every
// procedure that takes a name; "." and ".." cannot be created
// (NFS3ERR_EXIST), removed (NFS3ERR_ACCES) or renamed (NFS3ERR_PERM), as
// from knfsd's nfsd_create, nfsd_unlink and nfsd_rename; a name of 255
// bytes works.
func TestSemanticsNames(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	e.mkdirAs("d", 0o755, 0, 0)
	e.mkdirAs("a", 0o755, 0, 0)
	e.fileAs("f", "data", 0o644, 0, 0)
	root, d, f := e.root, e.fh("d"), e.fh("f")
	where := func(name string) nfs3.DirOpArgs { return nfs3.DirOpArgs{Dir: root, Name: name} }
	for _, bad := range []string{"", "a/b", "/", "x\x00y", strings.Repeat("n", 256)} {
		for _, c := range []struct {
			proc uint32
			args rigArgs
		}{
			{nfs.ProcCreate, &nfs3.CreateArgs{Where: where(bad), Attr: modeSattr(0o644)}},
			{nfs.ProcMkdir, &nfs3.MkdirArgs{Where: where(bad), Attr: modeSattr(0o755)}},
			{nfs.ProcSymlink, &nfs3.SymlinkArgs{Where: where(bad), Path: "f"}},
			{nfs.ProcMknod, &nfs3.MknodArgs{Where: where(bad), Type: nfs3.TypeFIFO}},
			{nfs.ProcRemove, &nfs3.RemoveArgs{Object: where(bad)}},
			{nfs.ProcRmdir, &nfs3.RmdirArgs{Object: where(bad)}},
			{nfs.ProcRename, &nfs3.RenameArgs{From: where(bad), To: where("to")}},
			{nfs.ProcRename, &nfs3.RenameArgs{From: where("f"), To: where(bad)}},
			{nfs.ProcLink, &nfs3.LinkArgs{File: f, Link: where(bad)}},
		} {
			for _, who := range []xdr.OpaqueAuth{credRoot, credUser} {
				e.garbage(who, c.proc, c.args, nfs.ProcName(nfs.ProgNFS, 3, c.proc)+" of "+strings.ReplaceAll(bad[:min(len(bad), 8)], "\x00", "\\0"))
			}
		}
	}
	require.False(t, e.exists("a/b"), "MKDIR a/b made nothing below a")
	require.False(t, e.exists("to"))
	require.True(t, e.exists("f"))
	require.True(t, e.exists("d"))

	for _, dot := range []string{".", ".."} {
		for _, c := range []struct {
			what string
			got  nfs3.Status
			want nfs3.Status
		}{
			{"CREATE", e.create(credRoot, d, dot, 0o644).Status, nfs3.ErrExist},
			{"MKDIR", e.mkdir(credRoot, d, dot, 0o755).Status, nfs3.ErrExist},
			{"SYMLINK", e.symlink(credRoot, d, dot, "f").Status, nfs3.ErrExist},
			{"MKNOD", e.mknod(credRoot, d, dot, nfs3.TypeFIFO, nfs3.SpecData{}).Status, nfs3.ErrExist},
			{"LINK", e.link(credRoot, f, d, dot).Status, nfs3.ErrExist},
			{"REMOVE", e.remove(credRoot, d, dot).Status, nfs3.ErrAcces},
			{"RMDIR", e.rmdir(credRoot, d, dot).Status, nfs3.ErrAcces},
			{"RENAME from", e.rename(credRoot, d, dot, root, "moved").Status, nfs3.ErrPerm},
			{"RENAME to", e.rename(credRoot, root, "f", d, dot).Status, nfs3.ErrPerm},
		} {
			require.Equal(t, c.want, c.got, "%s of %q", c.what, dot)
		}
	}
	require.True(t, e.exists("d") && e.exists("f"))
	require.False(t, e.exists("moved"))
	// LOOKUP of "." is the directory, of ".." its parent, the root's own
	// parent the root (the client cannot leave the export).
	require.Equal(t, d, e.lookup(credUser, d, ".").Object, "LOOKUP .")
	require.Equal(t, root, e.lookup(credUser, d, "..").Object, "LOOKUP ..")
	require.Equal(t, root, e.lookup(credUser, root, "..").Object, "LOOKUP .. of the root")

	long := strings.Repeat("L", 255)
	e.requireCreated(e.create(credRoot, d, long, 0o644), "d/"+long, nfs3.TypeReg, 0, 0)
	l := e.lookup(credRoot, d, long)
	require.Equal(t, nfs3.OK, l.Status, "LOOKUP of a 255-byte name")
	require.Equal(t, e.stat("d/"+long).Ino, l.ObjAttr.Attr.FileID)
	e.requireCreated(e.mkdir(credRoot, root, long, 0o755), long, nfs3.TypeDir, 0, 0)
	require.Equal(t, nfs3.OK, e.rename(credRoot, d, long, d, "short").Status, "RENAME from a 255-byte name")
	require.Equal(t, nfs3.OK, e.rename(credRoot, d, "short", d, long).Status, "RENAME to a 255-byte name")
	require.Equal(t, nfs3.OK, e.remove(credRoot, d, long).Status, "REMOVE of a 255-byte name")
	require.Equal(t, nfs3.OK, e.rmdir(credRoot, root, long).Status, "RMDIR of a 255-byte name")
	require.False(t, e.exists("d/"+long) || e.exists(long))
}

// TestSemanticsTimes: a file's three times are its own: a chmod a while
// after CREATE moves ctime past mtime and atime and leaves mtime; times a
// client sets are kept to the nanosecond (RFC 1813 §2.6, nfstime3; FSINFO
// time_delta 1 ns), as the attributes of SETATTR's and CREATE's replies
// report.
func TestSemanticsTimes(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	cr := e.create(credRoot, e.root, "f", 0o644)
	require.Equal(t, nfs3.OK, cr.Status)
	created := cr.ObjAttr.Attr
	st := e.stat("f")
	require.Equal(t, [3]nfs3.Time{nfsTimeOf(st.Atim), nfsTimeOf(st.Mtim), nfsTimeOf(st.Ctim)},
		[3]nfs3.Time{created.Atime, created.Mtime, created.Ctime}, "CREATE's attributes: atime, mtime, ctime")
	time.Sleep(1100 * time.Millisecond)
	res := e.setattr(credRoot, cr.Obj.FH, modeSattr(0o600))
	require.Equal(t, nfs3.OK, res.Status)
	a := res.Wcc.After.Attr
	require.Equal(t, created.Mtime, a.Mtime, "chmod leaves mtime")
	require.Equal(t, created.Mtime, res.Wcc.Before.Attr.Mtime)
	require.Greater(t, a.Ctime.Sec, a.Mtime.Sec, "chmod 1.1 s later: ctime past mtime")
	require.Greater(t, a.Ctime.Sec, a.Atime.Sec, "chmod 1.1 s later: ctime past atime")
	st = e.stat("f")
	require.Equal(t, [3]nfs3.Time{nfsTimeOf(st.Atim), nfsTimeOf(st.Mtim), nfsTimeOf(st.Ctim)}, [3]nfs3.Time{a.Atime, a.Mtime, a.Ctime})

	atime := nfs3.Time{Sec: 1_000_000_001, Nsec: 123_456_789}
	mtime := nfs3.Time{Sec: 1_100_000_002, Nsec: 987_654_321}
	res = e.setattr(credRoot, cr.Obj.FH, nfs3.Sattr{
		Atime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: atime},
		Mtime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: mtime},
	})
	require.Equal(t, nfs3.OK, res.Status)
	a = res.Wcc.After.Attr
	require.Equal(t, atime, a.Atime, "atime as the client set it")
	require.Equal(t, mtime, a.Mtime, "mtime as the client set it")
	require.Greater(t, a.Ctime.Sec, mtime.Sec, "ctime is now")
	st = e.stat("f")
	require.Equal(t, [2]nfs3.Time{atime, mtime}, [2]nfs3.Time{nfsTimeOf(st.Atim), nfsTimeOf(st.Mtim)})
	// Only mtime: atime stays.
	mtime2 := nfs3.Time{Sec: 1_200_000_003, Nsec: 1}
	res = e.setattr(credRoot, cr.Obj.FH, nfs3.Sattr{Mtime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: mtime2}})
	require.Equal(t, nfs3.OK, res.Status)
	require.Equal(t, [2]nfs3.Time{atime, mtime2}, [2]nfs3.Time{res.Wcc.After.Attr.Atime, res.Wcc.After.Attr.Mtime})
	// The times are distinct in ACCESS's attributes too.
	acc := e.access(credRoot, cr.Obj.FH, nfs3.AccessRead)
	require.Equal(t, [2]nfs3.Time{atime, mtime2}, [2]nfs3.Time{acc.ObjAttr.Attr.Atime, acc.ObjAttr.Attr.Mtime})
	require.True(t, timeAfter(acc.ObjAttr.Attr.Ctime, mtime2))
}

// TestSemanticsLinks: LINK (RFC 1813 §3.3.15), RENAME (§3.3.14), REMOVE
// and RMDIR (§3.3.12, §3.3.13) as the kernel answers knfsd: a hard link
// counts, a directory cannot be linked (NFS3ERR_ISDIR); a user links
// where it may write (NFS3ERR_ACCES elsewhere), another user's file
// included (knfsd does not apply protected_hardlinks); a rename replaces
// a file, moves a directory, not onto a non-empty one (NFS3ERR_NOTEMPTY)
// nor below itself (NFS3ERR_INVAL); RMDIR of a non-empty directory is
// NFS3ERR_NOTEMPTY, of a file NFS3ERR_NOTDIR; REMOVE of a directory
// NFS3ERR_ISDIR.
func TestSemanticsLinks(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	e.mkdirAs("mine", 0o755, 1234, 1234)
	e.mkdirAs("closed", 0o755, 1235, 1235)
	e.fileAs("mine/f", "data", 0o644, 1234, 1234)
	e.fileAs("secret", "1235's", 0o600, 1235, 1235)
	mine, closed, f := e.fh("mine"), e.fh("closed"), e.fh("mine/f")

	before := e.stat("mine")
	pastJiffy()
	lr := e.link(credUser, f, mine, "g")
	require.Equal(t, nfs3.OK, lr.Status)
	require.True(t, lr.FileAttr.Set)
	require.EqualValues(t, 2, lr.FileAttr.Attr.Nlink, "LINK: the file's post-op nlink")
	e.requireWcc(lr.LinkDirWcc, "mine", before, changesBoth, "LINK")
	require.EqualValues(t, 2, e.stat("mine/g").Nlink)
	require.Equal(t, e.stat("mine/f").Ino, e.stat("mine/g").Ino)
	require.Equal(t, f, e.lookup(credUser, mine, "g").Object, "one file, one handle")

	before = e.stat("mine")
	lr = e.link(credUser, mine, mine, "dirlink")
	require.Equal(t, nfs3.ErrIsDir, lr.Status, "LINK of a directory")
	require.True(t, lr.FileAttr.Set)
	e.requireWcc(lr.LinkDirWcc, "mine", before, changesNothing, "LINK of a directory")
	before = e.stat("closed")
	lr = e.link(credUser, f, closed, "g")
	require.Equal(t, nfs3.ErrAcces, lr.Status, "LINK into a directory the user may not write")
	e.requireWcc(lr.LinkDirWcc, "closed", before, changesNothing, "LINK refused")
	require.False(t, e.exists("closed/g"))
	require.Equal(t, nfs3.OK, e.link(credUser, e.fh("secret"), mine, "stolen").Status,
		"LINK of another's 0600 file into the user's directory")
	require.Equal(t, e.stat("secret").Ino, e.stat("mine/stolen").Ino)
	require.Equal(t, nfs3.ErrAcces, e.read(credUser, e.lookup(credUser, mine, "stolen").Object).Status, "and still not readable")
	require.Equal(t, nfs3.ErrExist, e.link(credUser, f, mine, "g").Status, "LINK onto an existing name")

	// RENAME over a file replaces it.
	e.fileAs("mine/new", "new", 0o644, 1234, 1234)
	newIno := e.stat("mine/new").Ino
	rr := e.rename(credUser, mine, "new", mine, "f")
	require.Equal(t, nfs3.OK, rr.Status, "RENAME over a file")
	require.Equal(t, newIno, e.stat("mine/f").Ino)
	require.False(t, e.exists("mine/new"))
	require.EqualValues(t, 1, e.stat("mine/g").Nlink, "the file replaced lost a link")

	// Directories.
	e.mkdirAs("mine/d1", 0o755, 1234, 1234)
	e.fileAs("mine/d1/x", "x", 0o644, 1234, 1234)
	e.mkdirAs("mine/d2", 0o755, 1234, 1234)
	e.fileAs("mine/d2/y", "y", 0o644, 1234, 1234)
	e.mkdirAs("mine/empty", 0o755, 1234, 1234)
	rr = e.rename(credUser, mine, "d1", mine, "d2")
	require.Contains(t, []nfs3.Status{nfs3.ErrNotEmpty, nfs3.ErrExist}, rr.Status, "RENAME of a directory onto a non-empty one")
	require.True(t, e.exists("mine/d1/x") && e.exists("mine/d2/y"))
	require.Equal(t, nfs3.OK, e.rename(credUser, mine, "d1", mine, "empty").Status, "RENAME of a directory onto an empty one")
	require.True(t, e.exists("mine/empty/x"))
	require.Equal(t, nfs3.OK, e.rename(credUser, mine, "empty", mine, "d3").Status, "RENAME of a directory")
	require.True(t, e.exists("mine/d3/x"))
	require.Equal(t, nfs3.ErrInval, e.rename(credUser, mine, "d3", e.fh("mine/d3"), "sub").Status,
		"RENAME of a directory into itself")
	e.mkdirAs("mine/d3/sub", 0o755, 1234, 1234)
	require.Equal(t, nfs3.ErrInval, e.rename(credUser, mine, "d3", e.fh("mine/d3/sub"), "d3").Status,
		"RENAME of a directory below itself")
	require.Equal(t, nfs3.ErrNotDir, e.rename(credUser, mine, "d3", mine, "f").Status, "RENAME of a directory onto a file")
	require.Equal(t, nfs3.ErrIsDir, e.rename(credUser, mine, "f", mine, "d3").Status, "RENAME of a file onto a directory")
	require.Equal(t, nfs3.ErrNoEnt, e.rename(credUser, mine, "nothing", mine, "x").Status)
	require.Equal(t, nfs3.ErrAcces, e.rename(credUser, mine, "f", closed, "f").Status, "RENAME into a directory the user may not write")

	require.Equal(t, nfs3.ErrNotEmpty, e.rmdir(credUser, mine, "d3").Status, "RMDIR of a non-empty directory")
	require.Equal(t, nfs3.ErrNotDir, e.rmdir(credUser, mine, "f").Status, "RMDIR of a file")
	require.Equal(t, nfs3.ErrIsDir, e.remove(credUser, mine, "d3").Status, "REMOVE of a directory")
	require.Equal(t, nfs3.ErrNoEnt, e.remove(credUser, mine, "nothing").Status)
	require.True(t, e.exists("mine/d3") && e.exists("mine/f"))
	require.Equal(t, nfs3.OK, e.remove(credUser, mine, "g").Status)
	require.Equal(t, nfs3.OK, e.rmdir(credUser, e.fh("mine/d3"), "sub").Status)
}

// TestSemanticsWcc: every reply that carries wcc_data (RFC 1813 §2.6)
// carries both sides, in success and in failure, the before side the
// directory's (or the file's) attributes before the call and the after
// side after it; on success the directory's mtime and ctime advance.
func TestSemanticsWcc(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	e.mkdirAs("a", 0o755, 1234, 1234)
	e.mkdirAs("b", 0o755, 1234, 1234)
	e.fileAs("a/f", "data", 0o644, 1234, 1234)
	e.fileAs("a/victim", "v", 0o644, 1234, 1234)
	e.mkdirAs("a/gone", 0o755, 1234, 1234)
	a, b := e.fh("a"), e.fh("b")
	f := e.fh("a/f")
	type op struct {
		what string
		ok   wccChange
		run  func() (nfs3.Status, []nfs3.WccData)
		dirs []string
	}
	created := func(r nfs3.CreateRes) (nfs3.Status, []nfs3.WccData) { return r.Status, []nfs3.WccData{r.DirWcc} }
	removed := func(r nfs3.RemoveRes) (nfs3.Status, []nfs3.WccData) { return r.Status, []nfs3.WccData{r.DirWcc} }
	for _, o := range []op{
		{"SETATTR", changesCtime, func() (nfs3.Status, []nfs3.WccData) {
			r := e.setattr(credUser, f, modeSattr(0o600))
			return r.Status, []nfs3.WccData{r.Wcc}
		}, []string{"a/f"}},
		{"SETATTR refused", changesNothing, func() (nfs3.Status, []nfs3.WccData) {
			r := e.setattr(credOther, f, modeSattr(0o666))
			return r.Status, []nfs3.WccData{r.Wcc}
		}, []string{"a/f"}},
		{"CREATE", changesBoth, func() (nfs3.Status, []nfs3.WccData) { return created(e.create(credUser, a, "c", 0o644)) }, []string{"a"}},
		{"CREATE refused", changesNothing, func() (nfs3.Status, []nfs3.WccData) { return created(e.create(credOther, a, "c2", 0o644)) }, []string{"a"}},
		{"CREATE existing", changesNothing, func() (nfs3.Status, []nfs3.WccData) { return created(e.create(credUser, a, "f", 0o644)) }, []string{"a"}},
		{"MKDIR", changesBoth, func() (nfs3.Status, []nfs3.WccData) { return created(e.mkdir(credUser, a, "m", 0o755)) }, []string{"a"}},
		{"MKDIR refused", changesNothing, func() (nfs3.Status, []nfs3.WccData) { return created(e.mkdir(credOther, a, "m2", 0o755)) }, []string{"a"}},
		{"SYMLINK", changesBoth, func() (nfs3.Status, []nfs3.WccData) { return created(e.symlink(credUser, a, "s", "f")) }, []string{"a"}},
		{"SYMLINK refused", changesNothing, func() (nfs3.Status, []nfs3.WccData) { return created(e.symlink(credOther, a, "s2", "f")) }, []string{"a"}},
		{"MKNOD", changesBoth, func() (nfs3.Status, []nfs3.WccData) {
			return created(e.mknod(credUser, a, "p", nfs3.TypeFIFO, nfs3.SpecData{}))
		}, []string{"a"}},
		{"MKNOD refused", changesNothing, func() (nfs3.Status, []nfs3.WccData) {
			return created(e.mknod(credOther, a, "p2", nfs3.TypeFIFO, nfs3.SpecData{}))
		}, []string{"a"}},
		{"REMOVE", changesBoth, func() (nfs3.Status, []nfs3.WccData) { return removed(e.remove(credUser, a, "victim")) }, []string{"a"}},
		{"REMOVE refused", changesNothing, func() (nfs3.Status, []nfs3.WccData) { return removed(e.remove(credOther, a, "f")) }, []string{"a"}},
		{"REMOVE missing", changesNothing, func() (nfs3.Status, []nfs3.WccData) { return removed(e.remove(credUser, a, "none")) }, []string{"a"}},
		{"RMDIR", changesBoth, func() (nfs3.Status, []nfs3.WccData) { return removed(e.rmdir(credUser, a, "gone")) }, []string{"a"}},
		{"RMDIR refused", changesNothing, func() (nfs3.Status, []nfs3.WccData) { return removed(e.rmdir(credOther, a, "m")) }, []string{"a"}},
		{"RENAME", changesBoth, func() (nfs3.Status, []nfs3.WccData) {
			r := e.rename(credUser, a, "c", b, "c")
			return r.Status, []nfs3.WccData{r.FromDirWcc, r.ToDirWcc}
		}, []string{"a", "b"}},
		{"RENAME refused", changesNothing, func() (nfs3.Status, []nfs3.WccData) {
			r := e.rename(credOther, a, "f", b, "f")
			return r.Status, []nfs3.WccData{r.FromDirWcc, r.ToDirWcc}
		}, []string{"a", "b"}},
		{"LINK", changesBoth, func() (nfs3.Status, []nfs3.WccData) {
			r := e.link(credUser, f, b, "l")
			return r.Status, []nfs3.WccData{r.LinkDirWcc}
		}, []string{"b"}},
		{"LINK refused", changesNothing, func() (nfs3.Status, []nfs3.WccData) {
			r := e.link(credOther, f, b, "l2")
			return r.Status, []nfs3.WccData{r.LinkDirWcc}
		}, []string{"b"}},
	} {
		var before []unix.Stat_t
		for _, d := range o.dirs {
			before = append(before, e.stat(d))
		}
		pastJiffy()
		st, wccs := o.run()
		if o.ok != changesNothing {
			require.Equal(t, nfs3.OK, st, o.what)
		} else {
			require.NotEqual(t, nfs3.OK, st, o.what)
		}
		require.Len(t, wccs, len(o.dirs))
		for i, w := range wccs {
			e.requireWcc(w, o.dirs[i], before[i], o.ok, o.what)
		}
	}
}

// TestSemanticsFsinfo: FSSTAT (RFC 1813 §3.3.18), FSINFO (§3.3.19) and
// PATHCONF (§3.3.20) of the export, as knfsd answers them for a local
// file system.
func TestSemanticsFsinfo(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	var fss nfs3.FsstatRes
	e.do(credUser, nfs.ProcFsstat, &nfs3.FsstatArgs{FSRoot: e.root}, &fss)
	require.Equal(t, nfs3.OK, fss.Status)
	require.True(t, fss.ObjAttr.Set)
	require.Equal(t, nfs3.TypeDir, fss.ObjAttr.Attr.Type)
	require.Positive(t, fss.Abytes, "abytes")
	require.GreaterOrEqual(t, fss.Fbytes, fss.Abytes, "fbytes >= abytes")
	require.GreaterOrEqual(t, fss.Tbytes, fss.Fbytes, "tbytes >= fbytes")
	require.Positive(t, fss.Tfiles)
	require.GreaterOrEqual(t, fss.Tfiles, fss.Ffiles)
	require.GreaterOrEqual(t, fss.Ffiles, fss.Afiles)
	var sfs unix.Statfs_t
	require.NoError(t, unix.Statfs(e.dir, &sfs))
	require.Equal(t, sfs.Blocks*uint64(sfs.Bsize), fss.Tbytes, "tbytes is the file system's")

	var fi nfs3.FsinfoRes
	e.do(credUser, nfs.ProcFsinfo, &nfs3.FsinfoArgs{FSRoot: e.root}, &fi)
	require.Equal(t, nfs3.OK, fi.Status)
	require.True(t, fi.ObjAttr.Set)
	require.Equal(t, fi.Rtmax, fi.Wtmax, "rtmax == wtmax")
	require.GreaterOrEqual(t, fi.Rtmax, uint32(4096))
	require.LessOrEqual(t, fi.Rtmax, uint32(1<<20+64<<10), "rtmax about 1 MiB at most")
	require.Zero(t, fi.Rtmax%4096, "rtmax in pages")
	require.Zero(t, fi.Wtmax%4096, "wtmax in pages")
	require.NotZero(t, fi.Rtpref)
	require.LessOrEqual(t, fi.Rtpref, fi.Rtmax)
	require.LessOrEqual(t, fi.Wtpref, fi.Wtmax)
	require.Positive(t, fi.Dtpref)
	require.Equal(t, nfs3.Time{Nsec: 1}, fi.TimeDelta, "time_delta 1 ns")
	want := uint32(nfs3.FSFLink | nfs3.FSFSymlink | nfs3.FSFHomogeneous | nfs3.FSFCanSetTime)
	require.Equal(t, want, fi.Properties&want, "properties %#x", fi.Properties)
	require.Positive(t, fi.MaxFileSize)

	var pc nfs3.PathconfRes
	e.do(credUser, nfs.ProcPathconf, &nfs3.PathconfArgs{Object: e.root}, &pc)
	require.Equal(t, nfs3.OK, pc.Status)
	require.True(t, pc.ObjAttr.Set)
	require.EqualValues(t, 255, pc.Linkmax)
	require.EqualValues(t, 255, pc.NameMax)
	require.True(t, pc.NoTrunc, "no_trunc")
	require.True(t, pc.ChownRestricted, "chown_restricted")
	require.False(t, pc.CaseInsensitive, "case_insensitive")
	require.True(t, pc.CasePreserving, "case_preserving")

	// A stale handle: NFS3ERR_STALE, for all three.
	e.mkdirAs("gone", 0o755, 0, 0)
	gone := e.fh("gone")
	require.Equal(t, nfs3.OK, e.rmdir(credRoot, e.root, "gone").Status)
	e.do(credUser, nfs.ProcFsstat, &nfs3.FsstatArgs{FSRoot: gone}, &fss)
	require.Equal(t, nfs3.ErrStale, fss.Status)
	e.do(credUser, nfs.ProcFsinfo, &nfs3.FsinfoArgs{FSRoot: gone}, &fi)
	require.Equal(t, nfs3.ErrStale, fi.Status)
	e.do(credUser, nfs.ProcPathconf, &nfs3.PathconfArgs{Object: gone}, &pc)
	require.Equal(t, nfs3.ErrStale, pc.Status)
}

// rigMountCall makes a MOUNT v3 call over TCP and decodes its results into
// res (nil: none).
func rigMountCall(t *testing.T, c msgConn, proc uint32, args rigArgs, res rigRes) {
	t.Helper()
	var b []byte
	if args != nil {
		b = args.Append(nil)
	}
	rh, rest := call(t, c, 0x20000000+rigXID.Add(1), nfs.ProgMount, 3, proc, b)
	require.Equal(t, xdr.MsgAccepted, rh.Stat)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat, nfs.ProcName(nfs.ProgMount, 3, proc))
	r := xdr.NewReader(rest)
	if res != nil {
		require.NoError(t, res.Decode(&r))
	}
	require.Zero(t, r.Len(), "bytes after the results of %s", nfs.ProcName(nfs.ProgMount, 3, proc))
}

// TestSemanticsMount: MOUNT version 3 over TCP (RFC 1813 §5.2): MNT
// gives the root's handle and AUTH_SYS as the flavor to use; DUMP lists
// the mount, UMNT takes it off, UMNTALL all of the client's; EXPORT
// lists "/" for Config.Handler (TestExports has several exports).
func TestSemanticsMount(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	tc := dialTCP(t, e.srv.TCPAddr())
	var mnt nfs3.MntRes
	rigMountCall(t, tc, nfs.MountProcMnt, &nfs3.MntArgs{Path: "/"}, &mnt)
	require.Equal(t, nfs3.MntOK, mnt.Status)
	require.Equal(t, e.root, mnt.FH, "the same root handle every time")
	require.Equal(t, []uint32{uint32(xdr.FlavorSys)}, mnt.AuthFlavors)
	rootAttr := e.getattr(mnt.FH)
	require.Equal(t, nfs3.TypeDir, rootAttr.Type)
	require.Equal(t, e.stat(".").Ino, rootAttr.FileID, "the handle is the export's root")

	var dump nfs3.DumpRes
	rigMountCall(t, tc, nfs.MountProcDump, nil, &dump)
	require.Equal(t, []nfs3.MountEntry{{Hostname: "127.0.0.1", Directory: "/"}}, dump.Mounts)
	rigMountCall(t, tc, nfs.MountProcMnt, &nfs3.MntArgs{Path: "/other"}, &mnt)
	require.Equal(t, nfs3.MntErrNoEnt, mnt.Status, "a directory that is not there")
	e.mkdirAs("other", 0o755, 0, 0)
	rigMountCall(t, tc, nfs.MountProcMnt, &nfs3.MntArgs{Path: "/other"}, &mnt)
	require.Equal(t, nfs3.MntOK, mnt.Status, "a directory below the export")
	require.Equal(t, e.fh("other"), mnt.FH)
	rigMountCall(t, tc, nfs.MountProcDump, nil, &dump)
	require.ElementsMatch(t, []nfs3.MountEntry{{Hostname: "127.0.0.1", Directory: "/"}, {Hostname: "127.0.0.1", Directory: "/other"}}, dump.Mounts)
	rigMountCall(t, tc, nfs.MountProcUmnt, &nfs3.UmntArgs{Path: "/"}, nil)
	rigMountCall(t, tc, nfs.MountProcDump, nil, &dump)
	require.Equal(t, []nfs3.MountEntry{{Hostname: "127.0.0.1", Directory: "/other"}}, dump.Mounts, "UMNT took / off")
	rigMountCall(t, tc, nfs.MountProcUmntall, nil, nil)
	rigMountCall(t, tc, nfs.MountProcDump, nil, &dump)
	require.Empty(t, dump.Mounts, "UMNTALL took all off")

	var exp nfs3.ExportRes
	rigMountCall(t, tc, nfs.MountProcExport, nil, &exp)
	require.Equal(t, []nfs3.ExportNode{{Dir: "/"}}, exp.Exports)

	// A MNT whose path does not decode is GARBAGE_ARGS.
	rh, _ := call(t, tc, 0x20000000+rigXID.Add(1), nfs.ProgMount, 3, nfs.MountProcMnt, xdr.AppendUint32(nil, 2000))
	require.Equal(t, xdr.AcceptGarbageArgs, rh.AcceptStat)
}
