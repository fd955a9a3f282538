package server_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/mount"
	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/nfstest"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ioGuard bounds each exchange so that a bug fails a test instead of
// hanging it.
const ioGuard = 30 * time.Second

// newTestExport returns a directory holding the file "a" with "hello"
// and a DirHandler exporting it.
func newTestExport(t *testing.T) (string, *server.DirHandler) {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a"), []byte("hello"), 0o644))
	return root, exportDir(t, root)
}

// newTestDir is newTestExport's DirHandler.
func newTestDir(t *testing.T) *server.DirHandler {
	_, h := newTestExport(t)
	return h
}

// startServer serves cfg.Handler on the soft provider and loopback TCP,
// with the rpcbind registration off unless cfg says otherwise.
func startServer(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	return nfstest.Serve(t, cfg)
}

// msgConn carries whole RPC messages: a requester *transport.Conn, or
// recordConn over TCP.
type msgConn interface {
	WriteMsg(msg []byte) error
	ReadMsg(buf []byte) ([]byte, error)
}

type recordConn struct{ net.Conn }

func (r recordConn) WriteMsg(msg []byte) error {
	_, err := r.Write(xdr.AppendRecord(nil, msg, 0))
	return err
}

func (r recordConn) ReadMsg(buf []byte) ([]byte, error) { return xdr.ReadRecord(r, buf, 4<<20) }

func dialTCP(t *testing.T, addr net.Addr) msgConn {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(ioGuard)))
	t.Cleanup(func() { _ = c.Close() })
	return recordConn{c}
}

func dialRDMA(t *testing.T, srv *server.Server) *transport.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	defer cancel()
	c, err := transport.Dial(ctx, srv.RDMAAddr().String(), &transport.Config{Provider: &soft.Provider{}})
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(ioGuard)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// call sends one call with an AUTH_SYS credential and returns the reply
// header and the bytes after it.
func call(t *testing.T, c msgConn, xid, prog, vers, proc uint32, args []byte) (xdr.ReplyHeader, []byte) {
	t.Helper()
	sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("client")}
	h := xdr.CallHeader{XID: xid, Prog: prog, Vers: vers, Proc: proc, Cred: sys.OpaqueAuth(nil)}
	require.NoError(t, c.WriteMsg(append(h.Append(nil), args...)))
	rep, err := c.ReadMsg(nil)
	require.NoError(t, err)
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(rep)
	require.NoError(t, err)
	require.Equal(t, xid, rh.XID)
	return rh, rep[off:]
}

// results makes a call that must succeed and decodes its results.
func results[T any](t *testing.T, c msgConn, xid, prog, vers, proc uint32, args io.WriterTo, read func(io.Reader) (T, int64, error)) T {
	t.Helper()
	rh, res := call(t, c, xid, prog, vers, proc, encode(t, args))
	require.Equal(t, xdr.MsgAccepted, rh.Stat)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat, nfs.ProcName(prog, vers, proc))
	r := bytes.NewReader(res)
	v, _, err := read(r)
	require.NoError(t, err)
	require.Zero(t, r.Len(), "bytes after the results of %s", nfs.ProcName(prog, vers, proc))
	return v
}

// mountRoot mounts "/" over TCP and returns the root handle.
func mountRoot(t *testing.T, srv *server.Server) nfsv3.NfsFh3 {
	t.Helper()
	tc := dialTCP(t, srv.TCPAddr())
	res := results(t, tc, 1, nfs.ProgMount, 3, nfs.MountProcMnt, writerFunc(func(w io.Writer) (int64, error) {
		return mount.WriteDirpath(w, "/")
	}), mount.ReadMountres3)
	ok, isOK := res.(*mount.Mountres3_MNT3_OK)
	require.True(t, isOK, "MNT: %v", res.GetFhsStatus())
	return nfsv3.NfsFh3{Data: ok.Mountinfo.Fhandle}
}

// lookup returns the handle of name in dir.
func lookup(t *testing.T, c msgConn, xid uint32, dir nfsv3.NfsFh3, name string) nfsv3.NfsFh3 {
	t.Helper()
	res := results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcLookup,
		&nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: dir, Name: name}}, nfsv3.ReadLookup3res)
	ok, isOK := res.(*nfsv3.Lookup3res_NFS3_OK)
	require.True(t, isOK, "LOOKUP %s: %v", name, res.GetStatus())
	return ok.Resok.Object
}

