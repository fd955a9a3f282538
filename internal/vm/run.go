package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Net selects the guest's RDMA network (see guest/rxevm-net-setup).
type Net string

const (
	// NetWire: rxe0 on veth0 (10.0.0.1) and rxe1 on veth1 (10.0.0.2), with
	// policy routing so that traffic between the two crosses the veth.
	NetWire Net = "wire"
	// NetFlat: the same devices and addresses without policy routing; a
	// connection between the two uses rxe's internal loopback.
	NetFlat Net = "flat"
	// NetNone: no veth, no rxe device.
	NetNone Net = "none"
)

// Exit statuses that Run returns when the guest reported none, in the manner
// of timeout(1) and the shells.
const (
	StatusTimeout     = 124 // the VM ran longer than Options.Timeout and was killed
	StatusQEMUFailed  = 125 // qemu could not start or exited with an error
	StatusNoStatus    = 126 // the VM stopped without reporting a status (kernel panic, init died)
	StatusInterrupted = 130 // the context was cancelled; qemu was killed
)

// Errors of Run and Shell, to be tested with errors.Is. A command that fails
// inside the guest is not an error: its exit status is returned with a nil
// error.
var (
	ErrTimeout  = errors.New("vm: timeout: qemu killed")
	ErrQEMU     = errors.New("vm: qemu failed")
	ErrNoStatus = errors.New("vm: the guest reported no exit status")
	// ErrLockup comes with ErrNoStatus when the guest locked up: its
	// kernel panicked on a soft lockup, a vCPU that ran no task for two
	// minutes (lockupKernelArgs; the console has every CPU's backtrace),
	// or the whole guest froze, silent on its heartbeat line for
	// Options.Heartbeat (qemu killed).
	ErrLockup = errors.New("vm: the guest locked up")
)

// Options configure a VM run. The zero value is a valid configuration.
type Options struct {
	// Image to boot; nil means the image last built in DefaultCacheDir().
	Image *Image
	// Share is a host directory mounted read-write at /host in the guest
	// (virtio-9p); "" shares nothing.
	Share string
	// Timeout kills qemu after this long (default 5 minutes).
	Timeout time.Duration
	// MemMiB is the guest memory (default 2048) and CPUs its vCPUs (default 2).
	MemMiB, CPUs int
	// Net is the guest network (default NetWire).
	Net Net
	// MTU is the MTU of the veth pair under the two rxe devices (0: the
	// veth default, 1500, which gives rxe an active path MTU of 1024; 9000
	// gives 4096, as a RoCE network with jumbo frames). rxe's path MTU is
	// the largest IB MTU (256-4096) that fits in MTU with RoCEv2's
	// headers; 576..65535.
	MTU int
	// Console, if not nil, receives the console output as it is produced
	// (Run also returns all of it).
	Console io.Writer
	// Verbose shows the full kernel log on the console and boot times.
	Verbose bool
	// Append holds extra kernel command line arguments.
	Append string
	// QEMU is the emulator to run; "" means qemu-system-x86_64 from PATH.
	QEMU string
	// Heartbeat is how long a guest running a command may leave its
	// heartbeat line (ttyS2, a byte every heartbeatPeriod from /init)
	// silent before Run kills qemu as frozen (ErrLockup); 0 means 3
	// minutes, a negative value never.
	Heartbeat time.Duration
}

// heartbeatPeriod is how often the guest's /init writes its heartbeat,
// and how often Run looks at it.
const heartbeatPeriod = 5 * time.Second

// ValidMTU reports whether Options.MTU accepts mtu: 0 (the default) or
// 576..65535.
func ValidMTU(mtu int) bool { return mtu == 0 || mtu >= 576 && mtu <= 65535 }

// Run boots the VM, runs command with bash in it (as root, in /root, after
// the network, the modules and the share are set up) and powers the VM off.
// It returns the command's exit status and the console output (the guest
// kernel's messages and the command's standard output and error).
//
// A nil error means the guest reported the status. Otherwise the status is
// StatusTimeout (ErrTimeout), StatusQEMUFailed (ErrQEMU),
// StatusNoStatus (ErrNoStatus; with ErrLockup if the guest locked up) or
// StatusInterrupted (the context's error), and qemu is gone when Run
// returns in every case.
//
// The VM runs under TCG (-accel tcg; KVM is never used) with no network card;
// a boot takes about 8-10 s on two host cores before the command starts.
func Run(ctx context.Context, opts Options, command string) (status int, console []byte, err error) {
	if strings.TrimSpace(command) == "" {
		return StatusQEMUFailed, nil, fmt.Errorf("%w: empty command", ErrQEMU)
	}
	var buf bytes.Buffer
	out := io.Writer(&buf)
	if opts.Console != nil {
		out = io.MultiWriter(&buf, opts.Console)
	}
	status, err = run(ctx, opts, command, nil, out)
	if errors.Is(err, ErrNoStatus) && !errors.Is(err, ErrLockup) && bytes.Contains(buf.Bytes(), []byte(lockupPanic)) {
		err = fmt.Errorf("%w: %w: the guest kernel panicked on a soft lockup", ErrNoStatus, ErrLockup)
	}
	return status, buf.Bytes(), err
}

