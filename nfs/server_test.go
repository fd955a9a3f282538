package nfs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/mount"
	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ioGuard bounds each exchange so that a bug fails a test instead of
// hanging it.
const ioGuard = 30 * time.Second

// testFS is go-billy's memfs with Linker and Syncer, recording their calls.
type testFS struct {
	billy.Filesystem
	mu      sync.Mutex
	links   [][2]string
	syncs   []string
	syncErr error
	// openDelay slows OpenFile (go-nfs's WRITE opens the file), to hold
	// a forwarded call in go-nfs.
	openDelay time.Duration
}

func (fs *testFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	fs.mu.Lock()
	d := fs.openDelay
	fs.mu.Unlock()
	time.Sleep(d)
	return fs.Filesystem.OpenFile(name, flag, perm)
}

func (fs *testFS) Link(oldname, newname string) error {
	fs.mu.Lock()
	fs.links = append(fs.links, [2]string{oldname, newname})
	fs.mu.Unlock()
	// memfs has no hard links: a copy stands for one here.
	if _, err := fs.Lstat(newname); err == nil {
		return os.ErrExist
	}
	src, err := fs.Open(oldname)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := fs.Create(newname)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		return err
	}
	return dst.Close()
}

func (fs *testFS) Sync(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.syncs = append(fs.syncs, name)
	return fs.syncErr
}

func (fs *testFS) calls() (links [][2]string, syncs []string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([][2]string(nil), fs.links...), append([]string(nil), fs.syncs...)
}

var (
	_ nfs.Linker = (*testFS)(nil)
	_ nfs.Syncer = (*testFS)(nil)
)

// newTestFS returns a testFS holding the file "a" with "hello".
func newTestFS(t *testing.T) *testFS {
	fs := &testFS{Filesystem: memfs.New()}
	f, err := fs.Create("a")
	require.NoError(t, err)
	_, err = f.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return fs
}

// startServer serves fs on the soft provider and loopback TCP, with the
// rpcbind registration off unless cfg says otherwise.
func startServer(t *testing.T, cfg nfs.ServerConfig) *nfs.Server {
	t.Helper()
	cfg.Transport.Provider = &soft.Provider{}
	cfg.RDMAAddr = "127.0.0.1:0"
	if cfg.Squash == nfs.RootSquash && cfg.AnonUID == 0 {
		cfg.Squash = nfs.NoRootSquash // the tests run as root; squashing tests set AnonUID
	}
	if cfg.TCPAddr == "" {
		cfg.TCPAddr = "127.0.0.1:0"
	}
	if cfg.Rpcbind == (nfs.RpcbindConfig{}) {
		cfg.Rpcbind.Disable = true
	}
	srv, err := nfs.NewServer(cfg)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, nfs.ErrServerClosed)
	})
	return srv
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

