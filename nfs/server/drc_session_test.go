package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// fakeConn is a msgConn that delivers the calls put in calls and records
// the replies written to it; with dead set, every write fails, as on a
// connection the client lost.
type fakeConn struct {
	calls   chan []byte
	replies chan []byte
	dead    bool
	closed  chan struct{}
	once    sync.Once
}

func newFakeConn(dead bool, calls ...[]byte) *fakeConn {
	c := &fakeConn{calls: make(chan []byte, len(calls)), replies: make(chan []byte, 16), dead: dead, closed: make(chan struct{})}
	for _, m := range calls {
		c.calls <- m
	}
	return c
}

func (c *fakeConn) ReadMsg([]byte) ([]byte, error) { return c.ReadMsgAlloc(nil) }

func (c *fakeConn) ReadMsgAlloc(func(int) []byte) ([]byte, error) {
	select {
	case m := <-c.calls:
		return m, nil
	default:
	}
	select {
	case m := <-c.calls:
		return m, nil
	case <-c.closed:
		return nil, net.ErrClosed
	}
}

func (c *fakeConn) WriteMsg(msg []byte) error {
	if c.dead {
		return net.ErrClosed
	}
	c.replies <- append([]byte(nil), msg...)
	return nil
}

func (c *fakeConn) Close() error         { c.once.Do(func() { close(c.closed) }); return nil }
func (c *fakeConn) LocalAddr() net.Addr  { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 20049} }
func (c *fakeConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 999} }

// drcServer serves root (holding the file "r") without listening for
// anyone: the tests hand it fakeConns.
func drcServer(t *testing.T) (string, *Server) {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "r"), nil, 0o644))
	_, h := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	s, err := New(Config{Handler: h, Transport: transport.Config{Provider: &soft.Provider{}},
		RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Rpcbind: RpcbindConfig{Disable: true}, Squash: NoRootSquash})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return root, s
}

// removeCall is an NFSv3 REMOVE of name in the root, and its arguments.
func removeCall(s *Server, xid uint32, name string) (msg, args []byte) {
	sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("client")}
	h := xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcRemove, Cred: sys.OpaqueAuth(nil)}
	msg = h.Append(nil)
	a := nfs3.RemoveArgs{Object: nfs3.DirOpArgs{Dir: s.exports.Load().list[0].Handler.rootHandle(), Name: name}}
	off := len(msg)
	msg = a.Append(msg)
	return msg, msg[off:]
}

// removeStatus decodes the status of a REMOVE reply.
func removeStatus(t *testing.T, reply []byte) nfs3.Status {
	t.Helper()
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	require.NoError(t, err)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	var res nfs3.RemoveRes
	r := xdr.NewReader(reply[off:])
	require.NoError(t, res.Decode(&r))
	return res.Status
}

// TestDRCConnectionGone: a call whose connection is gone before its reply
// is sent records its reply all the same (answer records it first), and
// the client's retransmission on a new connection gets that reply; the
// call executed once.
func TestDRCConnectionGone(t *testing.T) {
	root, s := drcServer(t)
	msg, _ := removeCall(s, 7, "r")
	gone := newFakeConn(true, msg)
	s.startSession(NetRDMA, gone, nil)
	select {
	case <-gone.closed: // the failed write ended the session
	case <-time.After(time.Minute):
		t.Fatal("the session did not end")
	}
	_, err := os.Stat(filepath.Join(root, "r"))
	require.ErrorIs(t, err, os.ErrNotExist, "the REMOVE executed")
	require.Equal(t, DRCStats{Misses: 1, Entries: 1}, s.DRCStats())

	again := newFakeConn(false, msg)
	s.startSession(NetRDMA, again, nil)
	defer again.Close()
	select {
	case reply := <-again.replies:
		require.Equal(t, nfs3.OK, removeStatus(t, reply), "the original's reply, not a second execution's NFS3ERR_NOENT")
	case <-time.After(time.Minute):
		t.Fatal("no reply to the retransmission")
	}
	require.Equal(t, DRCStats{Hits: 1, Misses: 1, Entries: 1}, s.DRCStats())
}

// TestDRCInProgress: a retransmission that arrives while the original is
// still executing (on another connection) waits for the original's reply
// and gets it; it executes nothing.
func TestDRCInProgress(t *testing.T) {
	root, s := drcServer(t)
	msg, args := removeCall(s, 8, "r")
	e, dup := s.drc.lookup(newDRCKey("127.0.0.1", 8, nfs.ProgNFS, 3, nfs.ProcRemove, args)) // the original
	require.False(t, dup)

	c := newFakeConn(false, msg)
	s.startSession(NetRDMA, c, nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for s.DRCStats().Hits == 0 {
		require.NoError(t, ctx.Err(), "the retransmission never reached the cache")
		time.Sleep(time.Millisecond)
	}
	select {
	case <-c.replies:
		t.Fatal("a reply before the original's")
	case <-time.After(50 * time.Millisecond):
	}
	want := (&nfs3.RemoveRes{Status: nfs3.ErrJukebox}).Append(successReply(8, nil))
	s.drc.complete(e, want, time.Now())
	select {
	case reply := <-c.replies:
		require.Equal(t, want, reply)
	case <-ctx.Done():
		t.Fatal("no reply to the retransmission")
	}
	_, err := os.Stat(filepath.Join(root, "r"))
	require.NoError(t, err, "the retransmission executed nothing")
}
