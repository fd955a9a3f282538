package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// TestPosixVsKnfsd is the differential POSIX test of issue 28
// (e2e/internal/posixguest): in one boot, one script of 147 file
// system operations (create, mkdir, mkfifo, mknod, bind, symlink, link,
// rename, unlink, rmdir, chmod, chown, utimes, truncate, exclusive create;
// as root and as uids 1234, 1235 and 1236 with their groups; in sticky and
// setgid directories; 255- and 256-byte names; a path longer than
// PATH_MAX) runs on the kernel client's mount of knfsd and then on its
// mount of rdma-nfsd, both over RDMA with the same options, each step in
// a child process with the step's identity. Each step's errno, what it
// read and the normalised stat of the paths it touches are compared; the
// guest prints the table (POSIXCMP lines, relayed here) and fails on a
// difference that its knownDifferences does not list with a reason.
func TestPosixVsKnfsd(t *testing.T) {
	r := vmtest.RunGuestTests(t, vmtest.GuestTests{
		Pkg:      "./internal/posixguest",
		Binaries: []vmtest.Binary{{Name: "rdma-nfsd", Pkg: "../cmd/rdma-nfsd", CGO: true}},
		Args:     append([]string{"-test.timeout=16m", "-test.run=^TestPosix$"}, guestRunArgs()...),
		Options:  vm.Options{Timeout: 20 * time.Minute},
	})
	if os.Getenv("RPCRDMA_GUEST_RUN") == "" {
		requireGuestPassed(t, r, []string{"TestPosix"})
	}
	table := r.Tagged("POSIXCMP")
	if len(table) == 0 {
		t.Errorf("the guest printed no comparison table")
	}
	t.Logf("knfsd against rdma-nfsd, the same POSIX script through the kernel's NFSv3 client over RDMA (VM run %.0f s):\n  %s",
		r.Elapsed.Seconds(), strings.Join(table, "\n  "))
}
