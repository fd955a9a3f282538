package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The callers of the identity and semantics tests (AUTH_SYS credentials).
var (
	credRoot  = sysCred(0, 0)
	credUser  = sysCred(1234, 1234, 1000) // uid 1234, gid 1234, groups [1000]
	credOther = sysCred(1235, 1235)       // another user, in no group of credUser's
	credNone  = xdr.OpaqueAuth{Flavor: xdr.FlavorNone}
)

// sysCred is an AUTH_SYS credential (RFC 5531 §A.1).
func sysCred(uid, gid uint32, groups ...uint32) xdr.OpaqueAuth {
	a := xdr.AuthSys{Stamp: 1, MachineName: []byte("client"), UID: uid, GID: gid, GIDs: groups}
	return a.OpaqueAuth(nil)
}

// requireIDSwitching skips a test that needs to switch identities and to
// give files away (the tests run as root in make test and CI).
func requireIDSwitching(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("switching identities needs root")
	}
}

// nfsRig is a fresh directory exported by a DirHandler on the soft
// provider, and a connection sending raw NFSv3 calls with any credential
// (encoded and decoded by nfs/nfs3).
type nfsRig struct {
	t    *testing.T
	dir  string // the exported directory
	srv  *server.Server
	root []byte // its root handle, from MNT
	c    msgConn
}

// newRig exports a fresh directory (mode 0755, root's) with cfg.
// startServer's rule holds: without AnonUID, RootSquash becomes
// NoRootSquash.
func newRig(t *testing.T, cfg server.Config) *nfsRig {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	d, err := server.DirFS(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	h, err := server.NewDirHandler(d, server.DirHandlerOptions{})
	require.NoError(t, err)
	cfg.Handler = h
	srv := startServer(t, cfg)
	return &nfsRig{t: t, dir: dir, srv: srv, root: mountRoot(t, srv).Data, c: dialRDMANFS(t, srv)}
}

// rigXID numbers the calls of these tests: the duplicate request cache
// must never take one for another.
var rigXID atomic.Uint32

// rpc sends one NFSv3 call with the credential cred and returns the
// reply's header and results.
func (e *nfsRig) rpc(cred xdr.OpaqueAuth, proc uint32, args []byte) (xdr.ReplyHeader, []byte) {
	e.t.Helper()
	xid := 0x10000000 + rigXID.Add(1)
	h := xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: proc, Cred: cred}
	require.NoError(e.t, e.c.WriteMsg(append(h.Append(nil), args...)))
	rep, err := e.c.ReadMsg(nil)
	require.NoError(e.t, err)
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(rep)
	require.NoError(e.t, err)
	require.Equal(e.t, xid, rh.XID)
	return rh, rep[off:]
}

type rigArgs interface{ Append([]byte) []byte }
type rigRes interface{ Decode(*xdr.Reader) error }

// do makes a call that the server must accept (MSG_ACCEPTED, SUCCESS)
// and decodes its results into res, which must take all of them.
func (e *nfsRig) do(cred xdr.OpaqueAuth, proc uint32, args rigArgs, res rigRes) {
	e.t.Helper()
	rh, b := e.rpc(cred, proc, args.Append(nil))
	name := nfs.ProcName(nfs.ProgNFS, 3, proc)
	require.Equal(e.t, xdr.MsgAccepted, rh.Stat, name)
	require.Equal(e.t, xdr.AcceptSuccess, rh.AcceptStat, name)
	r := xdr.NewReader(b)
	require.NoError(e.t, res.Decode(&r), name)
	require.Zero(e.t, r.Len(), "bytes after the results of %s", name)
}

// garbage makes a call the server must answer with GARBAGE_ARGS.
func (e *nfsRig) garbage(cred xdr.OpaqueAuth, proc uint32, args rigArgs, what string) {
	e.t.Helper()
	rh, _ := e.rpc(cred, proc, args.Append(nil))
	require.Equal(e.t, xdr.MsgAccepted, rh.Stat, what)
	require.Equal(e.t, xdr.AcceptGarbageArgs, rh.AcceptStat, what)
}

// path is the local name of name, a slash-separated path below the
// export's root.
func (e *nfsRig) path(name string) string { return filepath.Join(e.dir, filepath.FromSlash(name)) }

// stat is the local lstat of name.
func (e *nfsRig) stat(name string) unix.Stat_t {
	e.t.Helper()
	var st unix.Stat_t
	require.NoError(e.t, unix.Lstat(e.path(name), &st), name)
	return st
}

// exists reports whether name exists locally.
func (e *nfsRig) exists(name string) bool {
	_, err := os.Lstat(e.path(name))
	return err == nil
}