func dialRDMA(t *testing.T, srv *nfs.Server) *transport.Conn {
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
func mountRoot(t *testing.T, srv *nfs.Server) nfsv3.NfsFh3 {
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

// TestServerPrograms: what the dispatch layer answers itself: PROG_UNAVAIL
// for NFSACL (which the Linux client probes at every mount) and NLM, and
// for NFS over TCP unless NFSOverTCP; PROG_MISMATCH for other versions of
// NFS and MOUNT; PROC_UNAVAIL past COMMIT; RPC_MISMATCH for RPC version 3.
func TestServerPrograms(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := startServer(t, nfs.ServerConfig{FS: newTestFS(t), OnCall: func(network string, h *xdr.CallHeader) {
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
	srv := startServer(t, nfs.ServerConfig{FS: newTestFS(t), NFSOverTCP: true})
	root := mountRoot(t, srv)
	tc := dialTCP(t, srv.TCPAddr())
	fhTCP := lookup(t, tc, 2, root, "a")
	fhRDMA := lookup(t, dialRDMA(t, srv), 2, root, "a")
	require.Equal(t, fhTCP, fhRDMA)
}

// TestServerLink: LINK (RFC 1813 §3.3.15), decoded and executed by the
// dispatch layer through the file system's Linker.
func TestServerLink(t *testing.T) {
	fs := newTestFS(t)
	srv := startServer(t, nfs.ServerConfig{FS: fs})
	root := mountRoot(t, srv)
	rc := dialRDMA(t, srv)
	a := lookup(t, rc, 2, root, "a")

	res := results(t, rc, 3, nfs.ProgNFS, 3, nfs.ProcLink,
		&nfsv3.Link3args{File: a, Link: nfsv3.Diropargs3{Dir: root, Name: "b"}}, nfsv3.ReadLink3res)
	ok, isOK := res.(*nfsv3.Link3res_NFS3_OK)
	require.True(t, isOK, "LINK: %v", res.GetStatus())
	attrs, isAttrs := ok.Resok.FileAttributes.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, isAttrs, "post-op attributes of the file")
	require.Equal(t, nfsv3.NF3REG, attrs.Attributes.Type)
	require.EqualValues(t, 5, attrs.Attributes.Size)
	_, isPre := ok.Resok.LinkdirWcc.Before.(*nfsv3.PreOpAttr_TRUE)
	require.True(t, isPre, "pre-op attributes of the directory")
	dirAttrs, isPost := ok.Resok.LinkdirWcc.After.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, isPost, "post-op attributes of the directory")
	require.Equal(t, nfsv3.NF3DIR, dirAttrs.Attributes.Type)
	links, _ := fs.calls()
	require.Equal(t, [][2]string{{"a", "b"}}, links)
	b := lookup(t, rc, 4, root, "b")
	require.NotEqual(t, a, b)

	linkStatus := func(xid uint32, file, dir nfsv3.NfsFh3, name string) nfsv3.Nfsstat3 {
		t.Helper()
		return results(t, rc, xid, nfs.ProgNFS, 3, nfs.ProcLink,
			&nfsv3.Link3args{File: file, Link: nfsv3.Diropargs3{Dir: dir, Name: name}}, nfsv3.ReadLink3res).GetStatus()
	}
	require.Equal(t, nfsv3.NFS3ERR_EXIST, linkStatus(5, a, root, "b"), "the Linker's os.ErrExist")
	require.Equal(t, nfsv3.NFS3ERR_NOTDIR, linkStatus(6, a, a, "c"))
	require.Equal(t, nfsv3.NFS3ERR_ISDIR, linkStatus(7, root, root, "c"))
	require.Equal(t, nfsv3.NFS3ERR_EXIST, linkStatus(8, a, root, ".."))
	require.Equal(t, nfsv3.NFS3ERR_STALE, linkStatus(9, nfsv3.NfsFh3{Data: []byte("no such handle")}, root, "c"))
	require.Equal(t, nfsv3.NFS3ERR_NAMETOOLONG, linkStatus(10, a, root, string(bytes.Repeat([]byte("n"), 256))))

	// Garbage: a handle longer than NFS3_FHSIZE.
	args := xdr.AppendOpaque(nil, make([]byte, 65))
	rh, res2 := call(t, rc, 11, nfs.ProgNFS, 3, nfs.ProcLink, args)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	require.Equal(t, []byte{0, 0, 0, 22}, res2[:4], "NFS3ERR_INVAL")
}

// TestServerLinkNotSupported: a file system without Linker answers LINK
// with NFS3ERR_NOTSUPP (and nothing reaches go-nfs's broken LINK).
func TestServerLinkNotSupported(t *testing.T) {
	fs := newTestFS(t)
	srv := startServer(t, nfs.ServerConfig{FS: fs.Filesystem}) // plain memfs
	root := mountRoot(t, srv)
	rc := dialRDMA(t, srv)
	a := lookup(t, rc, 2, root, "a")
	res := results(t, rc, 3, nfs.ProgNFS, 3, nfs.ProcLink,
		&nfsv3.Link3args{File: a, Link: nfsv3.Diropargs3{Dir: root, Name: "b"}}, nfsv3.ReadLink3res)
	require.Equal(t, nfsv3.NFS3ERR_NOTSUPP, res.GetStatus())
}

func write(t *testing.T, c msgConn, xid uint32, fh nfsv3.NfsFh3, off uint64, data []byte, stable nfsv3.StableHow) nfsv3.Write3res {
	t.Helper()
	return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcWrite,
		&nfsv3.Write3args{File: fh, Offset: off, Count: uint32(len(data)), Stable: stable, Data: data}, nfsv3.ReadWrite3res)
}

// TestServerWriteCommit: WRITE replies say what happened (RFC 1813
// §3.3.7): UNSTABLE without a sync, FILE_SYNC after the file system's
// Sync, NFS3ERR_IO when it failed; all carry the server's write verifier,
// which COMMIT (§3.3.21) returns after syncing, and which changes with
// every server.
func TestServerWriteCommit(t *testing.T) {
	fs := newTestFS(t)
	srv := startServer(t, nfs.ServerConfig{FS: fs})
	verf := srv.WriteVerifier()
	root := mountRoot(t, srv)
	rc := dialRDMA(t, srv)
	a := lookup(t, rc, 2, root, "a")

	res := write(t, rc, 3, a, 0, []byte("HE"), nfsv3.UNSTABLE)
	ok, isOK := res.(*nfsv3.Write3res_NFS3_OK)
	require.True(t, isOK, "WRITE: %v", res.GetStatus())
	require.Equal(t, nfsv3.UNSTABLE, ok.Resok.Committed)
	require.Equal(t, verf, ok.Resok.Verf)
	require.EqualValues(t, 2, ok.Resok.Count)
	_, syncs := fs.calls()
	require.Empty(t, syncs, "no sync for an UNSTABLE write")

	cres := results(t, rc, 4, nfs.ProgNFS, 3, nfs.ProcCommit, &nfsv3.Commit3args{File: a}, nfsv3.ReadCommit3res)
	cok, isOK := cres.(*nfsv3.Commit3res_NFS3_OK)
	require.True(t, isOK, "COMMIT: %v", cres.GetStatus())
	require.Equal(t, verf, cok.Resok.Verf)
	_, isPost := cok.Resok.FileWcc.After.(*nfsv3.PostOpAttr_TRUE)
	require.True(t, isPost)
	_, syncs = fs.calls()
	require.Equal(t, []string{"a"}, syncs)

	for i, stable := range []nfsv3.StableHow{nfsv3.DATA_SYNC, nfsv3.FILE_SYNC} {
		res = write(t, rc, 5+uint32(i), a, 2, []byte("LL"), stable)
		ok, isOK = res.(*nfsv3.Write3res_NFS3_OK)
		require.True(t, isOK, "WRITE: %v", res.GetStatus())
		require.Equal(t, nfsv3.FILE_SYNC, ok.Resok.Committed)
		require.Equal(t, verf, ok.Resok.Verf)
	}
	_, syncs = fs.calls()
	require.Equal(t, []string{"a", "a", "a"}, syncs)
	f, err := fs.Open("a")
	require.NoError(t, err)
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, "HELLo", string(got))

	// A failed sync is an error, not FILE_SYNC.
	fs.mu.Lock()
	fs.syncErr = errors.New("disk on fire")
	fs.mu.Unlock()
	res = write(t, rc, 7, a, 0, []byte("x"), nfsv3.FILE_SYNC)
	require.Equal(t, nfsv3.NFS3ERR_IO, res.GetStatus())
	cres = results(t, rc, 8, nfs.ProgNFS, 3, nfs.ProcCommit, &nfsv3.Commit3args{File: a}, nfsv3.ReadCommit3res)
	require.Equal(t, nfsv3.NFS3ERR_IO, cres.GetStatus())
	cres = results(t, rc, 9, nfs.ProgNFS, 3, nfs.ProcCommit, &nfsv3.Commit3args{File: nfsv3.NfsFh3{Data: []byte("stale")}}, nfsv3.ReadCommit3res)
	require.Equal(t, nfsv3.NFS3ERR_STALE, cres.GetStatus())

	// Another server start, another verifier.
	other := startServer(t, nfs.ServerConfig{FS: fs})
	require.NotEqual(t, verf, other.WriteVerifier())
}

// TestServerWriteNoSyncer: a file system with no way to sync (memfs) keeps
// its data in the server's memory only: FILE_SYNC requests are answered
// FILE_SYNC, UNSTABLE ones UNSTABLE.
func TestServerWriteNoSyncer(t *testing.T) {
	fs := newTestFS(t)
	srv := startServer(t, nfs.ServerConfig{FS: fs.Filesystem}) // memfs: nothing to sync with
	root := mountRoot(t, srv)
	rc := dialRDMA(t, srv)
	a := lookup(t, rc, 2, root, "a")
	res := write(t, rc, 3, a, 0, []byte("x"), nfsv3.FILE_SYNC)
	ok, isOK := res.(*nfsv3.Write3res_NFS3_OK)
	require.True(t, isOK, "WRITE: %v", res.GetStatus())
	require.Equal(t, nfsv3.FILE_SYNC, ok.Resok.Committed)
	require.Equal(t, srv.WriteVerifier(), ok.Resok.Verf)
	res = write(t, rc, 4, a, 0, []byte("x"), nfsv3.UNSTABLE)
	require.Equal(t, nfsv3.UNSTABLE, res.(*nfsv3.Write3res_NFS3_OK).Resok.Committed)
}

// TestServerDRC: a retransmitted REMOVE, on a new connection as the Linux
// client sends it after reconnecting, gets the original reply from the
// duplicate request cache instead of NFS3ERR_NOENT from a second
// execution; the same XID with other arguments is a new call; idempotent
// calls are not cached.
func TestServerDRC(t *testing.T) {
	fs := newTestFS(t)
	for _, n := range []string{"r1", "r2"} {
		f, err := fs.Create(n)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	srv := startServer(t, nfs.ServerConfig{FS: fs})
	root := mountRoot(t, srv)
	rc := dialRDMA(t, srv)
	remove := func(c msgConn, xid uint32, name string) nfsv3.Nfsstat3 {
		t.Helper()
		return results(t, c, xid, nfs.ProgNFS, 3, nfs.ProcRemove,
			&nfsv3.Remove3args{Object: nfsv3.Diropargs3{Dir: root, Name: name}}, nfsv3.ReadRemove3res).GetStatus()
	}
	require.Equal(t, nfsv3.NFS3_OK, remove(rc, 100, "r1"))
	_, err := fs.Stat("r1")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Equal(t, nfs.DRCStats{Misses: 1, Entries: 1}, srv.DRCStats())

	rc2 := dialRDMA(t, srv)
	require.Equal(t, nfsv3.NFS3_OK, remove(rc2, 100, "r1"), "the retransmission's cached reply")
	require.Equal(t, nfs.DRCStats{Hits: 1, Misses: 1, Entries: 1}, srv.DRCStats())
	require.Equal(t, nfsv3.NFS3ERR_NOENT, remove(rc2, 101, "r1"), "a new call executes")
	require.Equal(t, nfsv3.NFS3_OK, remove(rc2, 100, "r2"), "same XID, other arguments: a new call")
	lookup(t, rc2, 100, root, "a")
	lookup(t, rc2, 100, root, "a")
	require.Equal(t, nfs.DRCStats{Hits: 1, Misses: 3, Entries: 3}, srv.DRCStats())
}

// blockingFS is a testFS whose Remove waits for release and counts calls.
type blockingFS struct {
	*testFS
	entered chan struct{}
	release chan struct{}
	removes atomic.Int32
}

func (fs *blockingFS) Remove(name string) error {
	fs.removes.Add(1)
	fs.entered <- struct{}{}
	<-fs.release
	return fs.testFS.Remove(name)
}

// TestServerDRCInProgress: a retransmission that arrives, on another
// connection, while the original is still executing waits for it and gets
// its reply; the call executes once.
func TestServerDRCInProgress(t *testing.T) {
	fs := &blockingFS{testFS: newTestFS(t), entered: make(chan struct{}, 1), release: make(chan struct{})}
	srv := startServer(t, nfs.ServerConfig{FS: fs})
	root := mountRoot(t, srv)
	args := encode(t, &nfsv3.Remove3args{Object: nfsv3.Diropargs3{Dir: root, Name: "a"}})
	sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("client")}
	h := xdr.CallHeader{XID: 300, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcRemove, Cred: sys.OpaqueAuth(nil)}
	msg := append(h.Append(nil), args...)

	c1, c2 := dialRDMA(t, srv), dialRDMA(t, srv)
	require.NoError(t, c1.WriteMsg(msg))
	<-fs.entered // the original is executing
	require.NoError(t, c2.WriteMsg(msg))
	require.Eventually(t, func() bool { return srv.DRCStats().Hits == 1 }, ioGuard, time.Millisecond)
	close(fs.release)
	for _, c := range []*transport.Conn{c1, c2} {
		rep, err := c.ReadMsg(nil)
		require.NoError(t, err)
		var rh xdr.ReplyHeader
		off, err := rh.Unmarshal(rep)
		require.NoError(t, err)
		require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
		res, _, err := nfsv3.ReadRemove3res(bytes.NewReader(rep[off:]))
		require.NoError(t, err)
		require.Equal(t, nfsv3.NFS3_OK, res.GetStatus())
	}
	require.EqualValues(t, 1, fs.removes.Load())
}

func TestNewServerErrors(t *testing.T) {
	_, err := nfs.NewServer(nfs.ServerConfig{Transport: transport.Config{Provider: &soft.Provider{}}, RDMAAddr: "127.0.0.1:0"})
	require.Error(t, err, "neither Handler nor FS")
	_, err = nfs.NewServer(nfs.ServerConfig{FS: memfs.New(), RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0"})
	require.ErrorIs(t, err, transport.ErrNoProvider)
	var oe *net.OpError
	require.ErrorAs(t, err, &oe)
	_, err = nfs.NewServer(nfs.ServerConfig{FS: memfs.New(), Transport: transport.Config{Provider: &soft.Provider{}},
		RDMAAddr: "127.0.0.1:0", TCPAddr: "256.0.0.1:0"})
	require.ErrorAs(t, err, &oe, "bad TCP address")
}

// TestServeContext: Serve ends when its context does, closing the Server;
// Close is idempotent, and Serve after Close fails.
func TestServeContext(t *testing.T) {
	srv, err := nfs.NewServer(nfs.ServerConfig{FS: memfs.New(), Transport: transport.Config{Provider: &soft.Provider{}},
		RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Rpcbind: nfs.RpcbindConfig{Disable: true}})
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
	require.ErrorIs(t, srv.Serve(context.Background()), nfs.ErrServerClosed)
}
