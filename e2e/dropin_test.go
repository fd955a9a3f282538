package e2e

import (
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// dropinGuestTests are the rdma-core tests of transport/dropin
// (rdmacore_guest_test.go): each must pass in the guest.
var dropinGuestTests = []string{
	"TestRdmacoreStack",
	"TestRdmacoreGoNFS",
	"TestRdmacoreGoNFSNoPrivateData",
	"TestRdmacoreGoNFSPipelined",
	"TestRdmacoreGoNFSLimits",
	"TestRdmacoreRPCServer",
	"TestRdmacoreRealClient",
}

// TestDropin runs the drop-in proof on real verbs, in one boot: the
// scenarios of transport/dropin (github.com/willscott/go-nfs served
// unchanged on a *transport.Listener, buildbarn/go-xdr's rpcserver on an
// accepted *transport.Conn, and package nfs/client against go-nfs on a
// listener with the NFSv3 binding) with the rdma-core provider, the responder on
// rxe0 (10.0.0.1) and the requester dialling from rxe1 (10.0.0.2). The
// same test bodies run on the software provider on the host.
func TestDropin(t *testing.T) {
	r := vmtest.RunGuestTests(t, vmtest.GuestTests{
		Pkg:     "github.com/go-rpcrdma/rpcrdma/transport/dropin",
		CGO:     true,
		Setup:   "ping -c 1 -W 2 -I 10.0.0.1 10.0.0.2 > /dev/null || true\n",
		Args:    []string{"-test.run=^TestRdmacore", "-test.timeout=18m"},
		Options: vm.Options{Timeout: 20 * time.Minute},
	})
	requireGuestPassed(t, r, dropinGuestTests)
}
