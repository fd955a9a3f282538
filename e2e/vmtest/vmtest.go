// Package vmtest runs end-to-end tests in the VM of package vm from Go tests.
//
// Whether the VM tests run depends on the environment variable RPCRDMA_VM:
//
//   - RPCRDMA_VM=1 (make test and CI set it): they run, and fail if qemu is
//     missing or the image cannot be built or booted.
//   - RPCRDMA_VM=0: they are skipped.
//   - unset: they run when qemu-system-x86_64 is installed, -short is not
//     given and the test binary's -timeout is 0 or at least MinAutoTimeout;
//     otherwise they are skipped with a message saying how to enable them.
//     (A plain `go test ./...` has a 10-minute -timeout, less than package
//     e2e's VM tests take: it would panic midway.)
//
// A test either calls RunGuestTests, which compiles a package's guest-only
// tests (build tag e2eguest) and runs them in one boot, or calls Require,
// builds what the guest runs into a shared directory (BuildStatic,
// BuildTest) and boots with Run. Each boot costs seconds under TCG: do
// as much as possible in one.
package vmtest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// EnvVM is the environment variable that requires ("1") or disables ("0")
// the VM tests.
const EnvVM = "RPCRDMA_VM"

// EnvInGuest is set to 1 by the guest's /init for every command it runs.
const EnvInGuest = "RPCRDMA_IN_VM"

// SkipMessage is the reason given when the VM tests are skipped for want of qemu.
const SkipMessage = "VM tests need qemu-system-x86_64; run `make test` or set RPCRDMA_VM=1 " +
	"(internal/vm/install-host-deps.sh installs qemu)"

// MinAutoTimeout is the shortest -timeout with which the VM tests run when
// RPCRDMA_VM is unset: a package's VM tests take 15-20 minutes under TCG
// on an idle host (e2e's) and about 55 beside a CPU-bound job, and a test
// binary that reaches its -timeout panics midway. make test passes
// -timeout 90m.
const MinAutoTimeout = 60 * time.Minute

// InGuest reports whether the program runs inside the VM.
func InGuest() bool { return os.Getenv(EnvInGuest) == "1" }

var (
	buildOnce sync.Once
	buildImg  *vm.Image
	buildErr  error
	buildLog  bytes.Buffer
)

// Require decides whether the calling VM test runs (see the package
// comment), skipping or failing t accordingly, and returns the VM image,
// built (or checked, when cached) once per test process.
func Require(t testing.TB) *vm.Image {
	t.Helper()
	_, err := exec.LookPath("qemu-system-x86_64")
	switch act, msg := decide(os.Getenv(EnvVM), testing.Short(), err == nil, testTimeout()); act {
	case skip:
		t.Skip(msg)
	case fail:
		t.Fatal(msg)
	}
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		t0 := time.Now()
		buildImg, buildErr = vm.Build(ctx, vm.BuildOptions{Log: &buildLog})
		fmt.Fprintf(&buildLog, "image ready in %.1fs\n", time.Since(t0).Seconds())
	})
	if buildErr != nil {
		t.Fatalf("building the VM image: %v\n%s", buildErr, buildLog.String())
	}
	return buildImg
}

type action int

const (
	run action = iota
	skip
	fail
)

// testTimeout is the test binary's -timeout (0: none, or not a test
// binary).
func testTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if d, ok := g.Get().(time.Duration); ok {
			return d
		}
	}
	return 0
}

// decide applies the policy of the package comment to the value of
// RPCRDMA_VM, the -short flag, whether qemu is installed and the test
// binary's -timeout.
func decide(env string, short, haveQEMU bool, timeout time.Duration) (action, string) {
	switch {
	case env == "0":
		return skip, "VM tests disabled by RPCRDMA_VM=0"
	case env == "1" && !haveQEMU:
		return fail, "RPCRDMA_VM=1 but qemu-system-x86_64 is not installed: run internal/vm/install-host-deps.sh"
	case env == "1":
		return run, ""
	case short:
		return skip, "VM tests skipped in -short mode; set RPCRDMA_VM=1 to run them"
	case !haveQEMU:
		return skip, SkipMessage
	case timeout > 0 && timeout < MinAutoTimeout:
		return skip, fmt.Sprintf("VM tests skipped: -timeout %v is under the %v they may take; "+
			"pass -timeout 90m, set RPCRDMA_VM=1, or run `make test` (which does both)", timeout, MinAutoTimeout)
	}
	return run, ""
}