// TestServerPrograms: what the server answers besides NFS and MOUNT
// calls: PROG_UNAVAIL for NFSACL (which the Linux client probes at every
// mount) and NLM, and for NFS over TCP unless NFSOverTCP; PROG_MISMATCH
// for other versions of NFS and MOUNT; PROC_UNAVAIL past COMMIT;
// RPC_MISMATCH for RPC version 3.
func TestServerPrograms(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := startServer(t, server.Config{Handler: newTestDir(t), OnCall: func(network string, h *xdr.CallHeader) {
		mu.Lock()
		seen = append(seen, network+" "+nfs.ProcName(h.Prog, h.Vers, h.Proc))
		mu.Unlock()
	}})
	rc := dialRDMA(t, srv)
	tc := dialTCP(t, srv.TCPAddr())

	rh, _ := call(t, rc, 1, nfs.ProgNFS, 3, nfs.ProcNull, nil)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	rh, _ = call(t, rc, 2, nfs.ProgNFSACL, 3, 0, nil)
	require.Equal(t, xdr.MsgAccepted, rh.Stat)
	require.Equal(t, xdr.AcceptProgUnavail, rh.AcceptStat)
	rh, _ = call(t, rc, 3, nfs.ProgNLM, 4, 0, nil)
	require.Equal(t, xdr.AcceptProgUnavail, rh.AcceptStat)
	rh, _ = call(t, rc, 4, nfs.ProgNFS, 4, 0, nil)
	require.Equal(t, xdr.AcceptProgMismatch, rh.AcceptStat)
	require.Equal(t, xdr.Mismatch{Low: 3, High: 3}, rh.Mismatch)
	rh, _ = call(t, rc, 5, nfs.ProgNFS, 3, 22, nil)
	require.Equal(t, xdr.AcceptProcUnavail, rh.AcceptStat)
	rh, _ = call(t, tc, 6, nfs.ProgMount, 1, 0, nil)
	require.Equal(t, xdr.AcceptProgMismatch, rh.AcceptStat)
	rh, _ = call(t, tc, 7, nfs.ProgMount, 3, nfs.MountProcNull, nil)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	rh, _ = call(t, tc, 8, nfs.ProgNFS, 3, nfs.ProcNull, nil)
	require.Equal(t, xdr.AcceptProgUnavail, rh.AcceptStat, "NFS over TCP is off")

	// RPC version 3: MSG_DENIED, RPC_MISMATCH 2..2 (RFC 5531 §9).
	msg := xdr.AppendUint32(nil, 9)
	msg = xdr.AppendUint32(msg, uint32(xdr.MsgCall))
	msg = xdr.AppendUint32(msg, 3)
	msg = append(msg, make([]byte, 28)...)
	require.NoError(t, tc.WriteMsg(msg))
	rep, err := tc.ReadMsg(nil)
	require.NoError(t, err)
	_, err = rh.Unmarshal(rep)
	require.NoError(t, err)
	require.Equal(t, xdr.MsgDenied, rh.Stat)
	require.Equal(t, xdr.RejectRPCMismatch, rh.RejectStat)

	// The connections still work, and every call was seen.
	rh, _ = call(t, rc, 10, nfs.ProgNFS, 3, nfs.ProcNull, nil)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"rdma NFS3 NULL", "rdma NFSACL3 NULL", "rdma prog 100021 v4 proc 0", "rdma prog 100003 v4 proc 0",
		"rdma prog 100003 v3 proc 22", "tcp prog 100005 v1 proc 0", "tcp MOUNT3 NULL", "tcp NFS3 NULL", "rdma NFS3 NULL"}, seen)
}

// TestServerNFSOverTCP: with NFSOverTCP, NFS is served on the TCP listener
// too, with the same handles as over RDMA.
func TestServerNFSOverTCP(t *testing.T) {
	srv := startServer(t, server.Config{Handler: newTestDir(t), NFSOverTCP: true})
	root := mountRoot(t, srv)
	tc := dialTCP(t, srv.TCPAddr())
	fhTCP := lookup(t, tc, 2, root, "a")
	fhRDMA := lookup(t, dialRDMA(t, srv), 2, root, "a")
	require.Equal(t, fhTCP, fhRDMA)
}