// mkdirAs makes the directory name locally with mode (setuid, setgid
// and sticky bits included), owned by uid:gid.
func (e *nfsRig) mkdirAs(name string, mode uint32, uid, gid int) {
	e.t.Helper()
	p := e.path(name)
	require.NoError(e.t, os.Mkdir(p, 0o700))
	require.NoError(e.t, os.Lchown(p, uid, gid))
	require.NoError(e.t, unix.Chmod(p, mode))
}

// fileAs makes the file name locally holding data, with mode, owned by
// uid:gid.
func (e *nfsRig) fileAs(name, data string, mode uint32, uid, gid int) {
	e.t.Helper()
	p := e.path(name)
	require.NoError(e.t, os.WriteFile(p, []byte(data), 0o600))
	require.NoError(e.t, os.Lchown(p, uid, gid))
	require.NoError(e.t, unix.Chmod(p, mode))
}

// fh returns the handle of name (a slash-separated path below the root,
// "" for the root), looked up as root.
func (e *nfsRig) fh(name string) []byte {
	e.t.Helper()
	fh := e.root
	if name == "" {
		return fh
	}
	for _, c := range strings.Split(name, "/") {
		res := e.lookup(credRoot, fh, c)
		require.Equal(e.t, nfs3.OK, res.Status, "LOOKUP %s of %s", c, name)
		fh = res.Object
	}
	return fh
}

func (e *nfsRig) getattr(fh []byte) nfs3.Fattr {
	e.t.Helper()
	var res nfs3.GetattrRes
	e.do(credRoot, nfs.ProcGetattr, &nfs3.GetattrArgs{Object: fh}, &res)
	require.Equal(e.t, nfs3.OK, res.Status, "GETATTR")
	return res.Attr
}

func (e *nfsRig) lookup(cred xdr.OpaqueAuth, dir []byte, name string) nfs3.LookupRes {
	e.t.Helper()
	var res nfs3.LookupRes
	e.do(cred, nfs.ProcLookup, &nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: dir, Name: name}}, &res)
	return res
}

func (e *nfsRig) access(cred xdr.OpaqueAuth, fh []byte, bits uint32) nfs3.AccessRes {
	e.t.Helper()
	var res nfs3.AccessRes
	e.do(cred, nfs.ProcAccess, &nfs3.AccessArgs{Object: fh, Access: bits}, &res)
	return res
}

func (e *nfsRig) setattr(cred xdr.OpaqueAuth, fh []byte, a nfs3.Sattr) nfs3.SetattrRes {
	e.t.Helper()
	var res nfs3.SetattrRes
	e.do(cred, nfs.ProcSetattr, &nfs3.SetattrArgs{Object: fh, NewAttr: a}, &res)
	return res
}

func (e *nfsRig) read(cred xdr.OpaqueAuth, fh []byte) nfs3.ReadRes {
	e.t.Helper()
	var res nfs3.ReadRes
	e.do(cred, nfs.ProcRead, &nfs3.ReadArgs{File: fh, Count: 4096}, &res)
	return res
}

func (e *nfsRig) write(cred xdr.OpaqueAuth, fh []byte, off uint64, data string) nfs3.WriteRes {
	e.t.Helper()
	var res nfs3.WriteRes
	e.do(cred, nfs.ProcWrite, &nfs3.WriteArgs{File: fh, Offset: off, Count: uint32(len(data)),
		Stable: nfs3.FileSync, Data: []byte(data)}, &res)
	return res
}

func (e *nfsRig) commit(cred xdr.OpaqueAuth, fh []byte) nfs3.CommitRes {
	e.t.Helper()
	var res nfs3.CommitRes
	e.do(cred, nfs.ProcCommit, &nfs3.CommitArgs{File: fh}, &res)
	return res
}

func (e *nfsRig) readdir(cred xdr.OpaqueAuth, dir []byte) nfs3.ReaddirRes {
	e.t.Helper()
	var res nfs3.ReaddirRes
	e.do(cred, nfs.ProcReaddir, &nfs3.ReaddirArgs{Dir: dir, Count: 8192}, &res)
	return res
}

func (e *nfsRig) readdirplus(cred xdr.OpaqueAuth, dir []byte) nfs3.ReaddirplusRes {
	e.t.Helper()
	var res nfs3.ReaddirplusRes
	e.do(cred, nfs.ProcReaddirplus, &nfs3.ReaddirplusArgs{Dir: dir, DirCount: 8192, MaxCount: 32768}, &res)
	return res
}

// modeSattr is a sattr3 setting only the mode.
func modeSattr(mode uint32) nfs3.Sattr { return nfs3.Sattr{SetMode: true, Mode: mode} }

func (e *nfsRig) create(cred xdr.OpaqueAuth, dir []byte, name string, mode uint32) nfs3.CreateRes {
	e.t.Helper()
	var res nfs3.CreateRes
	e.do(cred, nfs.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: name},
		Mode: nfs3.Guarded, Attr: modeSattr(mode)}, &res)
	return res
}

