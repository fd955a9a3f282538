package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// TestRdmacoreHalfOpenFlood runs the transport's TestRdmacoreHalfOpenFlood
// in the VM (issue 29): 1,000 half-open peers, connect requests over
// rdma-core on rxe that never confirm the accept, against a Listener with
// the default settings, then 10 real Dials, each of which must connect
// within the handshake timeout; then the same against knfsd's NFS/RDMA
// listener in the same boot, for parity. It logs the guest's figures (the
// Dial latencies of both, the heap and registered memory the flood adds).
func TestRdmacoreHalfOpenFlood(t *testing.T) {
	r := vmtest.RunGuestTests(t, vmtest.GuestTests{
		Pkg:     "github.com/go-rpcrdma/rpcrdma/transport",
		CGO:     true,
		Setup:   "ping -c 1 -W 2 -I 10.0.0.1 10.0.0.2 > /dev/null || true; rxevm-nfsd-start",
		Args:    []string{"-test.run=^TestRdmacoreHalfOpenFlood$", "-test.timeout=8m"},
		Options: vm.Options{Timeout: 10 * time.Minute},
	})
	report := r.Tagged("FLOOD")
	if len(report) == 0 {
		t.Error("no FLOOD line in the guest output")
	}
	t.Logf("half-open flood over rdma-core (VM run %.0f s):\n  %s", r.Elapsed.Seconds(), strings.Join(report, "\n  "))
}