// TestServerLink: LINK (RFC 1813 §3.3.15) makes a hard link, with the
// file's attributes and the directory's wcc_data; the kernel's and
// knfsd's answers to the wrong types, names and handles.
func TestServerLink(t *testing.T) {
	root, h := newTestExport(t)
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	rc := dialRDMA(t, srv)
	a := lookup(t, rc, 2, rootFH, "a")

	res := results(t, rc, 3, nfs.ProgNFS, 3, nfs.ProcLink,
		&nfsv3.Link3args{File: a, Link: nfsv3.Diropargs3{Dir: rootFH, Name: "b"}}, nfsv3.ReadLink3res)
	ok, isOK := res.(*nfsv3.Link3res_NFS3_OK)
	require.True(t, isOK, "LINK: %v", res.GetStatus())
	attrs, isAttrs := ok.Resok.FileAttributes.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, isAttrs, "post-op attributes of the file")
	require.Equal(t, nfsv3.NF3REG, attrs.Attributes.Type)
	require.EqualValues(t, 5, attrs.Attributes.Size)
	require.EqualValues(t, 2, attrs.Attributes.Nlink)
	_, isPre := ok.Resok.LinkdirWcc.Before.(*nfsv3.PreOpAttr_TRUE)
	require.True(t, isPre, "pre-op attributes of the directory")
	dirAttrs, isPost := ok.Resok.LinkdirWcc.After.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, isPost, "post-op attributes of the directory")
	require.Equal(t, nfsv3.NF3DIR, dirAttrs.Attributes.Type)
	fa, err := os.Stat(filepath.Join(root, "a"))
	require.NoError(t, err)
	fb, err := os.Stat(filepath.Join(root, "b"))
	require.NoError(t, err)
	require.True(t, os.SameFile(fa, fb), "b is a hard link to a")
	b := lookup(t, rc, 4, rootFH, "b")
	require.Equal(t, a, b, "one file, one handle")

	linkStatus := func(xid uint32, file, dir nfsv3.NfsFh3, name string) nfsv3.Nfsstat3 {
		t.Helper()
		return results(t, rc, xid, nfs.ProgNFS, 3, nfs.ProcLink,
			&nfsv3.Link3args{File: file, Link: nfsv3.Diropargs3{Dir: dir, Name: name}}, nfsv3.ReadLink3res).GetStatus()
	}
	require.Equal(t, nfsv3.NFS3ERR_EXIST, linkStatus(5, a, rootFH, "b"))
	require.Equal(t, nfsv3.NFS3ERR_NOTDIR, linkStatus(6, a, a, "c"))
	require.Equal(t, nfsv3.NFS3ERR_ISDIR, linkStatus(7, rootFH, rootFH, "c"))
	require.Equal(t, nfsv3.NFS3ERR_EXIST, linkStatus(8, a, rootFH, ".."))
	require.Equal(t, nfsv3.NFS3ERR_BADHANDLE, linkStatus(9, nfsv3.NfsFh3{Data: []byte("no such handle")}, rootFH, "c"))
	require.NoError(t, os.Remove(filepath.Join(root, "b")))
	require.NoError(t, os.Remove(filepath.Join(root, "a")))
	require.Equal(t, nfsv3.NFS3ERR_STALE, linkStatus(10, a, rootFH, "c"), "a removed file")

	// Garbage (knfsd's too): a name longer than NAME_MAX, a handle
	// longer than NFS3_FHSIZE.
	long := encode(t, &nfsv3.Link3args{File: rootFH, Link: nfsv3.Diropargs3{Dir: rootFH, Name: string(bytes.Repeat([]byte("n"), 256))}})
	for i, args := range [][]byte{long, xdr.AppendOpaque(nil, make([]byte, 65))} {
		rh, _ := call(t, rc, 11+uint32(i), nfs.ProgNFS, 3, nfs.ProcLink, args)
		require.Equal(t, xdr.AcceptGarbageArgs, rh.AcceptStat)
	}
}

