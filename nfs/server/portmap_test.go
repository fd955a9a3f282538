package server_test

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// fakeRpcbind answers rpcbind calls on loopback TCP and records them; with
// v2Only, version 4 calls get PROG_MISMATCH (2..2), as an old portmap.
type fakeRpcbind struct {
	l      net.Listener
	v2Only bool
	mu     sync.Mutex
	calls  []string
}

func startFakeRpcbind(t *testing.T, v2Only bool) *fakeRpcbind {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeRpcbind{l: l, v2Only: v2Only}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return f
}

func (f *fakeRpcbind) serve(c net.Conn) {
	defer c.Close()
	for {
		msg, err := xdr.ReadRecord(c, nil, 1<<16)
		if err != nil {
			return
		}
		var h xdr.CallHeader
		off, err := h.Unmarshal(msg)
		if err != nil {
			return
		}
		rh := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
		var res []byte
		r := xdr.NewReader(msg[off:])
		desc := fmt.Sprintf("v%d proc %d", h.Vers, h.Proc)
		switch {
		case h.Vers == 4 && f.v2Only:
			rh.AcceptStat, rh.Mismatch = xdr.AcceptProgMismatch, xdr.Mismatch{Low: 2, High: 2}
		case h.Proc == 0:
		case h.Vers == 4:
			prog, _ := r.Uint32()
			vers, _ := r.Uint32()
			netid, _ := r.String(64)
			uaddr, _ := r.String(64)
			desc += fmt.Sprintf(" %d v%d %s %s", prog, vers, netid, uaddr)
			res = xdr.AppendBool(nil, true)
		case h.Vers == 2:
			var m [4]uint32
			for i := range m {
				m[i], _ = r.Uint32()
			}
			desc += fmt.Sprintf(" %d v%d prot %d port %d", m[0], m[1], m[2], m[3])
			res = xdr.AppendBool(nil, true)
		}
		f.mu.Lock()
		f.calls = append(f.calls, desc)
		f.mu.Unlock()
		if _, err := c.Write(xdr.AppendRecord(nil, append(rh.Append(nil), res...), 0)); err != nil {
			return
		}
	}
}

func (f *fakeRpcbind) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func ports(srv *server.Server) (rdma, tcp int) {
	_, r, _ := net.SplitHostPort(srv.RDMAAddr().String())
	_, p, _ := net.SplitHostPort(srv.TCPAddr().String())
	rdma, _ = strconv.Atoi(r)
	tcp, _ = strconv.Atoi(p)
	return rdma, tcp
}

// uaddr is the universal address of 127.0.0.1:port (RFC 5665 §5.2.3.3).
func uaddr(port int) string { return fmt.Sprintf("127.0.0.1.%d.%d", port>>8, port&0xff) }

// TestRpcbindRegister: Serve registers MOUNT v3 on TCP, NFS v3 on TCP (with
// NFSOverTCP) and on "rdma" with rpcbind version 4 SET; Close unsets them.
func TestRpcbindRegister(t *testing.T) {
	rb := startFakeRpcbind(t, false)
	srv := startServer(t, server.Config{Handler: newTestDir(t), NFSOverTCP: true,
		Rpcbind: server.RpcbindConfig{Addr: rb.l.Addr().String()}})
	rdma, tcp := ports(srv)
	require.Eventually(t, func() bool { return len(rb.recorded()) == 4 }, ioGuard, time.Millisecond)
	require.Nil(t, srv.PortmapperAddr())
	require.NoError(t, srv.Close())
	want := []string{"v2 proc 0",
		"v4 proc 1 100005 v3 tcp " + uaddr(tcp), "v4 proc 1 100003 v3 tcp " + uaddr(tcp), "v4 proc 1 100003 v3 rdma " + uaddr(rdma),
		"v4 proc 2 100005 v3 tcp " + uaddr(tcp), "v4 proc 2 100003 v3 tcp " + uaddr(tcp), "v4 proc 2 100003 v3 rdma " + uaddr(rdma)}
	require.Equal(t, want, rb.recorded())
}

// TestRpcbindRegisterV2: against a portmap without version 4, the TCP
// registrations fall back to PMAPPROC_SET; RDMA has no portmap protocol
// number and is not registered.
func TestRpcbindRegisterV2(t *testing.T) {
	rb := startFakeRpcbind(t, true)
	srv := startServer(t, server.Config{Handler: newTestDir(t), Rpcbind: server.RpcbindConfig{Addr: rb.l.Addr().String()}})
	_, tcp := ports(srv)
	require.Eventually(t, func() bool { return len(rb.recorded()) == 4 }, ioGuard, time.Millisecond)
	require.NoError(t, srv.Close())
	require.Equal(t, []string{"v2 proc 0", "v4 proc 1", fmt.Sprintf("v2 proc 1 100005 v3 prot 6 port %d", tcp),
		"v4 proc 1", fmt.Sprintf("v2 proc 2 100005 v3 prot 6 port %d", tcp)}, rb.recorded())
}

