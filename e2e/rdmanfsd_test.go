package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// rdmaNfsdGuestTests are the tests of e2e/internal/nfsdguest; each must
// pass in the guest.
var rdmaNfsdGuestTests = []string{
	"TestWorkload",
	"TestRestart",
	"TestMountstats",
	"TestMountstats/default",
	"TestMountstats/inline1024",
	"TestMountstats/no-remote-invalidate",
	"TestExercise",
	"TestExports",
	"TestListenDefault",
}

// TestRdmaNfsdKernel runs cmd/rdma-nfsd as a separate process in the VM
// (rdmacore provider on rxe0, 10.0.0.1, NFS over RDMA on port 20051, MOUNT
// over TCP on 20052) and mounts it with the Linux kernel's NFSv3 client
// over RDMA, in one boot (e2e/internal/nfsdguest): the nfsworkload
// workload (files by checksum across a remount and on the server's disk,
// the random exerciser for 30 s, 2,000 directory entries, the namespace
// operations, a tree copied in and out), with rdma-nfsd -rpcrdma-v2, which
// the kernel client, speaking version 1, must not notice; SIGKILL and restart of the server
// in the middle of a 64 MiB cp on the hard mount (cp completes, every byte
// arrives, no ESTALE); and the kernel's mountstats as the proof of the
// negotiated inline sizes (no chunks for 1 KiB I/O at 4096, chunks at
// 1024) and of remote invalidation (none of the client's own with R set,
// one per READ with -no-remote-invalidate); and an exports file's rules
// (TestExports: client rules, ro, all_squash, root_squash, a subdirectory
// mount, SIGHUP, a bad file); and that without -addr nothing answers at
// 10.0.0.1 (TestListenDefault). The guest's RDMANFSD lines are the
// report, logged here.
func TestRdmaNfsdKernel(t *testing.T) {
	r := vmtest.RunGuestTests(t, nfsdGuestTests(20*time.Minute,
		append([]string{"-test.timeout=16m", "-test.run=^(TestWorkload|TestRestart|TestMountstats|TestExercise|TestExports|TestListenDefault)$"},
			guestRunArgs()...)...))
	requireGuestPassed(t, r, rdmaNfsdGuestTests)
	report := r.Tagged("RDMANFSD")
	t.Logf("the kernel's NFSv3 client over RDMA against rdma-nfsd (VM run %.0f s):\n  %s",
		r.Elapsed.Seconds(), strings.Join(report, "\n  "))
}

// nfsdGuestTests are the tests of internal/nfsdguest, with rdma-nfsd in
// the share, run with the test binary's flags args in a VM run of at most
// timeout. The ping first fills 10.0.0.1's neighbour cache (see
// perftestScript).
func nfsdGuestTests(timeout time.Duration, args ...string) vmtest.GuestTests {
	return vmtest.GuestTests{
		Pkg:      "./internal/nfsdguest",
		CGO:      true,
		Binaries: []vmtest.Binary{{Name: "rdma-nfsd", Pkg: "../cmd/rdma-nfsd", CGO: true}},
		Setup:    "ping -c 1 -W 2 -I 10.0.0.1 10.0.0.2 > /dev/null || true",
		Args:     args,
		Options:  vm.Options{Timeout: timeout},
	}
}

// guestRunArgs narrows the guest tests with $RPCRDMA_GUEST_RUN (a
// -test.run pattern), for debugging one of them.
func guestRunArgs() []string {
	if r := os.Getenv("RPCRDMA_GUEST_RUN"); r != "" {
		return []string{"-test.run=" + r}
	}
	return nil
}