func write(t *testing.T, c msgConn, xid uint32, fh nfsv3.NfsFh3, off uint64, data []byte, stable nfsv3.StableHow) nfsv3.Write3res {
	t.Helper()
	return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcWrite,
		&nfsv3.Write3args{File: fh, Offset: off, Count: uint32(len(data)), Stable: stable, Data: data}, nfsv3.ReadWrite3res)
}

// TestServerWriteCommit: WRITE replies say what happened (RFC 1813
// §3.3.7): UNSTABLE without a sync, FILE_SYNC after the data was made
// durable (written with RWF_SYNC), NFS3ERR_IO when that failed; all carry
// the server's write verifier, which COMMIT (§3.3.21) returns after
// syncing, and which changes with every server.
func TestServerWriteCommit(t *testing.T) {
	root, h := newTestExport(t)
	require.NoError(t, os.WriteFile(filepath.Join(root, "gone"), nil, 0o644))
	srv := startServer(t, server.Config{Handler: h})
	verf := srv.WriteVerifier()
	rootFH := mountRoot(t, srv)
	rc := dialRDMA(t, srv)
	a := lookup(t, rc, 2, rootFH, "a")
	gone := lookup(t, rc, 3, rootFH, "gone")
	require.NoError(t, os.Remove(filepath.Join(root, "gone")))

	var mu sync.Mutex
	var synced []string
	var syncErr error
	defer server.WrapSyncWrite(func(real server.SyncWriteFunc) server.SyncWriteFunc {
		return func(fd int, b []byte, off int64) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			if syncErr != nil {
				return 0, syncErr
			}
			synced = append(synced, string(b))
			return real(fd, b, off)
		}
	})()
	syncs := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), synced...)
	}

	res := write(t, rc, 4, a, 0, []byte("HE"), nfsv3.UNSTABLE)
	ok, isOK := res.(*nfsv3.Write3res_NFS3_OK)
	require.True(t, isOK, "WRITE: %v", res.GetStatus())
	require.Equal(t, nfsv3.UNSTABLE, ok.Resok.Committed)
	require.Equal(t, verf, ok.Resok.Verf)
	require.EqualValues(t, 2, ok.Resok.Count)
	require.Empty(t, syncs(), "no sync for an UNSTABLE write")

	cres := results(t, rc, 5, nfs.ProgNFS, 3, nfs.ProcCommit, &nfsv3.Commit3args{File: a}, nfsv3.ReadCommit3res)
	cok, isOK := cres.(*nfsv3.Commit3res_NFS3_OK)
	require.True(t, isOK, "COMMIT: %v", cres.GetStatus())
	require.Equal(t, verf, cok.Resok.Verf)
	_, isPre := cok.Resok.FileWcc.Before.(*nfsv3.PreOpAttr_TRUE)
	require.True(t, isPre)
	_, isPost := cok.Resok.FileWcc.After.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, isPost)

	for i, stable := range []nfsv3.StableHow{nfsv3.DATA_SYNC, nfsv3.FILE_SYNC} {
		res = write(t, rc, 6+uint32(i), a, 2, []byte("LL"), stable)
		ok, isOK = res.(*nfsv3.Write3res_NFS3_OK)
		require.True(t, isOK, "WRITE: %v", res.GetStatus())
		require.Equal(t, nfsv3.FILE_SYNC, ok.Resok.Committed)
		require.Equal(t, verf, ok.Resok.Verf)
	}
	require.Equal(t, []string{"LL", "LL"}, syncs())
	got, err := os.ReadFile(filepath.Join(root, "a"))
	require.NoError(t, err)
	require.Equal(t, "HELLo", string(got))

	// A failed sync is an error, not FILE_SYNC.
	mu.Lock()
	syncErr = unix.EIO
	mu.Unlock()
	res = write(t, rc, 8, a, 0, []byte("x"), nfsv3.FILE_SYNC)
	require.Equal(t, nfsv3.NFS3ERR_IO, res.GetStatus())
	cres = results(t, rc, 9, nfs.ProgNFS, 3, nfs.ProcCommit, &nfsv3.Commit3args{File: gone}, nfsv3.ReadCommit3res)
	require.Equal(t, nfsv3.NFS3ERR_STALE, cres.GetStatus())
	cres = results(t, rc, 10, nfs.ProgNFS, 3, nfs.ProcCommit, &nfsv3.Commit3args{File: nfsv3.NfsFh3{Data: []byte("junk")}}, nfsv3.ReadCommit3res)
	require.Equal(t, nfsv3.NFS3ERR_BADHANDLE, cres.GetStatus())

	// Another server start, another verifier.
	other := startServer(t, server.Config{Handler: h})
	require.NotEqual(t, verf, other.WriteVerifier())
}

