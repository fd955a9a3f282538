package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// TestRdmacoreVersion2 runs transport's TestRdmacoreProtocolMatrix and
// TestRdmacoreReverse in the VM, over rdma-core on rxe: the protocol
// matrix's cells at 1,024 and 4,096 bytes each way, every pair of R bits,
// in RPC-over-RDMA version 1 and version 2 (every call form at its
// boundaries, every reply byte, the counters and work requests against the
// model), and reverse-direction calls under eight callers; and
// TestRdmacoreVersion2Responder, the hostile version 2 requester's cases
// against our responder (every RDMA2_ERROR it sends, reverse calls
// answered rightly and wrongly), and TestRdmacoreVersion2Requester, our
// requester against a raw version 2 responder (the negotiation's
// outcomes, errors received, hostile replies, reverse calls served), on
// rdma-core (docs/v2.md).
func TestRdmacoreVersion2(t *testing.T) {
	r := vmtest.RunGuestTests(t, vmtest.GuestTests{
		Pkg:     "github.com/go-rpcrdma/rpcrdma/transport",
		CGO:     true,
		Setup:   "ping -c 1 -W 2 -I 10.0.0.1 10.0.0.2 > /dev/null || true\n",
		Args:    []string{"-test.run=^(TestRdmacoreProtocolMatrix|TestRdmacoreReverse|TestRdmacoreVersion2Responder|TestRdmacoreVersion2Requester)$", "-test.timeout=12m", "-test.v"},
		Options: vm.Options{Timeout: 15 * time.Minute},
	})
	requireGuestPassed(t, r, []string{"TestRdmacoreProtocolMatrix", "TestRdmacoreReverse", "TestRdmacoreVersion2Responder", "TestRdmacoreVersion2Requester"})
	cells := 0
	for _, l := range r.Lines() {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "---" && f[1] == "PASS:" && strings.HasPrefix(f[2], "TestRdmacoreProtocolMatrix/") {
			cells++
		}
	}
	if cells != 16 {
		t.Errorf("%d protocol matrix cells passed in the VM, want 16", cells)
	}
}
