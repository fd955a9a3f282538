package guesttest

import (
	"os"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/mountstats"
)

// MountCommand is the shell command that mounts source ("10.0.0.1:/")
// on mnt, created if need be, with the kernel's NFS client and the
// options opts ("vers=3,proto=rdma,...").
func MountCommand(source, mnt, opts string) string {
	return "mkdir -p " + mnt + " && mount -t nfs -o " + opts + " " + source + " " + mnt
}

// Mount runs MountCommand with Sh: a failure fails t.
func Mount(t testing.TB, source, mnt, opts string) {
	t.Helper()
	Sh(t, MountCommand(source, mnt, opts))
}

// ReadXprt reads the kernel client's "xprt: rdma" counters of the mount
// on mnt from /proc/self/mountstats; a failure fails t.
func ReadXprt(t testing.TB, mnt string) mountstats.Xprt {
	t.Helper()
	x, err := mountstats.ParseXprt(readMountstats(t), mnt)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// ReadOps reads the per-procedure counts of the mount on mnt from
// /proc/self/mountstats; a failure fails t.
func ReadOps(t testing.TB, mnt string) mountstats.Ops {
	t.Helper()
	o, err := mountstats.ParseOps(readMountstats(t), mnt)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func readMountstats(t testing.TB) string {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/mountstats")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
