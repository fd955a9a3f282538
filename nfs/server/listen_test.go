package server_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestListenHosts: with Config.ListenHosts the Server listens at each
// host, and only there: RPC-over-RDMA, MOUNT over TCP and its own
// portmapper, every kind on one port (chosen at the first host) so that
// one registration names it at both; a third loopback address is
// refused; ListenerStats sums the listeners that RDMAListeners lists;
// a host that is not an IP address is refused by New.
func TestListenHosts(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	require.NoError(t, dead.Close())
	hosts := []string{"127.0.0.1", "127.0.0.2"}
	srv := startServer(t, server.Config{Handler: newTestDir(t), ListenHosts: hosts,
		RDMAAddr: ":0", TCPAddr: ":0",
		Rpcbind: server.RpcbindConfig{Addr: deadAddr, Serve: true, ServeAddr: ":0"}})

	port := func(a net.Addr) string {
		_, p, err := net.SplitHostPort(a.String())
		require.NoError(t, err)
		return p
	}
	check := func(what string, addrs []net.Addr) string {
		t.Helper()
		require.Len(t, addrs, 2, what)
		for i, a := range addrs {
			h, _, err := net.SplitHostPort(a.String())
			require.NoError(t, err)
			require.Equal(t, hosts[i], h, "%s listener %d", what, i)
		}
		require.Equal(t, port(addrs[0]), port(addrs[1]), "%s: one port at every host", what)
		return port(addrs[0])
	}
	rdmaPort := check("RDMA", srv.RDMAAddrs())
	tcpPort := check("TCP", srv.TCPAddrs())

	// Both hosts serve MOUNT over TCP and NFS over RDMA.
	for i, h := range hosts {
		tc := dialTCP(t, &net.TCPAddr{IP: net.ParseIP(h), Port: atoi(t, tcpPort)})
		rh, _ := call(t, tc, 1, nfs.ProgMount, 3, nfs.MountProcNull, nil)
		require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat, "MOUNT NULL at %s", h)

		ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
		c, err := transport.Dial(ctx, net.JoinHostPort(h, rdmaPort), &transport.Config{Provider: &soft.Provider{}})
		cancel()
		require.NoError(t, err, "RDMA at %s", h)
		require.NoError(t, c.SetDeadline(time.Now().Add(ioGuard)))
		rh, _ = call(t, c, 2, nfs.ProgNFS, 3, nfs.ProcNull, nil)
		require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat, "NFS NULL at %s", h)
		require.Eventually(t, func() bool { return srv.ListenerStats().Accepted == uint64(i+1) }, ioGuard, time.Millisecond)
		ls := srv.RDMAListeners()
		require.Len(t, ls, 2)
		require.EqualValues(t, 1, ls[i].Stats.Accepted, "the connection counts at the listener of %s", h)
		require.Equal(t, srv.RDMAAddrs()[i], ls[i].Addr)
		require.Positive(t, ls[i].Limits.Backlog)
		var sum transport.ListenerStats
		for _, l := range ls {
			sum.Accepted += l.Stats.Accepted
		}
		require.Equal(t, sum.Accepted, srv.ListenerStats().Accepted, "ListenerStats sums the listeners")
		require.NoError(t, c.Close())
	}

	// The portmapper listens at both hosts too.
	require.Eventually(t, func() bool { return srv.PortmapperAddr() != nil }, ioGuard, time.Millisecond)
	pmPort := port(srv.PortmapperAddr())
	for _, h := range hosts {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(h, pmPort), ioGuard)
		require.NoError(t, err, "portmapper at %s", h)
		_ = c.Close()
	}

	// Nothing listens at a host not listed.
	for _, p := range []string{rdmaPort, tcpPort, pmPort} {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.3", p), ioGuard)
		if err == nil {
			_ = c.Close()
		}
		require.Error(t, err, "127.0.0.3:%s", p)
	}

	_, err = server.New(server.Config{Handler: newTestDir(t), ListenHosts: []string{"localhost"},
		Transport: transport.Config{Provider: &soft.Provider{}}})
	require.ErrorIs(t, err, transport.ErrConfig)
	require.ErrorContains(t, err, "Config.ListenHosts")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
