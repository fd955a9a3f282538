package vmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// lockupQEMU stands in for qemu: its first boot's kernel panics on a soft
// lockup, its second runs the command and reports status 0.
const lockupQEMU = `#!/bin/bash
PATH=/usr/bin:/bin:$PATH
status=
while [ $# -gt 0 ]; do
	case $1 in
	-serial) case $2 in file:*) [ -n "$status" ] || status=${2#file:} ;; esac; shift ;;
	esac
	shift
done
n=$(cat "$FAKE_QEMU_DIR/boots" 2>/dev/null || echo 0)
echo $((n + 1)) > "$FAKE_QEMU_DIR/boots"
if [ "$n" = 0 ]; then
	echo "guest line before the lockup"
	echo "[  124.521769] watchdog: BUG: soft lockup - CPU#0 stuck for 124s! [bash:531]"
	echo "[  124.521800] RIP: 0010:smp_call_function_many_cond+0x11d/0x360"
	echo "[  124.530000] Kernel panic - not syncing: softlockup: hung tasks"
	exit 0
fi
echo "second boot"
echo "rxevm: exit status 0"
echo 0 > "$status"
`

// TestRunRebootsAfterLockup: a guest kernel that panicked on a soft
// lockup is booted again, once; the test goes on with the second boot's
// result, and the log names the saved first console and the lockup.
func TestRunRebootsAfterLockup(t *testing.T) {
	dir := t.TempDir()
	logs := t.TempDir()
	t.Setenv("RPCRDMA_VM_LOGDIR", logs)
	t.Setenv("FAKE_QEMU_DIR", dir)
	q := filepath.Join(dir, "qemu")
	if err := os.WriteFile(q, []byte(lockupQEMU), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := vm.Options{Image: &vm.Image{Dir: dir, Kernel: filepath.Join(dir, "kernel"), Initrd: filepath.Join(dir, "initrd.img")},
		QEMU: q, Timeout: 20 * time.Second}
	tb := &logTB{TB: t, name: "TestX"}
	r := Run(tb, opts, "true")
	if r.Status != 0 || !strings.Contains(string(r.Console), "second boot") || strings.Contains(string(r.Console), "soft lockup") {
		t.Errorf("status %d, console %q; want the second boot's", r.Status, r.Console)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "boots")); strings.TrimSpace(string(b)) != "2" {
		t.Errorf("booted %q times, want 2", b)
	}
	saved := filepath.Join(logs, "rxevm-TestX-lockup-console.log")
	if b, err := os.ReadFile(saved); err != nil || !strings.Contains(string(b), "guest line before the lockup") {
		t.Errorf("first console: %v, %q", err, b)
	}
	all := strings.Join(tb.logs, "\n")
	for _, want := range []string{saved, "locked up", "stuck for 124s! [bash:531]", "RIP: 0010:smp_call_function_many_cond", "status 0"} {
		if !strings.Contains(all, want) {
			t.Errorf("log lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "guest line before") {
		t.Errorf("the lockup report has the guest's own lines:\n%s", all)
	}
}