// Result is what a VM run gave.
type Result struct {
	Status  int           // the guest command's exit status
	Console []byte        // console output (kernel messages, the command's output)
	Elapsed time.Duration // from qemu's start to its exit
}

// Lines returns the console output as lines, without carriage returns.
func (r *Result) Lines() []string {
	s := strings.ReplaceAll(string(r.Console), "\r", "")
	return strings.Split(strings.TrimRight(s, "\n"), "\n")
}

// Tagged returns what follows "TAG " on each console line that has it, in
// order: the lines a guest test prints for the host's report ("RDMANFSD
// ...", "FLOOD ...").
func (r *Result) Tagged(tag string) []string {
	var out []string
	for _, l := range r.Lines() {
		if _, rest, ok := strings.Cut(l, tag+" "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// Tail returns the last n console lines.
func (r *Result) Tail(n int) string {
	return strings.Join(lastN(r.Lines(), n), "\n")
}

// GuestLines returns what the guest printed, without the guest kernel's
// messages: the console lines that do not start with a kernel timestamp
// ("[   12.345678] "), up to the guest's "rxevm: exit status N" line
// (what follows it is the power-off). Under a busy host the kernel prints
// long reports (RCU stalls, with their stack traces and the kernel's
// package version) that would otherwise fill a failed test's tail.
func (r *Result) GuestLines() []string {
	var out []string
	for _, l := range r.Lines() {
		if kernelMessage.MatchString(l) {
			continue
		}
		out = append(out, l)
		if strings.HasPrefix(l, exitStatusLine) {
			break
		}
	}
	return out
}

// GuestTail returns the last n lines of GuestLines.
func (r *Result) GuestTail(n int) string {
	return strings.Join(lastN(r.GuestLines(), n), "\n")
}

// kernelMessage matches a console line of the guest kernel: printk's
// timestamp in brackets.
var kernelMessage = regexp.MustCompile(`^\[ *[0-9]+\.[0-9]+\] `)

// exitStatusLine starts the line the guest's /init prints once the
// command ended (internal/vm/guest/init).
const exitStatusLine = "rxevm: exit status "

// lastN returns the last n of l.
func lastN(l []string, n int) []string {
	if len(l) > n {
		return l[len(l)-n:]
	}
	return l
}

// Run boots the VM with opts (Image defaults to Require's) and runs command.
// A harness failure (timeout, qemu failure, no exit status) fails the test at
// once; the command's own status is returned. If the test fails, the whole
// console is saved to a file and its tail logged.
//
// A guest that locked up (vm.ErrLockup: its kernel panicked on a vCPU that
// ran nothing for two minutes, or the whole guest froze, silent on its
// heartbeat; an emulator or guest kernel fault that no guest program can
// cause) is booted again, once, with the same command; the first console is
// saved and the kernel's lockup report logged.
func Run(t testing.TB, opts vm.Options, command string) *Result {
	t.Helper()
	if opts.Image == nil {
		opts.Image = Require(t)
	}
	ctx := context.Background()
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl.Add(-5*time.Second))
			defer cancel()
		}
	}
	t0 := time.Now()
	status, console, err := vm.Run(ctx, opts, command)
	if errors.Is(err, vm.ErrLockup) && ctx.Err() == nil {
		first := &Result{Status: status, Console: console, Elapsed: time.Since(t0)}
		t.Logf("VM run: %v after %.1fs; console saved to %s; booting again, once. The lockup:\n%s",
			err, first.Elapsed.Seconds(), writeConsole(first, t.Name()+"-lockup"), first.lockupReport())
		t0 = time.Now()
		status, console, err = vm.Run(ctx, opts, command)
	}
	r := &Result{Status: status, Console: console, Elapsed: time.Since(t0)}
	t.Cleanup(func() {
		if t.Failed() {
			saveConsole(t, r)
		}
	})
	t.Logf("VM run: status %d after %.1fs", status, r.Elapsed.Seconds())
	if err != nil {
		kind := "harness failure"
		switch {
		case errors.Is(err, vm.ErrTimeout):
			kind = "timeout"
		case errors.Is(err, vm.ErrNoStatus):
			kind = "guest failure (no exit status: kernel panic or /init died)"
		case errors.Is(err, vm.ErrQEMU):
			kind = "qemu failure"
		}
		t.Fatalf("VM %s (status %d): %v", kind, status, err)
	}
	return r
}