func (e *nfsRig) mkdir(cred xdr.OpaqueAuth, dir []byte, name string, mode uint32) nfs3.CreateRes {
	e.t.Helper()
	var res nfs3.CreateRes
	e.do(cred, nfs.ProcMkdir, &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: name}, Attr: modeSattr(mode)}, &res)
	return res
}

func (e *nfsRig) symlink(cred xdr.OpaqueAuth, dir []byte, name, target string) nfs3.CreateRes {
	e.t.Helper()
	var res nfs3.CreateRes
	e.do(cred, nfs.ProcSymlink, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: name}, Path: target}, &res)
	return res
}

func (e *nfsRig) mknod(cred xdr.OpaqueAuth, dir []byte, name string, typ nfs3.FileType, spec nfs3.SpecData) nfs3.CreateRes {
	e.t.Helper()
	var res nfs3.CreateRes
	e.do(cred, nfs.ProcMknod, &nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: name}, Type: typ,
		Attr: modeSattr(0o644), Spec: spec}, &res)
	return res
}

func (e *nfsRig) remove(cred xdr.OpaqueAuth, dir []byte, name string) nfs3.RemoveRes {
	e.t.Helper()
	var res nfs3.RemoveRes
	e.do(cred, nfs.ProcRemove, &nfs3.RemoveArgs{Object: nfs3.DirOpArgs{Dir: dir, Name: name}}, &res)
	return res
}

func (e *nfsRig) rmdir(cred xdr.OpaqueAuth, dir []byte, name string) nfs3.RemoveRes {
	e.t.Helper()
	var res nfs3.RemoveRes
	e.do(cred, nfs.ProcRmdir, &nfs3.RmdirArgs{Object: nfs3.DirOpArgs{Dir: dir, Name: name}}, &res)
	return res
}

func (e *nfsRig) rename(cred xdr.OpaqueAuth, from []byte, fromName string, to []byte, toName string) nfs3.RenameRes {
	e.t.Helper()
	var res nfs3.RenameRes
	e.do(cred, nfs.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: from, Name: fromName},
		To: nfs3.DirOpArgs{Dir: to, Name: toName}}, &res)
	return res
}

func (e *nfsRig) link(cred xdr.OpaqueAuth, file, dir []byte, name string) nfs3.LinkRes {
	e.t.Helper()
	var res nfs3.LinkRes
	e.do(cred, nfs.ProcLink, &nfs3.LinkArgs{File: file, Link: nfs3.DirOpArgs{Dir: dir, Name: name}}, &res)
	return res
}

// requireOwner checks the local owner of name.
func (e *nfsRig) requireOwner(name string, uid, gid uint32) {
	e.t.Helper()
	st := e.stat(name)
	require.Equal(e.t, [2]uint32{uid, gid}, [2]uint32{st.Uid, st.Gid}, "owner of %s", name)
}

// requireCreated checks a successful CREATE, MKDIR, SYMLINK or MKNOD: the
// new object's handle and attributes of type typ, owned by uid:gid, and
// the same owner on the local file.
func (e *nfsRig) requireCreated(res nfs3.CreateRes, name string, typ nfs3.FileType, uid, gid uint32) {
	e.t.Helper()
	require.Equal(e.t, nfs3.OK, res.Status, "create %s", name)
	require.True(e.t, res.Obj.Set, "%s: handle", name)
	require.True(e.t, res.ObjAttr.Set, "%s: attributes", name)
	a := res.ObjAttr.Attr
	require.Equal(e.t, typ, a.Type, name)
	require.Equal(e.t, [2]uint32{uid, gid}, [2]uint32{a.UID, a.GID}, "%s: owner in the reply", name)
	e.requireOwner(name, uid, gid)
}

