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
	// defaults to 5 minutes.
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
// once and runs the tests there from the share with -test.v. The guest
// output is logged, each failed guest test becomes an error of t, and t also
// fails if the binary exits with a non-zero status.
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
		opts.Timeout = 5 * time.Minute
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
	var failed []string
	for _, l := range r.Lines() {
		if s := strings.TrimSpace(l); strings.HasPrefix(s, "--- FAIL:") {
			failed = append(failed, s)
		}
	}
	t.Logf("guest output of %s:\n%s", g.Pkg, guestOutput(r))
	for _, f := range failed {
		t.Errorf("in the VM: %s", f)
	}
	if r.Status != 0 {
		t.Errorf("in the VM: %s exited with status %d", name, r.Status)
	}
	return r
}

// guestOutput drops the kernel's console messages ("[   12.345] ...") from
// the console output.
func guestOutput(r *Result) string {
	var out []string
	for _, l := range r.Lines() {
		if !strings.HasPrefix(l, "[") || !strings.Contains(l, "] ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
