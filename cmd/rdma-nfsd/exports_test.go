package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// exportsDirs makes two directories to export, a and b, in base (a
// t.TempDir), and names the exports file; write replaces its text.
func exportsDirs(t *testing.T) (base, a, b, file string, write func(text string)) {
	t.Helper()
	base = t.TempDir()
	a, b = filepath.Join(base, "a"), filepath.Join(base, "b")
	require.NoError(t, os.Mkdir(a, 0o755))
	require.NoError(t, os.Mkdir(b, 0o755))
	file = filepath.Join(base, "exports")
	write = func(text string) { require.NoError(t, os.WriteFile(file, []byte(text), 0o644)) }
	return base, a, b, file, write
}

// TestExportSet: an exports file's directories are opened once and kept
// across reloads while listed; a reload that fails (a bad line, a
// directory that is not there) changes nothing and names the line.
func TestExportSet(t *testing.T) {
	base, a, b, file, write := exportsDirs(t)

	x := &exportSet{file: file}
	defer x.close()
	write(a + " 127.0.0.1(rw)\n" + b + " *(ro)\n")
	exps, err := x.load()
	require.NoError(t, err)
	require.Len(t, exps, 2)
	require.Equal(t, a, exps[0].Path)
	require.Len(t, exps[0].Rules, 1)
	ha := exps[0].Handler
	x.keep(exps)

	write(a + " 10.0.0.0/8(ro)\n")
	exps, err = x.load()
	require.NoError(t, err)
	require.Len(t, exps, 1)
	require.Same(t, ha, exps[0].Handler, "an export kept keeps its handler")
	x.keep(exps)
	require.Len(t, x.open, 1, "the export removed is closed")

	write(a + " 10.0.0.0/8(ro)\n" + filepath.Join(base, "missing") + " *(rw)\n")
	_, err = x.load()
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), ":2:"), "the line: %v", err)
	write("relative *(rw)\n")
	_, err = x.load()
	require.ErrorContains(t, err, "exports:1:")
	require.Len(t, x.open, 1, "failed reloads open nothing")
}

// TestExportSetFSID: an export's fsid= names it in its handles and is
// the fsid of its attributes. A SIGHUP that changes its rules but not its
// fsid keeps its handles valid (MNT gives the same handle); one that
// changes the fsid makes them stale (knfsd's handles change with it); a
// file giving two exports one fsid is refused with its line and the
// exports in force stay; a restart with the same fsid takes the handles.
func TestExportSetFSID(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	require.NoError(t, os.Mkdir(a, 0o755))
	require.NoError(t, os.Mkdir(b, 0o755))
	file := filepath.Join(base, "exports")
	write := func(text string) { require.NoError(t, os.WriteFile(file, []byte(text), 0o644)) }
	reloads := 0
	hup := func(logs *syncBuffer, what string) {
		t.Helper()
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
		reloads++
		waitFor(t, what, func() bool {
			s := logs.String()
			return strings.Count(s, "rdma-nfsd: exports reloaded")+strings.Count(s, "exports file refused") == reloads
		})
	}
	start := func(ctx context.Context) (*server.Server, *syncBuffer, chan error) {
		return startRun(t, ctx, "-exports", file, "-addr", "127.0.0.1", "-rdma-port", "0", "-provider", "soft", "-rpcbind=false")
	}

	write(a + " 127.0.0.1(rw,insecure,fsid=5)\n" + b + " 127.0.0.1(rw,insecure)\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, logs, done := start(ctx)
	_, tcpAddr := srv.Addrs()
	fh := mntHandle(t, tcpAddr.String(), a)
	st, fsid := getattrFSID(t, srv.RDMAAddr().String(), fh)
	require.Zero(t, st)
	require.EqualValues(t, 5, fsid)

	write(a + " 127.0.0.1(ro,insecure,fsid=5)\n" + b + " 127.0.0.1(rw,insecure)\n")
	hup(logs, "the reload with the fsid unchanged")
	require.Contains(t, logs.String(), "exports reloaded")
	st, _ = getattrFSID(t, srv.RDMAAddr().String(), fh)
	require.Zero(t, st, "the handle stays valid")
	require.Equal(t, fh, mntHandle(t, tcpAddr.String(), a), "MNT gives the same handle")

	write(a + " 127.0.0.1(ro,insecure,fsid=5)\n" + b + " 127.0.0.1(rw,insecure,fsid=5)\n")
	hup(logs, "the refusal of a duplicate fsid")
	require.Regexp(t, `exports file refused.*exports:2: fsid 5: `+regexp.QuoteMeta(a)+` has it already \(line 1\)`, logs.String())
	st, _ = getattrFSID(t, srv.RDMAAddr().String(), fh)
	require.Zero(t, st, "the exports in force stay")

	write(a + " 127.0.0.1(ro,insecure,fsid=6)\n")
	hup(logs, "the reload with a new fsid")
	st, _ = getattrFSID(t, srv.RDMAAddr().String(), fh)
	require.EqualValues(t, 70, st, "NFS3ERR_STALE: the handles named fsid 5")
	fh6 := mntHandle(t, tcpAddr.String(), a)
	require.NotEqual(t, fh, fh6)
	st, fsid = getattrFSID(t, srv.RDMAAddr().String(), fh6)
	require.Zero(t, st)
	require.EqualValues(t, 6, fsid)
	cancel()
	require.NoError(t, <-done)

	// A restart, same file: the handles of fsid 6 are valid.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	srv, _, done = start(ctx)
	st, fsid = getattrFSID(t, srv.RDMAAddr().String(), fh6)
	require.Zero(t, st, "a handle across a restart")
	require.EqualValues(t, 6, fsid)
	cancel()
	require.NoError(t, <-done)
}

// mntHandle is the handle MNT of path gives.
func mntHandle(t *testing.T, addr, path string) []byte {
	t.Helper()
	fh, err := okResults(t, mnt(t, addr, path), "MNT").Opaque(64)
	require.NoError(t, err)
	return fh
}

// getattrFSID sends GETATTR of fh over RPC-over-RDMA (soft) and returns
// its nfsstat3 and, if NFS3_OK, the fsid of the attributes.
func getattrFSID(t *testing.T, addr string, fh []byte) (uint32, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, addr, &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
	require.NoError(t, err)
	defer c.Close()
	sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("test")}
	call := (&xdr.CallHeader{XID: 1, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcGetattr, Cred: sys.OpaqueAuth(nil)}).Append(nil)
	reply, err := c.Call(ctx, xdr.AppendOpaque(call, fh), nil)
	require.NoError(t, err)
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	require.NoError(t, err)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	r := xdr.NewReader(reply[off:])
	st, err := r.Uint32()
	require.NoError(t, err)
	if st != 0 {
		return st, 0
	}
	var attr nfs3.Fattr
	require.NoError(t, attr.Decode(&r))
	return st, attr.FSID
}