// TestServerDRC: a retransmitted REMOVE, on a new connection as the Linux
// client sends it after reconnecting, gets the original reply from the
// duplicate request cache instead of NFS3ERR_NOENT from a second
// execution; the same XID with other arguments is a new call; idempotent
// calls are not cached.
func TestServerDRC(t *testing.T) {
	dir, h := newTestExport(t)
	for _, n := range []string{"r1", "r2"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	srv := startServer(t, server.Config{Handler: h})
	root := mountRoot(t, srv)
	rc := dialRDMA(t, srv)
	remove := func(c msgConn, xid uint32, name string) nfsv3.Nfsstat3 {
		t.Helper()
		return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcRemove,
			&nfsv3.Remove3args{Object: nfsv3.Diropargs3{Dir: root, Name: name}}, nfsv3.ReadRemove3res).GetStatus()
	}
	require.Equal(t, nfsv3.NFS3_OK, remove(rc, 100, "r1"))
	_, err := os.Stat(filepath.Join(dir, "r1"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Equal(t, server.DRCStats{Misses: 1, Entries: 1}, srv.DRCStats())

	rc2 := dialRDMA(t, srv)
	require.Equal(t, nfsv3.NFS3_OK, remove(rc2, 100, "r1"), "the retransmission's cached reply")
	require.Equal(t, server.DRCStats{Hits: 1, Misses: 1, Entries: 1}, srv.DRCStats())
	require.Equal(t, nfsv3.NFS3ERR_NOENT, remove(rc2, 101, "r1"), "a new call executes")
	require.Equal(t, nfsv3.NFS3_OK, remove(rc2, 100, "r2"), "same XID, other arguments: a new call")
	lookup(t, rc2, 100, root, "a")
	lookup(t, rc2, 100, root, "a")
	require.Equal(t, server.DRCStats{Hits: 1, Misses: 3, Entries: 3}, srv.DRCStats())
}

func TestNewServerErrors(t *testing.T) {
	_, err := server.New(server.Config{Transport: transport.Config{Provider: &soft.Provider{}}, RDMAAddr: "127.0.0.1:0"})
	require.Error(t, err, "no Handler")
	h := newTestDir(t)
	_, err = server.New(server.Config{Handler: h, RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0"})
	require.ErrorIs(t, err, transport.ErrNoProvider)
	var oe *net.OpError
	require.ErrorAs(t, err, &oe)
	_, err = server.New(server.Config{Handler: h, Transport: transport.Config{Provider: &soft.Provider{}},
		RDMAAddr: "127.0.0.1:0", TCPAddr: "256.0.0.1:0"})
	require.ErrorAs(t, err, &oe, "bad TCP address")
}

// TestServeContext: Serve ends when its context does, closing the Server;
// Close is idempotent, and Serve after Close fails.
func TestServeContext(t *testing.T) {
	srv, err := server.New(server.Config{Handler: newTestDir(t), Transport: transport.Config{Provider: &soft.Provider{}},
		RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Rpcbind: server.RpcbindConfig{Disable: true}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	c := dialRDMA(t, srv)
	rh, _ := call(t, c, 1, nfs.ProgNFS, 3, nfs.ProcNull, nil)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	cancel()
	require.ErrorIs(t, <-served, context.Canceled)
	_, err = c.ReadMsg(nil)
	require.Error(t, err, "the connection was closed")
	require.NoError(t, srv.Close())
	require.ErrorIs(t, srv.Serve(context.Background()), server.ErrClosed)
}
