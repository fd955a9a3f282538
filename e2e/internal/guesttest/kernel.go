package guesttest

import (
	"os/exec"
	"testing"
)

// LogKernelTail logs the last n lines of the kernel log (dmesg).
func LogKernelTail(t testing.TB, n int) {
	t.Helper()
	out, _ := exec.Command("dmesg").CombinedOutput()
	t.Logf("dmesg | tail -n %d:\n%s", n, Tail(string(out), n))
}
