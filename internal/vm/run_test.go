package vm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeQEMU stands in for qemu-system-x86_64: it records its arguments, finds
// the status file (the first -serial file:...), the heartbeat file (the
// second) and the command (-fw_cfg ...,file=...), and behaves as
// $FAKE_QEMU_MODE says.
const fakeQEMU = `#!/bin/bash
PATH=/usr/bin:/bin:$PATH
printf '%s\n' "$@" > "$FAKE_QEMU_DIR/args"
status= beat= cmd=
while [ $# -gt 0 ]; do
	case $1 in
	-serial) case $2 in file:*) if [ -z "$status" ]; then status=${2#file:}; else beat=${2#file:}; fi ;; esac; shift ;;
	-fw_cfg) cmd=${2#*file=}; shift ;;
	esac
	shift
done
case $FAKE_QEMU_MODE in
run) # like the guest's /init
	echo "[    0.000000] Linux version 6.1.0"
	bash "$cmd" < /dev/null
	echo $? > "$status"
	;;
fail)
	echo "qemu-system-x86_64: -virtfs: cannot initialize fsdev" >&2
	exit 1
	;;
panic)
	echo "Kernel panic - not syncing: Attempted to kill init!"
	;;
beating) # a guest that beats for 3 s, then reports status 0
	for i in $(seq 15); do printf . >> "$beat"; sleep 0.2; done
	echo 0 > "$status"
	;;
freeze) # a guest that beats for 1 s, then freezes
	echo $$ > "$FAKE_QEMU_DIR/pid"
	for i in $(seq 5); do printf . >> "$beat"; sleep 0.2; done
	sleep 60 &
	echo $! > "$FAKE_QEMU_DIR/child"
	wait
	;;
lockup)
	echo "[  124.521769] watchdog: BUG: soft lockup - CPU#0 stuck for 124s! [bash:531]"
	echo "[  124.530000] Kernel panic - not syncing: softlockup: hung tasks"
	;;
hang)
	echo $$ > "$FAKE_QEMU_DIR/pid"
	sleep 60 &
	echo $! > "$FAKE_QEMU_DIR/child"
	wait
	;;
esac
`

type fakeVM struct {
	dir  string
	opts Options
}

