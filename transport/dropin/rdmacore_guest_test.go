//go:build e2eguest

// The tests in this file run inside the project's Soft-RoCE VM, started by
// e2e/dropin_test.go: the same drop-in scenarios as on the software
// provider, over rdma-core (transport/verbs/rdmacore) between the VM's two
// rxe devices.

package dropin_test

import (
	"context"
	"net"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"github.com/stretchr/testify/require"
)

// Addresses of the VM's Soft-RoCE devices: rxe0 on veth0 is the server,
// rxe1 on veth1 the client. Policy routing sends traffic between them
// across the veth pair, so a client must dial from its own address.
const (
	rxeServerIP = "10.0.0.1"
	rxeClientIP = "10.0.0.2"
)

// rdmacoreStack runs both ends on rdma-core: the responder listens on rxe0,
// the requester dials from rxe1. One provider serves both (it keeps a
// protection domain per device).
var rdmacoreStack = stack{
	name:     "rdmacore",
	provider: &rdmacore.Provider{LocalAddr: rxeClientIP},
	addr:     rxeServerIP + ":0",
}

// TestRdmacoreStack checks that the stack really runs over the rxe
// devices: the connection's ends are the two devices' addresses.
func TestRdmacoreStack(t *testing.T) {
	l := listen(t, rdmacoreStack, nil)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	defer cancel()
	c, err := transport.Dial(ctx, l.Addr().String(), rdmacoreStack.config(nil))
	require.NoError(t, err)
	defer c.Close()
	sc := <-accepted
	require.NotNil(t, sc, "accept")
	defer sc.Close()
	for _, a := range []struct {
		addr net.Addr
		ip   string
	}{{c.LocalAddr(), rxeClientIP}, {c.RemoteAddr(), rxeServerIP}, {sc.LocalAddr(), rxeServerIP}, {sc.RemoteAddr(), rxeClientIP}} {
		host, _, err := net.SplitHostPort(a.addr.String())
		require.NoError(t, err)
		require.Equal(t, a.ip, host, "address %v", a.addr)
	}
	require.Equal(t, "found", c.Stats().Negotiated.PeerPrivateData)
}

func TestRdmacoreGoNFS(t *testing.T) { testGoNFS(t, rdmacoreStack) }

func TestRdmacoreGoNFSNoPrivateData(t *testing.T) { testGoNFSNoPrivateData(t, rdmacoreStack) }

func TestRdmacoreGoNFSPipelined(t *testing.T) { testGoNFSPipelined(t, rdmacoreStack) }

func TestRdmacoreGoNFSLimits(t *testing.T) { testGoNFSLimits(t, rdmacoreStack) }

func TestRdmacoreRPCServer(t *testing.T) { testRPCServer(t, rdmacoreStack) }

func TestRdmacoreRealClient(t *testing.T) { testRealClient(t, rdmacoreStack) }
