package gonfsd_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/mount"
	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/go-rpcrdma/rpcrdma/e2e/internal/gonfsd"
	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/require"
)

// ioGuard bounds each exchange, so that a bug fails the test instead of
// hanging it; nothing comes close to it.
const ioGuard = time.Minute

// msgConn carries whole RPC messages: a requester *transport.Conn, or
// recordConn over TCP.
type msgConn interface {
	WriteMsg(msg []byte) error
	ReadMsg(buf []byte) ([]byte, error)
}

// recordConn sends and receives RFC 5531 records on a stream.
type recordConn struct{ c net.Conn }

func (r recordConn) WriteMsg(msg []byte) error {
	_, err := r.c.Write(xdr.AppendRecord(nil, msg, 0))
	return err
}

func (r recordConn) ReadMsg(buf []byte) ([]byte, error) { return xdr.ReadRecord(r.c, buf, 4<<20) }

// rpcCall sends one call and returns the results of its SUCCESS reply.
func rpcCall(t *testing.T, c msgConn, xid, prog, vers, proc uint32, args io.WriterTo) *bytes.Reader {
	t.Helper()
	msg, _ := encodeCall(t, xid, prog, vers, proc, args)
	require.NoError(t, c.WriteMsg(msg))
	rep, err := c.ReadMsg(nil)
	require.NoError(t, err)
	var h xdr.ReplyHeader
	res, err := h.Unmarshal(rep)
	require.NoError(t, err)
	require.Equal(t, xid, h.XID)
	require.Equal(t, xdr.MsgAccepted, h.Stat)
	require.Equal(t, xdr.AcceptSuccess, h.AcceptStat, "procedure %d of program %d", proc, prog)
	return bytes.NewReader(rep[res:])
}

func decodeAll[T any](t *testing.T, r *bytes.Reader, read func(io.Reader) (T, int64, error)) T {
	t.Helper()
	v, _, err := read(r)
	require.NoError(t, err)
	require.Zero(t, r.Len(), "bytes after the results")
	return v
}