// TestIdentityUsers: every call runs as its AUTH_SYS caller (RFC 1813
// §4.4, as knfsd): a user cannot read, list or search another's private
// files and directories (NFS3ERR_ACCES); what it creates, of every type,
// belongs to it; in a setgid directory a new file takes the directory's
// group and a new directory the setgid bit too.
func TestIdentityUsers(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	e.mkdirAs("home", 0o777, 0, 0)
	e.fileAs("home/secret", "other's", 0o600, 1235, 1235)
	e.mkdirAs("home/private", 0o700, 1235, 1235)
	e.fileAs("home/private/f", "x", 0o644, 1235, 1235)
	home := e.fh("home")
	secret := e.fh("home/secret")
	private := e.fh("home/private")

	// The owner reads its file and lists its directory; the other user
	// gets NFS3ERR_ACCES.
	res := e.read(credOther, secret)
	require.Equal(t, nfs3.OK, res.Status, "READ by the owner")
	require.Equal(t, "other's", string(res.Data))
	res = e.read(credUser, secret)
	require.Equal(t, nfs3.ErrAcces, res.Status, "READ of another's 0600 file")
	require.Empty(t, res.Data)
	require.True(t, res.FileAttr.Set, "READ failure carries the file's attributes")
	require.Equal(t, nfs3.OK, e.lookup(credOther, private, "f").Status, "LOOKUP by the owner")
	l := e.lookup(credUser, private, "f")
	require.Equal(t, nfs3.ErrAcces, l.Status, "LOOKUP into another's 0700 directory")
	require.Empty(t, l.Object)
	require.Equal(t, nfs3.OK, e.readdir(credOther, private).Status, "READDIR by the owner")
	require.Equal(t, nfs3.ErrAcces, e.readdir(credUser, private).Status, "READDIR of another's 0700 directory")
	require.Equal(t, nfs3.ErrAcces, e.readdirplus(credUser, private).Status, "READDIRPLUS of another's 0700 directory")
	require.Equal(t, nfs3.ErrAcces, e.create(credUser, private, "new", 0o644).Status, "CREATE in another's 0700 directory")
	require.False(t, e.exists("home/private/new"))

	// What uid 1234 creates is 1234:1234 (its primary group).
	e.requireCreated(e.create(credUser, home, "file", 0o664), "home/file", nfs3.TypeReg, 1234, 1234)
	e.requireCreated(e.mkdir(credUser, home, "dir", 0o775), "home/dir", nfs3.TypeDir, 1234, 1234)
	e.requireCreated(e.symlink(credUser, home, "link", "file"), "home/link", nfs3.TypeLnk, 1234, 1234)
	e.requireCreated(e.mknod(credUser, home, "fifo", nfs3.TypeFIFO, nfs3.SpecData{}), "home/fifo", nfs3.TypeFIFO, 1234, 1234)
	// The mode asked for, whatever the server's umask (knfsd creates with
	// none): the tests run with 022.
	require.Equal(t, uint32(0o664), e.stat("home/file").Mode&0o7777, "the mode asked for")
	require.Equal(t, uint32(0o775), e.stat("home/dir").Mode&0o7777, "the mode asked for")

	// A setgid directory of group 1000, which uid 1234 is in: new files
	// take group 1000, new directories the setgid bit as well.
	e.mkdirAs("home/sg", 0o2775, 0, 1000)
	sg := e.fh("home/sg")
	e.requireCreated(e.create(credUser, sg, "f", 0o644), "home/sg/f", nfs3.TypeReg, 1234, 1000)
	e.requireCreated(e.mkdir(credUser, sg, "d", 0o755), "home/sg/d", nfs3.TypeDir, 1234, 1000)
	require.Equal(t, uint32(0o2755), e.stat("home/sg/d").Mode&0o7777, "a new directory inherits setgid")
	require.Equal(t, uint32(0o644), e.stat("home/sg/f").Mode&0o7777, "a new file does not")
	// uid 1235 is not in group 1000: the directory is not its to write.
	require.Equal(t, nfs3.ErrAcces, e.create(credOther, sg, "g", 0o644).Status)
}