// consoleTailLines is how many of the guest's lines a failed test logs.
const consoleTailLines = 60

// saveConsole writes the console to $RPCRDMA_VM_LOGDIR (default: the
// temporary directory) and logs the tail of what the guest printed
// (GuestLines): the kernel's messages are only in the file.
func saveConsole(t testing.TB, r *Result) {
	path := writeConsole(r, t.Name())
	kernel := len(r.Lines()) - len(r.GuestLines())
	t.Logf("VM console saved to %s (with %d lines of kernel messages and power-off); the guest's output, last %d lines:\n%s",
		path, kernel, consoleTailLines, r.GuestTail(consoleTailLines))
}

// writeConsole writes r's console to $RPCRDMA_VM_LOGDIR (default: the
// temporary directory) as rxevm-<name>-console.log and returns the path,
// or why it could not.
func writeConsole(r *Result, name string) string {
	dir := os.Getenv("RPCRDMA_VM_LOGDIR")
	if dir == "" {
		dir = os.TempDir()
	}
	name = strings.NewReplacer("/", "_", " ", "_").Replace(name)
	path := filepath.Join(dir, "rxevm-"+name+"-console.log")
	if err := os.WriteFile(path, r.Console, 0o644); err != nil {
		return "(not saved: " + err.Error() + ")"
	}
	return path
}

// lockupLines is how many kernel lines lockupReport keeps.
const lockupLines = 40

// lockupReport returns the guest kernel's lines from its first soft lockup
// report on (lockupLines of them): the stuck CPU, its task and backtrace.
func (r *Result) lockupReport() string {
	var out []string
	for _, l := range r.Lines() {
		if len(out) == 0 && !strings.Contains(l, "soft lockup") {
			continue
		}
		if kernelMessage.MatchString(l) {
			out = append(out, l)
		}
		if len(out) == lockupLines {
			break
		}
	}
	if len(out) == 0 {
		return "(no soft lockup report on the console)"
	}
	return strings.Join(out, "\n")
}

// ShareDir returns a new directory to share with the guest at /host,
// removed when the test ends.
func ShareDir(t testing.TB) string {
	t.Helper()
	return t.TempDir()
}

// BuildStatic builds the main package pkg (an import path or a directory
// relative to the test's package directory) as a static binary
// (CGO_ENABLED=0) at dir/name, to run in the guest as /host/name.
func BuildStatic(t testing.TB, dir, pkg, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	goTool(t, []string{"CGO_ENABLED=0"}, "build", "-trimpath", "-o", out, pkg)
	return out
}

// BuildCGO builds the main package pkg with cgo (CGO_ENABLED=1) at
// dir/name, linked dynamically against the host's C libraries (libibverbs,
// librdmacm), which works in the guest when the host's glibc is not newer
// than Debian bookworm's.
func BuildCGO(t testing.TB, dir, pkg, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	goTool(t, []string{"CGO_ENABLED=1"}, "build", "-trimpath", "-o", out, pkg)
	return out
}

// BuildTest compiles the tests of pkg (go test -c) into dir/name, with the
// given build tags (comma separated, may be ""). With cgo false the binary is
// static; with cgo true it links the host's C libraries dynamically, which
// works in the guest when the host's glibc is not newer than Debian
// bookworm's.
func BuildTest(t testing.TB, dir, pkg, name, tags string, cgo bool) string {
	t.Helper()
	out := filepath.Join(dir, name)
	env := []string{"CGO_ENABLED=0"}
	if cgo {
		env = []string{"CGO_ENABLED=1"}
	}
	args := []string{"test", "-c", "-trimpath", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	goTool(t, env, append(args, pkg)...)
	return out
}

func goTool(t testing.TB, env []string, args ...string) {
	t.Helper()
	gobin := filepath.Join(runtimeGOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
