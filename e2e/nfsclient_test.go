package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// nfsClientGuestTests are the tests of e2e/internal/nfsclientguest; each
// must pass in the guest.
var nfsClientGuestTests = []string{
	"TestKnfsdPutGet",
	"TestKnfsdDirectory2000",
	"TestKnfsdProcedures",
	"TestKnfsdInFlight64",
	"TestKnfsdFSTest",
	"TestKnfsdTeardown",
	"TestKnfsdInline",
	"TestKnfsdInline/1024",
	"TestKnfsdInline/4096",
	"TestKnfsdInline/65536",
	"TestKnfsdVsKernel",
	"TestKnfsdPlacement",
	"TestRdmaNfsdPutGet",
	"TestRdmaNfsdInline",
	"TestRdmaNfsdInline/1024",
	"TestRdmaNfsdInline/4096",
	"TestRdmaNfsdInline/65536",
	"TestRdmaNFSCommand",
	"TestRdmaNfsdVersion2",
}

// TestNFSClientKnfsd runs the Go NFSv3 client (package nfs/client)
// against the Linux kernel's NFS server in the VM, in one boot
// (e2e/internal/nfsclientguest):
// MNT over TCP, then NFSv3 over RDMA with the rdma-core provider from rxe1
// to knfsd on rxe0; files of 0 B to 8 MiB put and got, checked on the
// exported tmpfs; a directory of 2,000 entries; every NFSv3 procedure and
// MNT, UMNT, EXPORT; 128 calls at once against knfsd's 64 credits; the
// fs.FS view under testing/fstest; knfsd restarted in the middle of a
// 32 MiB write and read (both complete intact); inline sizes 1024, 4096
// and 65536 offered, with the chunks each negotiated threshold calls for;
// and the kernel client as the yardstick of throughput and IOPS. Then
// against cmd/rdma-nfsd (our server.Server over rdma-core, offering 64 KiB
// inline): put/get and the inline sizes again, and over RPC-over-RDMA
// version 2 (then offered to knfsd, which refuses it: version 1); and
// cmd/rdma-nfs, the program, against knfsd. The
// guest's NFSCLIENT lines are the report, logged here.
func TestNFSClientKnfsd(t *testing.T) {
	root := filepath.Dir(t.TempDir()) // the share is a sibling: vmtest.ShareDir
	r := vmtest.RunGuestTests(t, vmtest.GuestTests{
		Pkg: "./internal/nfsclientguest",
		CGO: true,
		Binaries: []vmtest.Binary{{Name: "rdma-nfsd", Pkg: "../cmd/rdma-nfsd", CGO: true},
			{Name: "rdma-nfs", Pkg: "../cmd/rdma-nfs", CGO: true}},
		Setup:   knfsdSetup,
		Args:    append([]string{"-test.timeout=18m"}, guestRunArgs()...),
		Options: vm.Options{Timeout: 20 * time.Minute},
	})
	if guestRunArgs() == nil {
		requireGuestPassed(t, r, nfsClientGuestTests)
	}
	report := r.Tagged("NFSCLIENT")
	t.Logf("the Go NFS client against knfsd (VM run %.0f s):\n  %s", r.Elapsed.Seconds(), strings.Join(report, "\n  "))

	// The Go client's CPU profiles of TestKnfsdVsKernel's profiled pass.
	profiles, _ := filepath.Glob(filepath.Join(root, "*", "goclient-*.pprof"))
	if guestRunArgs() == nil && len(profiles) != 3 {
		t.Errorf("%d Go client profiles in the share, want 3 (write, read, random)", len(profiles))
	}
	for _, p := range profiles {
		out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", p).CombinedOutput()
		if err != nil {
			t.Errorf("go tool pprof %s: %v\n%s", p, err, out)
			continue
		}
		t.Logf("%s:\n%s", filepath.Base(p), out)
	}
}