// TestIdentitySquash: root_squash (the default) runs root's calls as the
// anonymous user, no_root_squash as root, all_squash every caller as the
// anonymous user; AnonUID and AnonGID are honoured; AUTH_NONE is the
// anonymous user.
func TestIdentitySquash(t *testing.T) {
	requireIDSwitching(t)
	pub := func(e *nfsRig) []byte {
		e.mkdirAs("pub", 0o777, 0, 0)
		e.fileAs("pub/rootonly", "root's", 0o600, 0, 0)
		return e.fh("pub")
	}
	t.Run("root_squash", func(t *testing.T) {
		e := newRig(t, server.Config{Squash: server.RootSquash, AnonUID: 65534})
		dir := pub(e)
		e.requireCreated(e.create(credRoot, dir, "byroot", 0o644), "pub/byroot", nfs3.TypeReg, 65534, 65534)
		e.requireCreated(e.mkdir(credRoot, dir, "dirbyroot", 0o755), "pub/dirbyroot", nfs3.TypeDir, 65534, 65534)
		require.Equal(t, nfs3.ErrAcces, e.read(credRoot, e.fh("pub/rootonly")).Status, "squashed root reads root's 0600 file")
		require.Zero(t, e.access(credRoot, e.fh("pub/rootonly"), nfs3.AccessRead|nfs3.AccessModify).Access)
		// A user keeps its identity.
		e.requireCreated(e.create(credUser, dir, "byuser", 0o644), "pub/byuser", nfs3.TypeReg, 1234, 1234)
	})
	t.Run("root_squash anon ids", func(t *testing.T) {
		e := newRig(t, server.Config{Squash: server.RootSquash, AnonUID: 4000, AnonGID: 4001})
		dir := pub(e)
		e.requireCreated(e.create(credRoot, dir, "byroot", 0o644), "pub/byroot", nfs3.TypeReg, 4000, 4001)
		e.requireCreated(e.create(credNone, dir, "bynone", 0o644), "pub/bynone", nfs3.TypeReg, 4000, 4001)
	})
	t.Run("no_root_squash", func(t *testing.T) {
		e := newRig(t, server.Config{Squash: server.NoRootSquash})
		dir := pub(e)
		e.requireCreated(e.create(credRoot, dir, "byroot", 0o644), "pub/byroot", nfs3.TypeReg, 0, 0)
		res := e.read(credRoot, e.fh("pub/rootonly"))
		require.Equal(t, nfs3.OK, res.Status)
		require.Equal(t, "root's", string(res.Data))
		e.requireCreated(e.create(credUser, dir, "byuser", 0o644), "pub/byuser", nfs3.TypeReg, 1234, 1234)
		// AUTH_NONE is anonymous (65534 when AnonUID is 0).
		e.requireCreated(e.create(credNone, dir, "bynone", 0o644), "pub/bynone", nfs3.TypeReg, 65534, 65534)
		require.Equal(t, nfs3.ErrAcces, e.read(credNone, e.fh("pub/rootonly")).Status, "AUTH_NONE reads root's 0600 file")
	})
	t.Run("all_squash", func(t *testing.T) {
		e := newRig(t, server.Config{Squash: server.AllSquash})
		dir := pub(e)
		e.requireCreated(e.create(credUser, dir, "byuser", 0o644), "pub/byuser", nfs3.TypeReg, 65534, 65534)
		e.requireCreated(e.create(credRoot, dir, "byroot", 0o644), "pub/byroot", nfs3.TypeReg, 65534, 65534)
		// uid 1234's own file is not its own any more.
		e.fileAs("pub/mine", "1234's", 0o600, 1234, 1234)
		require.Equal(t, nfs3.ErrAcces, e.read(credUser, e.fh("pub/mine")).Status)
	})
	t.Run("all_squash anon ids", func(t *testing.T) {
		e := newRig(t, server.Config{Squash: server.AllSquash, AnonUID: 4000, AnonGID: 4001})
		dir := pub(e)
		e.requireCreated(e.create(credUser, dir, "byuser", 0o644), "pub/byuser", nfs3.TypeReg, 4000, 4001)
	})
}

// TestIdentityBadCredential: a credential of a flavor other than
// AUTH_NONE and AUTH_SYS (RPCSEC_GSS here, which the server does not
// speak), or an AUTH_SYS body that does not decode, is refused with
// MSG_DENIED, AUTH_ERROR, AUTH_BADCRED (RFC 5531 §9), as knfsd refuses
// them, by the procedures executed as the caller and the ones checked
// as the caller before they run; nothing is created.
func TestIdentityBadCredential(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	e.fileAs("f", "data", 0o644, 0, 0)
	f := e.fh("f")
	truncated := credUser
	truncated.Body = truncated.Body[:12] // stamp, machine name, no uid
	// 17 groups, one more than AUTH_SYS allows (RFC 5531 §A.1; knfsd's
	// UNX_NGROUPS).
	long := xdr.OpaqueAuth{Flavor: xdr.FlavorSys}
	long.Body = xdr.AppendUint32(nil, 1)                                  // stamp
	long.Body = xdr.AppendString(long.Body, "client")                     // machinename
	long.Body = xdr.AppendUint32(xdr.AppendUint32(long.Body, 1234), 1234) // uid, gid
	long.Body = xdr.AppendUint32(long.Body, 17)
	for i := range 17 {
		long.Body = xdr.AppendUint32(long.Body, uint32(1000+i))
	}
	for _, cred := range []struct {
		name string
		auth xdr.OpaqueAuth
	}{
		{"RPCSEC_GSS", xdr.OpaqueAuth{Flavor: xdr.FlavorGSS, Body: []byte{0, 0, 0, 1, 0, 0, 0, 0}}},
		{"AUTH_DH", xdr.OpaqueAuth{Flavor: xdr.FlavorDH, Body: []byte{0, 0, 0, 0}}},
		{"AUTH_SYS truncated", truncated},
		{"AUTH_SYS 17 groups", long},
	} {
		for _, c := range []struct {
			proc uint32
			args rigArgs
		}{
			{nfs.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: "new"}, Attr: modeSattr(0o644)}},
			{nfs.ProcMkdir, &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: e.root, Name: "newdir"}}},
			{nfs.ProcSetattr, &nfs3.SetattrArgs{Object: f, NewAttr: modeSattr(0o600)}},
			{nfs.ProcAccess, &nfs3.AccessArgs{Object: f, Access: nfs3.AccessRead}},
			{nfs.ProcRemove, &nfs3.RemoveArgs{Object: nfs3.DirOpArgs{Dir: e.root, Name: "f"}}},
			{nfs.ProcRead, &nfs3.ReadArgs{File: f, Count: 10}},
			{nfs.ProcWrite, &nfs3.WriteArgs{File: f, Count: 1, Data: []byte("x"), Stable: nfs3.FileSync}},
			{nfs.ProcLookup, &nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: "f"}}},
			{nfs.ProcReaddir, &nfs3.ReaddirArgs{Dir: e.root, Count: 4096}},
		} {
			what := cred.name + " " + nfs.ProcName(nfs.ProgNFS, 3, c.proc)
			rh, rest := e.rpc(cred.auth, c.proc, c.args.Append(nil))
			require.Equal(t, xdr.MsgDenied, rh.Stat, what)
			require.Equal(t, xdr.RejectAuthError, rh.RejectStat, what)
			require.Equal(t, xdr.AuthBadCred, rh.AuthStat, what)
			require.Empty(t, rest, what)
		}
	}
	require.False(t, e.exists("new"))
	require.False(t, e.exists("newdir"))
	st := e.stat("f")
	require.Equal(t, uint32(0o644), st.Mode&0o7777)
	require.EqualValues(t, 4, st.Size)
	// The connection still serves good credentials.
	require.Equal(t, nfs3.OK, e.read(credUser, f).Status)
}

