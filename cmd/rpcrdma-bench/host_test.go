package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchHostProgram runs the built program: bench -host on a machine
// without the RDMA device it asks for says so on one line and exits 1
// (this machine has no RDMA device at all, the test hosts never do; where
// one is present, -device names one that is not); -h exits 0 and lists the
// -host flags; a -host flag without -host exits 2 naming it.
func TestBenchHostProgram(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "rpcrdma-bench")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) (stdout, stderr string, status int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir() // outside the checkout: -host needs none
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			status = ee.ExitCode()
		default:
			t.Fatalf("%v: %v", args, err)
		}
		return o.String(), e.String(), status
	}

	args := []string{"bench", "-host", "-quick"}
	want := "rpcrdma-bench: no RDMA device found: rdma-core lists none ("
	if ents, _ := os.ReadDir("/sys/class/infiniband"); len(ents) > 0 {
		args = append(args, "-device", "no-such-device")
		want = `rpcrdma-bench: no RDMA device found: no device "no-such-device" (this host has `
	}
	stdout, stderr, status := run(args...)
	if status != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("%v: status %d, stdout %q, stderr %q; want status 1, no output and one line beginning %q", args, status, stdout, stderr, want)
	}

	stdout, stderr, status = run("bench", "-h")
	if status != 0 {
		t.Errorf("bench -h: status %d, stderr %q", status, stderr)
	}
	for _, f := range []string{"-host", "-device", "-addr", "-kernel"} {
		if out := stdout + stderr; !strings.Contains(out, "\n  "+f+" ") && !strings.Contains(out, "\n  "+f+"\n") {
			t.Errorf("bench -h does not list %s:\n%s", f, stdout+stderr)
		}
	}
	stdout, stderr, status = run("-h")
	if status != 0 || !strings.Contains(stdout, "bench -host [-device NAME] [-addr IP] [-kernel]") {
		t.Errorf("-h: status %d, usage lacks the -host line:\n%s%s", status, stdout, stderr)
	}

	_, stderr, status = run("bench", "-kernel")
	if status != 2 || !strings.Contains(stderr, "-kernel: only with -host") {
		t.Errorf("bench -kernel: status %d, stderr %q; want 2 and the flag named", status, stderr)
	}
}