// TestServerSoft runs a Server on the software provider and talks to it as
// the Linux client does: MOUNT over TCP, NFS over an RPC-over-RDMA
// requester (with nfs.Binding on both ends, so that the 100 KiB WRITE
// goes in a Read chunk and the READ reply's data in a Write chunk), and
// checks the calls counted per transport, the private data recorded and the
// responder's counters.
func TestServerSoft(t *testing.T) {
	dir := t.TempDir()
	srv, err := gonfsd.Start(gonfsd.Config{FS: gonfsd.NewDirFS(dir), RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0"})
	require.NoError(t, err)

	tc, err := net.Dial("tcp", srv.TCPAddr().String())
	require.NoError(t, err)
	require.NoError(t, tc.SetDeadline(time.Now().Add(ioGuard)))
	tcp := recordConn{tc}
	rpcCall(t, tcp, 1, nfs.ProgMount, 3, 0, nil)
	mres := decodeAll(t, rpcCall(t, tcp, 2, nfs.ProgMount, 3, 1, writerFunc(func(w io.Writer) (int64, error) {
		return mount.WriteDirpath(w, "/")
	})), mount.ReadMountres3)
	mok, ok := mres.(*mount.Mountres3_MNT3_OK)
	require.True(t, ok, "MNT status %v", mres.GetFhsStatus())
	root := nfsv3.NfsFh3{Data: mok.Mountinfo.Fhandle}

	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	defer cancel()
	rc, err := transport.Dial(ctx, srv.RDMAAddr().String(), &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
	require.NoError(t, err)
	require.NoError(t, rc.SetDeadline(time.Now().Add(ioGuard)))
	rpcCall(t, rc, 3, nfs.ProgNFS, 3, nfs.ProcNull, nil)
	cres := decodeAll(t, rpcCall(t, rc, 4, nfs.ProgNFS, 3, 8, &nfsv3.Create3args{
		Where: nfsv3.Diropargs3{Dir: root, Name: "f100k"},
		How: &nfsv3.Createhow3_UNCHECKED{ObjAttributes: nfsv3.Sattr3{
			Mode: &nfsv3.SetMode3_default{}, Uid: &nfsv3.SetUid3_default{}, Gid: &nfsv3.SetGid3_default{},
			Size: &nfsv3.SetSize3_default{}, Atime: &nfsv3.SetAtime_default{SetIt: nfsv3.DONT_CHANGE},
			Mtime: &nfsv3.SetMtime_default{SetIt: nfsv3.DONT_CHANGE}}},
	}), nfsv3.ReadCreate3res)
	cok, ok := cres.(*nfsv3.Create3res_NFS3_OK)
	require.True(t, ok, "CREATE status %v", cres.GetStatus())
	fh := cok.Resok.Obj.(*nfsv3.PostOpFh3_TRUE).Handle

	data := guesttest.Pattern(100<<10, 3)
	wres := decodeAll(t, rpcCall(t, rc, 5, nfs.ProgNFS, 3, nfs.ProcWrite,
		&nfsv3.Write3args{File: fh, Count: uint32(len(data)), Stable: nfsv3.FILE_SYNC, Data: data}), nfsv3.ReadWrite3res)
	wok, ok := wres.(*nfsv3.Write3res_NFS3_OK)
	require.True(t, ok, "WRITE status %v", wres.GetStatus())
	require.EqualValues(t, len(data), wok.Resok.Count)
	stored, err := os.ReadFile(filepath.Join(dir, "f100k"))
	require.NoError(t, err)
	require.Equal(t, data, stored)

	rres := decodeAll(t, rpcCall(t, rc, 6, nfs.ProgNFS, 3, nfs.ProcRead,
		&nfsv3.Read3args{File: fh, Offset: 0, Count: uint32(len(data))}), nfsv3.ReadRead3res)
	rok, ok := rres.(*nfsv3.Read3res_NFS3_OK)
	require.True(t, ok, "READ status %v", rres.GetStatus())
	require.Equal(t, data, rok.Resok.Data)
	require.True(t, rok.Resok.Eof)

	// What went where.
	require.Equal(t, []gonfsd.CallCount{
		{Transport: gonfsd.RDMA, ID: gonfsd.CallID{Prog: nfs.ProgNFS, Vers: 3, Proc: 0}, N: 1},
		{Transport: gonfsd.RDMA, ID: gonfsd.CallID{Prog: nfs.ProgNFS, Vers: 3, Proc: 6}, N: 1},
		{Transport: gonfsd.RDMA, ID: gonfsd.CallID{Prog: nfs.ProgNFS, Vers: 3, Proc: 7}, N: 1},
		{Transport: gonfsd.RDMA, ID: gonfsd.CallID{Prog: nfs.ProgNFS, Vers: 3, Proc: 8}, N: 1},
		{Transport: gonfsd.TCP, ID: gonfsd.CallID{Prog: nfs.ProgMount, Vers: 3, Proc: 0}, N: 1},
		{Transport: gonfsd.TCP, ID: gonfsd.CallID{Prog: nfs.ProgMount, Vers: 3, Proc: 1}, N: 1},
	}, srv.Calls())
	require.EqualValues(t, 1, srv.Count(gonfsd.RDMA, gonfsd.CallID{Prog: nfs.ProgNFS, Vers: 3, Proc: 7}))
	require.Zero(t, srv.Count(gonfsd.TCP, gonfsd.CallID{Prog: nfs.ProgNFS, Vers: 3, Proc: 7}))

	// Our requester's private data is the Linux client's.
	reqs := srv.ConnRequests()
	require.Len(t, reqs, 1)
	require.Equal(t, []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}, reqs[0].PrivateData[:8])
	acc := srv.Accepted()
	require.Len(t, acc, 1)
	require.Equal(t, "found", acc[0].Negotiated.PeerPrivateData)
	require.True(t, acc[0].Negotiated.SendWithInvalidate)

	// Both ends moved the file data by direct placement.
	ss := acc[0].Conn.Stats()
	require.EqualValues(t, 1, ss.ReadChunks, "the WRITE's Read chunk")
	require.EqualValues(t, len(data), ss.RDMAReadBytes)
	require.EqualValues(t, 1, ss.WriteChunks, "the READ reply's Write chunk")
	require.EqualValues(t, len(data), ss.RDMAWriteBytes)
	require.Zero(t, ss.ReplyChunks, "no reply went through a Reply chunk")
	// Every call that offered chunks carried one rkey (our requester binds
	// one memory window per call): the WRITE and the READ. The CREATE
	// offered none: the binding bounds its reply (RFC 1813 §3.3.8) well
	// under the inline threshold.
	require.EqualValues(t, 2, ss.RemoteInvalidations, "replies by Send With Invalidate")
	cs := rc.Stats()
	require.EqualValues(t, 1, cs.ReadChunkCalls, "the WRITE")
	require.Zero(t, cs.LongCalls)
	require.Zero(t, cs.ReplyChunks, "every reply but the READ's is bounded under the inline threshold")

	require.NoError(t, rc.Close())
	require.NoError(t, tc.Close())
	require.NoError(t, srv.Close())
}

func TestStartErrors(t *testing.T) {
	_, err := gonfsd.Start(gonfsd.Config{RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0"})
	require.Error(t, err, "no file system")
	_, err = gonfsd.Start(gonfsd.Config{FS: gonfsd.NewDirFS(t.TempDir()), RDMAAddr: "127.0.0.1:0", TCPAddr: "256.0.0.1:0"})
	require.Error(t, err, "bad TCP address")
	_, err = gonfsd.Start(gonfsd.Config{FS: gonfsd.NewDirFS(t.TempDir()), RDMAAddr: "bad address", TCPAddr: "127.0.0.1:0"})
	require.Error(t, err, "bad RDMA address")
}