// TestIdentityAccess: ACCESS (RFC 1813 §3.3.4) answers for its caller,
// as knfsd's nfsd_access: the owner of a 0600 file may read, modify and
// extend it, not execute it; another user nothing; root
// (no_root_squash) everything but executing a file no one may execute.
// A directory grants READ, LOOKUP, MODIFY, EXTEND and DELETE by its
// read, search and write permissions.
func TestIdentityAccess(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{Squash: server.NoRootSquash})
	const fileBits = nfs3.AccessRead | nfs3.AccessModify | nfs3.AccessExtend | nfs3.AccessExecute
	const dirBits = nfs3.AccessRead | nfs3.AccessLookup | nfs3.AccessModify | nfs3.AccessExtend | nfs3.AccessDelete
	e.fileAs("f600", "", 0o600, 1234, 1234)
	e.fileAs("f755", "", 0o755, 1234, 1234)
	e.fileAs("f640g", "", 0o640, 1235, 1000) // group 1000: credUser's supplementary group
	e.fileAs("f444", "", 0o444, 1234, 1234)
	e.mkdirAs("d700", 0o700, 1234, 1234)
	e.mkdirAs("d755", 0o755, 1234, 1234)
	e.mkdirAs("d1777", 0o1777, 0, 0)
	e.mkdirAs("d311", 0o311, 1235, 1235) // search and write, no read, for its owner
	e.mkdirAs("d600", 0o600, 1235, 1235) // read and write, no search, for its owner
	for _, c := range []struct {
		name string
		who  xdr.OpaqueAuth
		ask  uint32
		want uint32
	}{
		{"f600", credUser, fileBits, nfs3.AccessRead | nfs3.AccessModify | nfs3.AccessExtend},
		{"f600", credOther, fileBits, 0},
		{"f600", credRoot, fileBits, nfs3.AccessRead | nfs3.AccessModify | nfs3.AccessExtend},
		{"f600", credUser, nfs3.AccessRead, nfs3.AccessRead}, // only what was asked
		{"f755", credUser, fileBits, fileBits},
		{"f755", credOther, fileBits, nfs3.AccessRead | nfs3.AccessExecute},
		{"f755", credRoot, fileBits, fileBits},
		{"f640g", credUser, fileBits, nfs3.AccessRead}, // by its supplementary group
		{"f640g", credOther, fileBits, nfs3.AccessRead | nfs3.AccessModify | nfs3.AccessExtend},
		{"f444", credUser, fileBits, nfs3.AccessRead}, // no owner override in ACCESS
		{"d700", credUser, dirBits, dirBits},
		{"d700", credOther, dirBits, 0},
		{"d700", credRoot, dirBits, dirBits},
		{"d755", credOther, dirBits, nfs3.AccessRead | nfs3.AccessLookup},
		{"d1777", credOther, dirBits, dirBits},
		{"d311", credOther, dirBits, nfs3.AccessLookup | nfs3.AccessModify | nfs3.AccessExtend | nfs3.AccessDelete},
		{"d311", credUser, dirBits, nfs3.AccessLookup},
		{"d600", credOther, dirBits, nfs3.AccessRead}, // changing entries needs search too
	} {
		res := e.access(c.who, e.fh(c.name), c.ask)
		require.Equal(t, nfs3.OK, res.Status, c.name)
		require.Equal(t, c.want, res.Access, "ACCESS %#x of %s by uid %d", c.ask, c.name, credUID(c.who))
		require.True(t, res.ObjAttr.Set, "ACCESS carries the object's attributes")
	}
}