func newFakeVM(t *testing.T, mode string) *fakeVM {
	t.Helper()
	dir := t.TempDir()
	q := filepath.Join(dir, "qemu")
	if err := os.WriteFile(q, []byte(fakeQEMU), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_QEMU_DIR", dir)
	t.Setenv("FAKE_QEMU_MODE", mode)
	img := &Image{Dir: dir, Kernel: filepath.Join(dir, "kernel"), Initrd: filepath.Join(dir, "initrd.img")}
	return &fakeVM{dir: dir, opts: Options{Image: img, QEMU: q, Timeout: 20 * time.Second}}
}

func (f *fakeVM) args(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestRunReturnsGuestStatus(t *testing.T) {
	f := newFakeVM(t, "run")
	for _, want := range []int{0, 3, 255} {
		status, console, err := Run(context.Background(), f.opts, "echo hello from the guest; exit "+strconv.Itoa(want))
		if err != nil || status != want {
			t.Errorf("exit %d: status %d, %v", want, status, err)
		}
		if !strings.Contains(string(console), "hello from the guest") {
			t.Errorf("console %q lacks the command's output", console)
		}
	}
}

func TestRunQEMUArguments(t *testing.T) {
	f := newFakeVM(t, "run")
	share := t.TempDir()
	f.opts.Share = share
	f.opts.MemMiB, f.opts.CPUs, f.opts.Net, f.opts.MTU = 1024, 1, NetFlat, 9000
	if _, _, err := Run(context.Background(), f.opts, "true"); err != nil {
		t.Fatal(err)
	}
	args := f.args(t)
	joined := strings.Join(args, " ")
	for _, want := range []string{"-accel tcg", "-nic none", "-m 1024M", "-smp 1", "-no-reboot",
		"-kernel " + f.opts.Image.Kernel, "-initrd " + f.opts.Image.Initrd,
		"local,path=" + share + ",mount_tag=host0,security_model=none,id=host0"} {
		if !strings.Contains(joined, want) {
			t.Errorf("qemu arguments lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "kvm") {
		t.Errorf("qemu arguments mention kvm (it hangs on these hosts): %s", joined)
	}
	i := slices.Index(args, "-append")
	if i < 0 || !strings.Contains(args[i+1], "rxevm.net=flat") || !strings.Contains(args[i+1], "console=ttyS0") ||
		!strings.Contains(args[i+1], "rxevm.mtu=9000") {
		t.Errorf("kernel command line: %v", args)
	}
}

// TestRunMTU: the default MTU adds nothing to the kernel command line, and
// an MTU out of range is refused before qemu starts.
func TestRunMTU(t *testing.T) {
	f := newFakeVM(t, "run")
	if _, _, err := Run(context.Background(), f.opts, "true"); err != nil {
		t.Fatal(err)
	}
	args := f.args(t)
	if i := slices.Index(args, "-append"); i < 0 || strings.Contains(args[i+1], "rxevm.mtu") {
		t.Errorf("kernel command line with the default MTU: %v", args)
	}
	for _, bad := range []int{-1, 575, 65536} {
		f.opts.MTU = bad
		if _, _, err := Run(context.Background(), f.opts, "true"); err == nil || !strings.Contains(err.Error(), "MTU") {
			t.Errorf("MTU %d: %v, want an error", bad, err)
		}
	}
}

func TestRunQEMUFailure(t *testing.T) {
	f := newFakeVM(t, "fail")
	status, console, err := Run(context.Background(), f.opts, "true")
	if !errors.Is(err, ErrQEMU) || status != StatusQEMUFailed {
		t.Fatalf("status %d, %v; want %d and ErrQEMU", status, err, StatusQEMUFailed)
	}
	if !strings.Contains(err.Error(), "cannot initialize fsdev") || !strings.Contains(string(console), "cannot initialize fsdev") {
		t.Errorf("qemu's message is neither in the error (%v) nor on the console (%q)", err, console)
	}
}

func TestRunNoStatus(t *testing.T) {
	f := newFakeVM(t, "panic")
	status, console, err := Run(context.Background(), f.opts, "true")
	if !errors.Is(err, ErrNoStatus) || status != StatusNoStatus {
		t.Fatalf("status %d, %v; want %d and ErrNoStatus", status, err, StatusNoStatus)
	}
	if !strings.Contains(string(console), "Kernel panic") {
		t.Errorf("console %q", console)
	}
	if errors.Is(err, ErrLockup) {
		t.Errorf("a panic other than a soft lockup's: %v, want no ErrLockup", err)
	}
}

// A guest that stops its heartbeat for Options.Heartbeat is killed as
// frozen (ErrNoStatus and ErrLockup, not ErrTimeout); one that beats runs
// on past it.
func TestRunHeartbeat(t *testing.T) {
	f := newFakeVM(t, "beating")
	f.opts.Heartbeat = time.Second
	if status, _, err := Run(context.Background(), f.opts, "true"); err != nil || status != 0 {
		t.Fatalf("a beating guest: status %d, %v", status, err)
	}
	f = newFakeVM(t, "freeze")
	f.opts.Heartbeat = time.Second
	status, _, err := Run(context.Background(), f.opts, "true")
	if !errors.Is(err, ErrNoStatus) || !errors.Is(err, ErrLockup) || errors.Is(err, ErrTimeout) || status != StatusNoStatus {
		t.Fatalf("a frozen guest: status %d, %v; want %d, ErrNoStatus and ErrLockup (before the 20 s timeout)", status, err, StatusNoStatus)
	}
	if !strings.Contains(err.Error(), "froze") {
		t.Errorf("error %q does not say the guest froze", err)
	}
	waitGone(t, f.dir)
}

// A guest kernel that panicked on a soft lockup gives ErrNoStatus and
// ErrLockup; the kernel command line asks for that panic.
func TestRunLockup(t *testing.T) {
	f := newFakeVM(t, "lockup")
	status, _, err := Run(context.Background(), f.opts, "true")
	if !errors.Is(err, ErrNoStatus) || !errors.Is(err, ErrLockup) || status != StatusNoStatus {
		t.Fatalf("status %d, %v; want %d, ErrNoStatus and ErrLockup", status, err, StatusNoStatus)
	}
	args := f.args(t)
	i := slices.Index(args, "-append")
	for _, want := range []string{"softlockup_panic=1", "watchdog_thresh=60", "softlockup_all_cpu_backtrace=1"} {
		if i < 0 || !strings.Contains(args[i+1], want) {
			t.Errorf("kernel command line lacks %s: %v", want, args)
		}
	}
}

// processGone reports whether pid has exited (gone, or a zombie waiting for
// its new parent to reap it).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

func waitGone(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"pid", "child"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		deadline := time.Now().Add(5 * time.Second)
		for !processGone(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("%s process %d still runs after Run returned", name, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestRunTimeoutKillsQEMU(t *testing.T) {
	f := newFakeVM(t, "hang")
	f.opts.Timeout = 500 * time.Millisecond
	status, _, err := Run(context.Background(), f.opts, "true")
	if !errors.Is(err, ErrTimeout) || status != StatusTimeout {
		t.Fatalf("status %d, %v; want %d and ErrTimeout", status, err, StatusTimeout)
	}
	waitGone(t, f.dir)
}

func TestRunCancelKillsQEMU(t *testing.T) {
	f := newFakeVM(t, "hang")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(f.dir, "child")); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	status, _, err := Run(ctx, f.opts, "true")
	if !errors.Is(err, context.Canceled) || status != StatusInterrupted {
		t.Fatalf("status %d, %v; want %d and context.Canceled", status, err, StatusInterrupted)
	}
	waitGone(t, f.dir)
}

func TestRunRejectsBadOptions(t *testing.T) {
	f := newFakeVM(t, "run")
	for name, mod := range map[string]func(*Options){
		"missing share": func(o *Options) { o.Share = filepath.Join(f.dir, "absent") },
		"share is file": func(o *Options) { o.Share = f.opts.QEMU },
		"bad network":   func(o *Options) { o.Net = "bridge" },
	} {
		o := f.opts
		mod(&o)
		if status, _, err := Run(context.Background(), o, "true"); !errors.Is(err, ErrQEMU) || status != StatusQEMUFailed {
			t.Errorf("%s: status %d, %v; want ErrQEMU", name, status, err)
		}
	}
	if _, _, err := Run(context.Background(), f.opts, "  "); !errors.Is(err, ErrQEMU) {
		t.Errorf("empty command: %v, want ErrQEMU", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "args")); err == nil {
		t.Error("qemu was started despite bad options")
	}
}

func TestParseStatus(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]int{"0\n": 0, "3\r\n": 3, "noise\n17\n": 17, "1\n300\n": 1} {
		p := filepath.Join(dir, "s")
		os.WriteFile(p, []byte(content), 0o644)
		if got, ok := parseStatus(p); !ok || got != want {
			t.Errorf("parseStatus(%q) = %d, %v; want %d", content, got, ok, want)
		}
	}
	for _, content := range []string{"", "\n", "panic\n"} {
		p := filepath.Join(dir, "s")
		os.WriteFile(p, []byte(content), 0o644)
		if _, ok := parseStatus(p); ok {
			t.Errorf("parseStatus(%q) found a status", content)
		}
	}
}
