//go:build e2eguest

package nfsdguest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
)

// exportsFile is the exports file of TestExports.
const exportsFile = "/tmp/rdma-nfsd-exports"

// reloadGuard bounds the wait for a SIGHUP's reload to be logged: it
// takes milliseconds, but a guest on a busy host may be descheduled for
// seconds.
const reloadGuard = time.Minute

// TestExports serves five directories from an exports file (exports(5)
// syntax) and mounts them with the kernel client over RDMA: an export
// whose rule admits the client (rw, no_root_squash) and a subdirectory of
// it; an ro export (writes refused with EROFS); all_squash and
// root_squash exports (root's new files belong to the anonymous ids); an
// export whose only rule names another network (the mount is refused).
// Then SIGHUP with the ro rule turned rw applies to the mount in place,
// and a bad exports file is refused with its line in the log while the
// rules in force stay.
func TestExports(t *testing.T) {
	requireGuest(t)
	const base = "/srv/ex"
	sh(t, "rm -rf "+base+" && mkdir -p "+base+"/open/sub "+base+"/ro "+base+"/squash "+base+"/rsq "+base+"/denied && chmod 0777 "+base+"/*")
	sh(t, "echo hello > "+base+"/open/sub/inside")
	rules := func(roRule string) string {
		return base + "/open    10.0.0.0/24(rw,no_root_squash)\n" +
			base + "/ro      10.0.0.0/24(" + roRule + ",no_root_squash)\n" +
			base + "/squash  10.0.0.0/24(rw,all_squash,anonuid=4321,anongid=4322)\n" +
			base + "/rsq     10.0.0.0/24(rw)\n" +
			base + "/denied  192.168.77.0/24(rw)\n"
	}
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(exportsFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(rules("ro"))
	srv := launchNfsd(t, "", "/mnt/ex-open", "exports", "-exports", exportsFile, "-tcp-port", strconv.Itoa(tcpPort), "-rpcbind=false")

	mountEx := func(dir, mnt string) error {
		_, err := run(guesttest.MountCommand(serverAddr+":"+dir, mnt, mountOpts))
		if err == nil {
			umountLater(t, mnt)
		}
		return err
	}
	owner := func(path string) [2]uint32 {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		return [2]uint32{st.Uid, st.Gid}
	}
	for _, d := range []string{"open", "open/sub", "ro", "squash", "rsq"} {
		if err := mountEx(base+"/"+d, "/mnt/ex-"+strings.ReplaceAll(d, "/", "-")); err != nil {
			t.Fatalf("mount of %s: %v", d, err)
		}
	}
	if err := mountEx(base+"/denied", "/mnt/ex-denied"); err == nil {
		t.Error("the mount of an export whose rules name another network succeeded")
	}
	if err := mountEx("/srv/nothing-here", "/mnt/ex-none"); err == nil {
		t.Error("the mount of a path no export holds succeeded")
	}
	t.Logf("RDMANFSD exports: mounts refused for a client no rule admits and for an unexported path")

	sh(t, "touch /mnt/ex-open/root-file")
	if got := owner(base + "/open/root-file"); got != [2]uint32{0, 0} {
		t.Errorf("no_root_squash: root's file belongs to %v", got)
	}
	if b, err := os.ReadFile("/mnt/ex-open-sub/inside"); err != nil || string(b) != "hello\n" {
		t.Errorf("a subdirectory mount reads %q, %v", b, err)
	}
	if out, err := run("touch /mnt/ex-ro/x 2>&1"); err == nil || !strings.Contains(out, "Read-only file system") {
		t.Errorf("a write under ro: %q, %v; want EROFS", out, err)
	}
	sh(t, "touch /mnt/ex-squash/f /mnt/ex-rsq/f")
	if got := owner(base + "/squash/f"); got != [2]uint32{4321, 4322} {
		t.Errorf("all_squash,anonuid=4321,anongid=4322: root's file belongs to %v", got)
	}
	if got := owner(base + "/rsq/f"); got != [2]uint32{65534, 65534} {
		t.Errorf("root_squash: root's file belongs to %v", got)
	}

	// SIGHUP with ro turned rw: the mount in place may write.
	write(rules("rw"))
	// hup sends SIGHUP and waits until the server logged the reload's
	// outcome, which names the exports file whether it succeeded or
	// not: the next call sees the rules it left in force.
	hup := func() {
		t.Helper()
		before, _ := os.ReadFile(srv.Log)
		if err := srv.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(reloadGuard); ; time.Sleep(50 * time.Millisecond) {
			log, _ := os.ReadFile(srv.Log)
			if len(log) > len(before) && strings.Contains(string(log[len(before):]), filepath.Base(exportsFile)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("rdma-nfsd logged no reload of %s within %v of SIGHUP:\n%s", exportsFile, reloadGuard, log)
			}
		}
	}
	hup()
	if out, err := run("touch /mnt/ex-ro/after-reload 2>&1"); err != nil {
		t.Errorf("a write under the rule turned rw by SIGHUP: %q, %v", out, err)
	}

	// A bad file is refused with its line; the rules in force stay.
	write(rules("rw") + base + "/open host.example(rw)\n")
	hup()
	log, _ := os.ReadFile(srv.Log)
	if !strings.Contains(string(log), filepath.Base(exportsFile)+":6:") {
		t.Errorf("the log does not name the bad line 6 of the exports file:\n%s", log)
	}
	if out, err := run("touch /mnt/ex-ro/after-bad-reload 2>&1"); err != nil {
		t.Errorf("the rules in force did not stay after a bad reload: %q, %v", out, err)
	}
	if err := mountEx(base+"/denied", "/mnt/ex-denied2"); err == nil {
		t.Error("after a bad reload, the export that refuses this client mounts")
	}
	t.Logf("RDMANFSD exports: ro, all_squash, root_squash, a subdirectory, SIGHUP and a bad file behave as exports(5) says")
}