// credUID is the uid of an AUTH_SYS credential.
func credUID(a xdr.OpaqueAuth) uint32 {
	var s xdr.AuthSys
	if a.Flavor != xdr.FlavorSys || s.Unmarshal(a.Body) != nil {
		return 65534
	}
	return s.UID
}

// TestIdentityUnprivileged: a server whose process cannot switch
// identities says so (IdentitySwitching false, with the reason), warns
// once in its log that every call runs as the process's uid, and runs
// every call as the process: a file that "uid 5555" creates belongs to
// the process's uid. The server runs in a child process, the test binary
// run again as uid 1234.
func TestIdentityUnprivileged(t *testing.T) {
	if os.Getenv("NFS_IDENTITY_CHILD") == "1" {
		unprivilegedChild(t)
		return
	}
	requireIDSwitching(t)
	self, err := os.Executable()
	require.NoError(t, err)
	// The go tool's build directory is closed to other users: run a
	// copy from a directory they may enter.
	shared := t.TempDir()
	require.NoError(t, os.Chmod(shared, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(shared), 0o755))
	exe := filepath.Join(shared, "nfs.test")
	b, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, b, 0o755))
	cmd := exec.Command(exe, "-test.run=^TestIdentityUnprivileged$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "NFS_IDENTITY_CHILD=1", "TMPDIR=/tmp")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1234, Gid: 1234}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "identity child: switching=false uid=1234 owner=1234:1234\n", "%s", out)
	require.Contains(t, string(out), "--- PASS: TestIdentityUnprivileged", "%s", out)
}

// unprivilegedChild is TestIdentityUnprivileged in the child, as uid
// 1234 without capabilities.
func unprivilegedChild(t *testing.T) {
	require.Equal(t, 1234, os.Geteuid(), "the child runs as uid 1234")
	var logs logBuffer
	dir := t.TempDir()
	d, err := server.DirFS(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	h, err := server.NewDirHandler(d, server.DirHandlerOptions{IndexOnly: true})
	require.NoError(t, err)
	// Not startServer: its rule that RootSquash becomes NoRootSquash is
	// for servers that switch identities.
	srv, err := server.New(server.Config{Handler: h, RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0",
		Transport: transport.Config{Provider: &soft.Provider{}}, Rpcbind: server.RpcbindConfig{Disable: true},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, server.ErrClosed)
	})

	switching, why := srv.IdentitySwitching()
	require.False(t, switching)
	require.Error(t, why, "the reason it cannot switch")
	warnings := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, warnings, 1, "one warning: %q", logs.String())
	require.Contains(t, warnings[0], "level=WARN")
	require.Contains(t, warnings[0], "every call runs as uid 1234")

	e := &nfsRig{t: t, dir: dir, srv: srv, root: mountRoot(t, srv).Data, c: dialRDMANFS(t, srv)}
	res := e.create(sysCred(5555, 5555), e.root, "by5555", 0o644)
	require.Equal(t, nfs3.OK, res.Status)
	st := e.stat("by5555")
	require.Equal(t, [2]uint32{1234, 1234}, [2]uint32{st.Uid, st.Gid}, "created as the process")
	require.Equal(t, [2]uint32{1234, 1234}, [2]uint32{res.ObjAttr.Attr.UID, res.ObjAttr.Attr.GID})
	// The process's own access decides a WRITE: a file made read-only
	// is not written through the descriptor the open-file cache kept
	// from before (SETATTR rechecks it), as an open now would refuse.
	fh := res.Obj.FH
	require.Equal(t, nfs3.OK, e.write(sysCred(5555, 5555), fh, 0, "a").Status)
	require.Equal(t, nfs3.OK, e.setattr(sysCred(5555, 5555), fh, nfs3.Sattr{SetMode: true, Mode: 0o444}).Status)
	require.Equal(t, nfs3.ErrAcces, e.write(sysCred(5555, 5555), fh, 1, "b").Status, "a WRITE of the read-only file")
	require.Equal(t, nfs3.OK, e.setattr(sysCred(5555, 5555), fh, nfs3.Sattr{SetMode: true, Mode: 0o644}).Status)
	require.Equal(t, nfs3.OK, e.write(sysCred(5555, 5555), fh, 1, "c").Status, "writable again")
	got, err := os.ReadFile(e.path("by5555"))
	require.NoError(t, err)
	require.Equal(t, "ac", string(got))
	// No more warnings for the calls.
	require.Len(t, strings.Split(strings.TrimSpace(logs.String()), "\n"), 1, "%q", logs.String())
	fmt.Printf("identity child: switching=false uid=%d owner=%d:%d\n", os.Geteuid(), st.Uid, st.Gid)
}

