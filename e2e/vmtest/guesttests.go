package vmtest

import (
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// GuestTests describes a package of Go tests that run inside the VM.
type GuestTests struct {
	// Pkg is the package holding the tests: an import path, or a directory
	// relative to the calling test's package directory ("./internal/x").
	Pkg string
	// Tags are the build tags of the guest-only test files; "" means
	// "e2eguest". Guest-only files carry //go:build e2eguest, so that a plain
	// go test on the host does not compile them.
	Tags string
	// CGO builds the binary with cgo (for libibverbs/librdmacm); the default
	// is a static binary.
	CGO bool
	// Binaries are main packages built into the share next to the test
	// binary, for the guest tests to run as separate processes
	// (/host/<Name>).
	Binaries []Binary
	// Setup runs in the guest before the tests, e.g. "rxevm-nfsd-start".
	Setup string
	// Args are extra flags of the test binary, e.g. "-test.run=TestX".
	Args []string
	// Options of the VM run; Share is set by RunGuestTests, Timeout
	// defaults to 10 minutes.
	Options vm.Options
}

// Binary is a main package that RunGuestTests builds into the share.
type Binary struct {
	// Name is the file name in the share: the guest runs /host/<Name>.
	Name string
	// Pkg is the main package: an import path, or a directory relative to
	// the calling test's package directory.
	Pkg string
	// CGO links it with cgo (e.g. cmd/rdma-nfsd for rdma-core's libraries);
	// the default is a static binary.
	CGO bool
}

// RunGuestTests compiles the tests of g.Pkg on the host (go test -c) and
// the main packages of g.Binaries (go build) into a new share, boots the VM
// once and runs the tests there from the share with -test.v. Each failed
// guest test becomes an error of t, with its output, and t also fails if the
// binary exits with a non-zero status; then the whole guest output is
// logged.
func RunGuestTests(t testing.TB, g GuestTests) *Result {
	t.Helper()
	img := Require(t)
	tags := g.Tags
	if tags == "" {
		tags = "e2eguest"
	}
	share := ShareDir(t)
	name := path.Base(strings.TrimSuffix(g.Pkg, "/")) + ".test"
	BuildTest(t, share, g.Pkg, name, tags, g.CGO)
	for _, b := range g.Binaries {
		if b.Name == "" || b.Name == name || strings.ContainsAny(b.Name, "/ ") {
			t.Fatalf("vmtest: binary name %q: want a plain file name other than %q", b.Name, name)
		}
		if b.CGO {
			BuildCGO(t, share, b.Pkg, b.Name)
		} else {
			BuildStatic(t, share, b.Pkg, b.Name)
		}
	}
	opts := g.Options
	opts.Image, opts.Share = img, share
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Minute
	}
	script := "set -e\n"
	if g.Setup != "" {
		script += g.Setup + "\n"
	}
	script += "cd /host\n./" + shellQuote(name) + " -test.v"
	for _, a := range g.Args {
		script += " " + shellQuote(a)
	}
	r := Run(t, opts, script+"\n")
	// The failures come first, each with its own output, so that a log cut
	// to its first lines still says what failed and why.
	out := guestOutput(r)
	for _, f := range guestFailures(out) {
		t.Errorf("in the VM: %s", f)
	}
	if r.Status != 0 {
		t.Errorf("in the VM: %s exited with status %d", name, r.Status)
	}
	t.Logf("guest output of %s:\n%s", g.Pkg, out)
	return r
}

// failureLines is how many lines of a failed test's output guestFailures
// keeps: its last ones, where the failure is.
const failureLines = 30

// guestFailures returns each failed test of the output of a go test -v run
// ("--- FAIL: TestX/sub (1.00s)") with the lines the test printed (from its
// "=== RUN", "=== CONT" or "=== NAME" line on, the last failureLines of
// them), and a panic with the lines that follow it. A test whose subtest
// failed is named on its own line: its subtest's entry has the output.
func guestFailures(out string) []string {
	lines := strings.Split(out, "\n")
	var fails []string
	failed := map[string]bool{} // tests with a failed subtest
	for _, l := range lines {
		if name, ok := failName(l); ok {
			for i := strings.LastIndexByte(name, '/'); i > 0; i = strings.LastIndexByte(name[:i], '/') {
				failed[name[:i]] = true
			}
		}
	}
	start := -1 // where the current test's output starts
	for i, l := range lines {
		s := strings.TrimSpace(l)
		if strings.HasPrefix(s, "=== RUN") || strings.HasPrefix(s, "=== CONT") || strings.HasPrefix(s, "=== NAME") {
			start = i
		}
		if strings.HasPrefix(s, "panic: ") {
			end := min(i+failureLines, len(lines))
			fails = append(fails, strings.Join(lines[i:end], "\n"))
			continue
		}
		name, ok := failName(l)
		if !ok {
			continue
		}
		if failed[name] || start < 0 {
			fails = append(fails, s)
			continue
		}
		// The messages of t.Errorf follow the FAIL line when the output
		// is not streamed (they are indented under it).
		end := i + 1
		for end < len(lines) && strings.HasPrefix(lines[end], strings.Repeat(" ", indent(l)+4)) {
			end++
		}
		seg := lines[max(start, end-failureLines):end]
		fails = append(fails, s+"\n"+strings.Join(seg, "\n"))
	}
	return fails
}

// failName returns the test named by a "--- FAIL: " line.
func failName(l string) (string, bool) {
	s, ok := strings.CutPrefix(strings.TrimSpace(l), "--- FAIL: ")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(s, " ")
	return name, true
}

// indent is the number of leading spaces of l.
func indent(l string) int {
	return len(l) - len(strings.TrimLeft(l, " "))
}

// guestOutput is what the guest printed (Result.GuestLines).
func guestOutput(r *Result) string {
	return strings.Join(r.GuestLines(), "\n")
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