// TestPortmapper: with no rpcbind answering, RpcbindConfig.Serve serves a
// portmapper (RFC 1833 version 2) on TCP and UDP that maps MOUNT v3/TCP
// to the Server's TCP port, as mount.nfs asks it.
func TestPortmapper(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	require.NoError(t, dead.Close())
	srv := startServer(t, server.Config{Handler: newTestDir(t), Rpcbind: server.RpcbindConfig{
		Addr: deadAddr, Serve: true, ServeAddr: "127.0.0.1:0"}})
	require.Eventually(t, func() bool { return srv.PortmapperAddr() != nil }, ioGuard, time.Millisecond)
	_, tcp := ports(srv)
	pmAddr := srv.PortmapperAddr()
	pc := dialTCP(t, pmAddr)
	getport := func(c msgConn, xid, prog, vers, prot uint32) uint32 {
		t.Helper()
		args := xdr.AppendUint32(nil, prog)
		args = xdr.AppendUint32(args, vers)
		args = xdr.AppendUint32(args, prot)
		args = xdr.AppendUint32(args, 0)
		rh, res := call(t, c, xid, nfs.ProgPortmap, 2, 3, args)
		require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
		r := xdr.NewReader(res)
		port, err := r.Uint32()
		require.NoError(t, err)
		return port
	}
	require.EqualValues(t, tcp, getport(pc, 1, nfs.ProgMount, 3, 6))
	require.Zero(t, getport(pc, 2, nfs.ProgMount, 3, 17), "no MOUNT over UDP")
	require.Zero(t, getport(pc, 3, nfs.ProgNFS, 3, 6), "no NFS over TCP")

	// Version 4 (mount.nfs tries it first): PROG_MISMATCH 2..2.
	rh, _ := call(t, pc, 4, nfs.ProgPortmap, 4, 3, nil)
	require.Equal(t, xdr.AcceptProgMismatch, rh.AcceptStat)
	require.Equal(t, xdr.Mismatch{Low: 2, High: 2}, rh.Mismatch)

	// SET from loopback, then DUMP.
	args := xdr.AppendUint32(nil, 100099)
	args = xdr.AppendUint32(args, 1)
	args = xdr.AppendUint32(args, 6)
	args = xdr.AppendUint32(args, 4242)
	_, res := call(t, pc, 5, nfs.ProgPortmap, 2, 1, args)
	require.Equal(t, []byte{0, 0, 0, 1}, res)
	_, res = call(t, pc, 6, nfs.ProgPortmap, 2, 1, args)
	require.Equal(t, []byte{0, 0, 0, 0}, res, "already set")
	_, res = call(t, pc, 7, nfs.ProgPortmap, 2, 4, nil)
	r := xdr.NewReader(res)
	var dump [][4]uint32
	for {
		more, err := r.Bool()
		require.NoError(t, err)
		if !more {
			break
		}
		var m [4]uint32
		for i := range m {
			m[i], err = r.Uint32()
			require.NoError(t, err)
		}
		dump = append(dump, m)
	}
	pmPort := uint32(pmAddr.(*net.TCPAddr).Port)
	require.Equal(t, [][4]uint32{{100000, 2, 6, pmPort}, {100000, 2, 17, pmPort}, {100005, 3, 6, uint32(tcp)}, {100099, 1, 6, 4242}}, dump)
	_, res = call(t, pc, 8, nfs.ProgPortmap, 2, 2, args)
	require.Equal(t, []byte{0, 0, 0, 1}, res, "unset")

	// UDP.
	uc, err := net.Dial("udp", pmAddr.String())
	require.NoError(t, err)
	defer uc.Close()
	h := xdr.CallHeader{XID: 9, Prog: nfs.ProgPortmap, Vers: 2, Proc: 3}
	msg := h.Append(nil)
	for _, v := range []uint32{nfs.ProgMount, 3, 6, 0} {
		msg = xdr.AppendUint32(msg, v)
	}
	_, err = uc.Write(msg)
	require.NoError(t, err)
	buf := make([]byte, 512)
	n, err := uc.Read(buf)
	require.NoError(t, err)
	var rh2 xdr.ReplyHeader
	off, err := rh2.Unmarshal(buf[:n])
	require.NoError(t, err)
	require.Equal(t, xdr.AcceptSuccess, rh2.AcceptStat)
	require.Equal(t, xdr.AppendUint32(nil, uint32(tcp)), buf[off:n])

	// Close stops it.
	require.NoError(t, srv.Close())
	_, err = net.Dial("tcp", pmAddr.String())
	require.Error(t, err)
}