// lockupKernelArgs make a guest whose vCPU runs no task for 120 s (twice
// watchdog_thresh) print every CPU's backtrace and panic; with -no-reboot
// qemu then exits. Such a guest does not come back: one with a vCPU that
// answered no interrupt spun for its remaining 20 minutes. panic_print
// 0x20 replays the kernel log at the panic, with the backtraces that
// "quiet" kept off the console.
const lockupKernelArgs = "softlockup_panic=1 watchdog_thresh=60 softlockup_all_cpu_backtrace=1 panic_print=0x20"

// lockupPanic is the guest kernel's panic message after a soft lockup.
const lockupPanic = "softlockup: hung tasks"

// Shell boots the VM into an interactive bash on the console, connected to
// stdin and stdout (qemu puts a terminal into raw mode: Ctrl-C goes to the
// guest; "exit" or Ctrl-D powers off). It returns the shell's exit status.
func Shell(ctx context.Context, opts Options, stdin io.Reader, stdout io.Writer) (int, error) {
	return run(ctx, opts, "", stdin, stdout)
}

func run(ctx context.Context, opts Options, command string, stdin io.Reader, out io.Writer) (int, error) {
	img := opts.Image
	if img == nil {
		var err error
		if img, err = LoadImage(""); err != nil {
			return StatusQEMUFailed, fmt.Errorf("%w: %v", ErrQEMU, err)
		}
	}
	args, cleanup, err := qemuArgs(img, opts, command)
	if err != nil {
		return StatusQEMUFailed, fmt.Errorf("%w: %v", ErrQEMU, err)
	}
	defer cleanup()
	qemu := opts.QEMU
	if qemu == "" {
		qemu = "qemu-system-x86_64"
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	runCtx, freeze := context.WithCancelCause(runCtx)
	defer freeze(nil)
	if beat := opts.Heartbeat; stdin == nil && beat >= 0 {
		if beat == 0 {
			beat = 3 * time.Minute
		}
		go watchHeartbeat(runCtx, args.heartbeatFile, beat, freeze)
	}
	cmd := exec.CommandContext(runCtx, qemu, args.argv...)
	cmd.Stdin = stdin // nil: /dev/null
	var stderr bytes.Buffer
	lw := &lockedWriter{w: out}
	cmd.Stdout = lw
	cmd.Stderr = io.MultiWriter(&stderr, lw)
	// Pdeathsig: qemu dies with its parent, even if the parent is killed
	// (go test's -timeout). A separate process group keeps a terminal's
	// Ctrl-C away from qemu; the harness stops it itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: stdin == nil}
	if stdin == nil {
		// on timeout or cancellation, kill the whole process group
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	}
	cmd.WaitDelay = 5 * time.Second
	werr := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return StatusInterrupted, ctx.Err()
	case errors.Is(context.Cause(runCtx), ErrLockup):
		return StatusNoStatus, context.Cause(runCtx)
	case runCtx.Err() != nil:
		return StatusTimeout, fmt.Errorf("%w after %v", ErrTimeout, timeout)
	case werr != nil:
		return StatusQEMUFailed, fmt.Errorf("%w: %v: %s", ErrQEMU, werr, bytes.TrimSpace(stderr.Bytes()))
	}
	st, ok := parseStatus(args.statusFile)
	if !ok {
		return StatusNoStatus, ErrNoStatus
	}
	return st, nil
}

// watchHeartbeat calls freeze with ErrNoStatus and ErrLockup once the
// file has not grown for d, and returns when ctx is done.
func watchHeartbeat(ctx context.Context, file string, d time.Duration, freeze context.CancelCauseFunc) {
	tick := time.NewTicker(min(heartbeatPeriod, d))
	defer tick.Stop()
	var size int64
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if fi, err := os.Stat(file); err == nil && fi.Size() != size {
				size, last = fi.Size(), now
			} else if now.Sub(last) >= d {
				freeze(fmt.Errorf("%w: %w: the guest froze (no heartbeat for %v); qemu killed",
					ErrNoStatus, ErrLockup, now.Sub(last).Round(time.Second)))
				return
			}
		}
	}
}

