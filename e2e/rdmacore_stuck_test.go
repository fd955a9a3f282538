package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// TestRdmacoreStuckRead runs transport's TestRdmacoreStuckRead in the VM:
// an RDMA Read that a requester whose link went silent never answers fails
// by rxe's own transport timer (retry exceeded), and the responder's
// connection returns what it held (issue 29).
func TestRdmacoreStuckRead(t *testing.T) {
	r := vmtest.RunGuestTests(t, vmtest.GuestTests{
		Pkg:     "github.com/go-rpcrdma/rpcrdma/transport",
		CGO:     true,
		Args:    []string{"-test.run=^TestRdmacoreStuckRead$", "-test.timeout=5m"},
		Options: vm.Options{Timeout: 8 * time.Minute},
	})
	if !strings.Contains(string(r.Console), "--- PASS: TestRdmacoreStuckRead") {
		t.Error("TestRdmacoreStuckRead did not pass in the VM")
	}
}