// logBuffer is a bytes.Buffer safe for concurrent use (the server's
// goroutines log).
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// aclAccess is a system.posix_acl_access value (the kernel's
// posix_acl_xattr format, version 2): the owner rw-, a named user's perm,
// the owning group r--, the mask, the others' perm. Setting it sets the
// file's mode bits too (the group's from the mask).
func aclAccess(uid, perm, mask, other uint16) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range [][3]uint32{{0x01, 6, 0xffffffff}, {0x02, uint32(perm), uint32(uid)}, {0x04, 4, 0xffffffff}, {0x10, uint32(mask), 0xffffffff}, {0x20, uint32(other), 0xffffffff}} {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// TestIdentityModeAndACL: a READ, WRITE or LOOKUP that a file's mode
// bits grant its caller is granted without handing the call to an
// identity thread, by the kernel's rules (the first class that applies
// decides: a group member the group bits refuse is refused, whatever the
// others' bits); what the mode bits refuse, and any file with an access
// ACL, the kernel decides as the caller (an ACL entry refusing a user
// what the others' bits grant, one granting what the mode bits refuse).
func TestIdentityModeAndACL(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	e.mkdirAs("d", 0o755, 0, 0)
	e.fileAs("d/world", "w", 0o644, 4321, 4321)     // others r: granted
	e.fileAs("d/writable", "w", 0o666, 4321, 4321)  // others rw: granted
	e.fileAs("d/private", "p", 0o600, 4321, 4321)   // refused
	e.fileAs("d/grouped", "g", 0o604, 4321, 1000)   // credUser's group ---: refused
	e.fileAs("d/exec", "x", 0o711, 4321, 4321)      // read as execute: granted
	e.fileAs("d/acl-deny", "a", 0o644, 4321, 4321)  // user:1234:--- refuses
	e.fileAs("d/acl-grant", "a", 0o600, 4321, 4321) // user:1234:r-- grants
	if err := unix.Setxattr(e.path("d/acl-deny"), "system.posix_acl_access", aclAccess(1234, 0, 4, 4), 0); err != nil {
		t.Fatalf("setting an ACL on the test's file system: %v", err)
	}
	if err := unix.Setxattr(e.path("d/acl-grant"), "system.posix_acl_access", aclAccess(1234, 4, 4, 0), 0); err != nil {
		t.Fatal(err)
	}
	d := e.fh("d")
	fh := map[string][]byte{}
	for _, n := range []string{"world", "writable", "private", "grouped", "exec", "acl-deny", "acl-grant"} {
		fh[n] = e.fh("d/" + n)
	}

	before := server.IdentityHandOffs(e.srv)
	require.Equal(t, nfs3.OK, e.read(credUser, fh["world"]).Status, "READ of a 0644 file")
	require.Equal(t, nfs3.OK, e.read(credUser, fh["exec"]).Status, "READ of a 0711 file (read as execute)")
	require.Equal(t, nfs3.OK, e.write(credUser, fh["writable"], 0, "x").Status, "WRITE to a 0666 file")
	require.Equal(t, nfs3.OK, e.lookup(credUser, d, "world").Status, "LOOKUP in a 0755 directory")
	require.Equal(t, before, server.IdentityHandOffs(e.srv), "calls the mode bits grant were handed to an identity thread")

	require.Equal(t, nfs3.ErrAcces, e.read(credUser, fh["private"]).Status, "READ of another's 0600 file")
	require.Equal(t, nfs3.ErrAcces, e.write(credUser, fh["world"], 0, "x").Status, "WRITE to a 0644 file")
	require.Equal(t, nfs3.ErrAcces, e.read(credUser, fh["grouped"]).Status, "READ of a 0604 file by a member of its group")
	require.Equal(t, nfs3.OK, e.read(credOther, fh["grouped"]).Status, "READ of a 0604 file by another")
	require.Equal(t, nfs3.ErrAcces, e.read(credUser, fh["acl-deny"]).Status, "READ refused by an ACL entry")
	require.Equal(t, nfs3.OK, e.read(credOther, fh["acl-deny"]).Status, "READ of the same file by another user")
	res := e.read(credUser, fh["acl-grant"])
	require.Equal(t, nfs3.OK, res.Status, "READ granted by an ACL entry")
	require.Equal(t, "a", string(res.Data))
	require.Equal(t, nfs3.ErrAcces, e.read(credOther, fh["acl-grant"]).Status, "READ of the same file by another user")
	require.Greater(t, server.IdentityHandOffs(e.srv), before, "refusals and ACLs are the kernel's to decide, as the caller")
}
