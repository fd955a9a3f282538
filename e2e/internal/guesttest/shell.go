package guesttest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// ShLimit bounds a command of Sh: a command stuck on a hard mount (which
// retries for ever) is killed after it.
const ShLimit = 2 * time.Minute

// RequireGuest fails t unless it runs in the VM (the VM's /init sets
// RPCRDMA_IN_VM=1) and each of the files exists (the programs the host
// test builds: vmtest.GuestTests.Binaries).
func RequireGuest(t testing.TB, files ...string) {
	t.Helper()
	if os.Getenv("RPCRDMA_IN_VM") != "1" {
		t.Fatal("not in the VM (RPCRDMA_IN_VM is not 1)")
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s: %v (the host test builds it: vmtest.GuestTests.Binaries)", f, err)
		}
	}
}

// Run runs a bash script with the time limit ShLimit and returns its
// combined output.
func Run(script string) (string, error) { return RunFor(ShLimit, script) }

// RunFor runs a bash script with the time limit d and returns its combined
// output. WaitDelay stops waiting for the output of children that outlive
// a killed script.
func RunFor(d time.Duration, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Sh runs script (Run), logs it and its output, and fails t if it fails.
func Sh(t testing.TB, script string) string {
	t.Helper()
	out, err := Run(script)
	t.Logf("$ %s\n%s", script, out)
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return out
}
