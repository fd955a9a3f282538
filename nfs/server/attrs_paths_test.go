package server_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestAttrTimesAllPaths: every reply's attributes report the file's own
// atime, mtime and ctime, and its mode's setuid, setgid and sticky bits
// as POSIX bits (RFC 1813 §2.6, fattr3): GETATTR, LOOKUP, READDIRPLUS,
// READ and WRITE as SETATTR's.
func TestAttrTimesAllPaths(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	e.fileAs("f", "data", 0o1644, 0, 0)
	e.mkdirAs("d", 0o1777, 0, 0)
	f := e.fh("f")
	atime := nfs3.Time{Sec: 1_000_000_001, Nsec: 123_456_789}
	mtime := nfs3.Time{Sec: 1_100_000_002, Nsec: 987_654_321}
	res := e.setattr(credRoot, f, nfs3.Sattr{
		Atime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: atime},
		Mtime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: mtime},
	})
	require.Equal(t, nfs3.OK, res.Status)
	want := res.Wcc.After.Attr
	require.Equal(t, atime, want.Atime)
	times := func(a nfs3.Fattr) [3]nfs3.Time { return [3]nfs3.Time{a.Atime, a.Mtime, a.Ctime} }
	var rdp nfs3.Fattr
	for _, en := range e.readdirplus(credRoot, e.root).Entries {
		if en.Name == "f" {
			rdp = en.Attr.Attr
		}
	}
	for _, c := range []struct {
		what string
		got  nfs3.Fattr
	}{
		{"GETATTR", e.getattr(f)},
		{"LOOKUP", e.lookup(credRoot, e.root, "f").ObjAttr.Attr},
		{"READDIRPLUS", rdp},
	} {
		t.Run(c.what+" times", func(t *testing.T) {
			require.Equal(t, times(want), times(c.got), "%s: atime, mtime, ctime", c.what)
		})
		t.Run(c.what+" mode", func(t *testing.T) {
			require.Equal(t, uint32(0o1644), c.got.Mode, "%s: mode", c.what)
		})
	}
	t.Run("GETATTR dir mode", func(t *testing.T) {
		require.Equal(t, uint32(0o1777), e.getattr(e.fh("d")).Mode, "GETATTR of a 1777 directory: mode")
	})
	t.Run("READ times", func(t *testing.T) {
		r := e.read(credRoot, f)
		require.Equal(t, nfs3.OK, r.Status)
		// relatime may advance atime, never to mtime.
		require.NotEqual(t, mtime, r.FileAttr.Attr.Atime, "READ: atime")
		require.NotEqual(t, mtime, r.FileAttr.Attr.Ctime, "READ: ctime")
	})
	t.Run("WRITE wcc", func(t *testing.T) {
		pastJiffy()
		w := e.write(credRoot, f, 0, "D")
		require.Equal(t, nfs3.OK, w.Status)
		require.Equal(t, uint32(0o1644), w.Wcc.After.Attr.Mode, "WRITE: wcc after mode")
		require.NotEqual(t, w.Wcc.After.Attr.Mtime, w.Wcc.After.Attr.Atime, "WRITE: wcc after atime is not mtime")
	})
}

// TestLookupNamesAndCredentials: LOOKUP refuses the names knfsd's
// decoder refuses (GARBAGE_ARGS), and GETATTR and NULL refuse a
// credential the server does not take (AUTH_BADCRED).
func TestLookupNamesAndCredentials(t *testing.T) {
	requireIDSwitching(t)
	e := newRig(t, server.Config{})
	for _, bad := range []string{"", "a/b", "x\x00y", strings.Repeat("n", 256)} {
		e.garbage(credUser, nfs.ProcLookup, &nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: e.root, Name: bad}}, "LOOKUP of a bad name")
	}
	gss := xdr.OpaqueAuth{Flavor: xdr.FlavorGSS, Body: []byte{0, 0, 0, 1, 0, 0, 0, 0}}
	rh, _ := e.rpc(gss, nfs.ProcGetattr, (&nfs3.GetattrArgs{Object: e.root}).Append(nil))
	require.Equal(t, xdr.MsgDenied, rh.Stat, "GETATTR with RPCSEC_GSS")
	bad := credUser
	bad.Body = bad.Body[:12]
	rh, _ = e.rpc(bad, nfs.ProcNull, nil)
	require.Equal(t, xdr.MsgDenied, rh.Stat, "NULL with an AUTH_SYS body that does not decode")
}
