package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// TestKernelClient runs the guest tests of e2e/internal/gonfsd in one boot:
// the Linux kernel's NFSv3 client mounts go-nfs served over our
// RPC-over-RDMA responder (a transport.Listener on rdma-core, rxe0 at
// 10.0.0.1:20049) with proto=rdma, MOUNT going over TCP; it lists, stats,
// writes a 3-byte and a 100 KiB file, and reads them back after a remount
// with cold caches. The guest tests check the RFC 8797 private data the
// kernel sent, which procedures each transport carried, the responder's
// Stats (Read and Write chunks, Send With Invalidate) against the kernel's
// mountstats, and, as the control, that without an NFS binding the 100 KiB
// READ fails with ERR_CHUNK (EIO). Their KCLIENT lines are the report,
// logged here.
//
// The ping fills 10.0.0.1's neighbour cache: without it the first RDMA-CM
// reply towards 10.0.0.2 is dropped and the IB CM retransmits only after
// ~4 s.
func TestKernelClient(t *testing.T) {
	r := vmtest.RunGuestTests(t, vmtest.GuestTests{
		Pkg:     "./internal/gonfsd",
		CGO:     true,
		Setup:   "ping -c 1 -W 2 -I 10.0.0.1 10.0.0.2 > /dev/null || true",
		Args:    []string{"-test.run=^TestKernelClient", "-test.timeout=10m"},
		Options: vm.Options{Timeout: 12 * time.Minute},
	})
	passed := map[string]bool{}
	var report []string
	for _, l := range r.Lines() {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "---" && f[1] == "PASS:" {
			passed[f[2]] = true
		}
		if i := strings.Index(l, "KCLIENT "); i >= 0 {
			report = append(report, l[i+len("KCLIENT "):])
		}
	}
	for _, name := range []string{"TestKernelClient", "TestKernelClientNullBinding"} {
		if !passed[name] {
			t.Errorf("guest test %s did not pass", name)
		}
	}
	t.Log("the kernel's NFSv3 client over RDMA against go-nfs on our responder:\n  " + strings.Join(report, "\n  "))
}