// parseStatus reads the last decimal number the guest wrote to ttyS1.
func parseStatus(file string) (int, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	lines := strings.Fields(string(b))
	for i := len(lines) - 1; i >= 0; i-- {
		if n, err := strconv.Atoi(strings.Trim(lines[i], "\x00")); err == nil && n >= 0 && n <= 255 {
			return n, true
		}
	}
	return 0, false
}

type qemuCommand struct {
	argv          []string
	statusFile    string
	heartbeatFile string
}

// qboot is SeaBIOS's faster replacement for direct kernel boots; qemu falls
// back to its default BIOS when the file is absent.
const qboot = "/usr/share/qemu/qboot.rom"

func qemuArgs(img *Image, opts Options, command string) (qemuCommand, func(), error) {
	var q qemuCommand
	net := opts.Net
	if net == "" {
		net = NetWire
	}
	if net != NetWire && net != NetFlat && net != NetNone {
		return q, nil, fmt.Errorf("unknown network %q (want wire, flat or none)", net)
	}
	if !ValidMTU(opts.MTU) {
		return q, nil, fmt.Errorf("MTU %d out of range (576..65535, or 0 for the default)", opts.MTU)
	}
	mem, cpus := opts.MemMiB, opts.CPUs
	if mem <= 0 {
		mem = 2048
	}
	if cpus <= 0 {
		cpus = 2
	}
	tmp, err := os.MkdirTemp("", "rxevm-run-")
	if err != nil {
		return q, nil, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	cmdFile := filepath.Join(tmp, "cmd")
	q.statusFile = filepath.Join(tmp, "status")
	body := ""
	if command != "" {
		body = command + "\n"
	}
	if err := os.WriteFile(cmdFile, []byte(body), 0o644); err != nil {
		cleanup()
		return q, nil, err
	}
	q.heartbeatFile = filepath.Join(tmp, "heartbeat")
	for _, f := range []string{q.statusFile, q.heartbeatFile} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			cleanup()
			return q, nil, err
		}
	}
	// lpj: skips the delay loop calibration of the second vCPU, which fails
	// under TCG; mitigations=off: no retpolines or RSB filling
	// in a throwaway VM; cryptomgr.notests: no crypto self-tests at boot and
	// module load.
	appendArgs := "console=ttyS0 panic=-1 lpj=10000000 mitigations=off cryptomgr.notests " + lockupKernelArgs +
		" rxevm.net=" + string(net)
	if opts.MTU != 0 {
		appendArgs += " rxevm.mtu=" + strconv.Itoa(opts.MTU)
	}
	if opts.Verbose {
		appendArgs += " loglevel=7"
	} else {
		appendArgs += " quiet"
	}
	if opts.Append != "" {
		appendArgs += " " + opts.Append
	}
	q.argv = []string{
		"-accel", "tcg", "-cpu", "max", "-smp", strconv.Itoa(cpus), "-m", strconv.Itoa(mem) + "M",
		"-machine", "pc", "-nodefaults", "-no-user-config", "-nic", "none", "-display", "none", "-no-reboot",
		"-kernel", img.Kernel, "-initrd", img.Initrd, "-append", appendArgs,
		// ttyS0: the console on stdout; ttyS1: the exit status, a host
		// file; ttyS2: the heartbeat, another
		"-chardev", "stdio,id=con,signal=off", "-serial", "chardev:con", "-serial", "file:" + q.statusFile,
		"-serial", "file:" + q.heartbeatFile,
		// the command; /init reads it from /sys/firmware/qemu_fw_cfg
		"-fw_cfg", "name=opt/rxevm/cmd,file=" + cmdFile,
	}
	if _, err := os.Stat(qboot); err == nil {
		q.argv = append(q.argv, "-bios", qboot)
	}
	if opts.Share != "" {
		abs, err := filepath.Abs(opts.Share)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(abs); err == nil && !fi.IsDir() {
				err = fmt.Errorf("%s is not a directory", abs)
			}
		}
		if err != nil {
			cleanup()
			return q, nil, fmt.Errorf("share: %w", err)
		}
		if strings.Contains(abs, ",") {
			cleanup()
			return q, nil, fmt.Errorf("share: qemu cannot take a path with a comma: %s", abs)
		}
		q.argv = append(q.argv, "-virtfs", "local,path="+abs+",mount_tag=host0,security_model=none,id=host0")
	}
	return q, cleanup, nil
}

// lockedWriter serializes the writes of qemu's stdout and stderr copiers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
