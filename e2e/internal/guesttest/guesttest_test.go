package guesttest

import (
	"bytes"
	"os/exec"
	"testing"
	"time"
)

func TestPattern(t *testing.T) {
	a, b := Pattern(4099, 7), Pattern(4099, 7)
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed gave other bytes")
	}
	if bytes.Equal(a, Pattern(4099, 8)) {
		t.Error("two seeds gave the same bytes")
	}
	if bytes.Equal(a[:4000], a[1:4001]) {
		t.Error("the pattern shifted by one byte compares equal")
	}
	if !bytes.Equal(Pattern(100, 7), a[:100]) {
		t.Error("a shorter pattern is not a prefix of a longer one")
	}
	RequireData(t, a, b, "same %s", "seed")
}

func TestMountCommand(t *testing.T) {
	got := MountCommand("10.0.0.1:/", "/mnt/x", "vers=3,proto=rdma,port=20049")
	if want := "mkdir -p /mnt/x && mount -t nfs -o vers=3,proto=rdma,port=20049 10.0.0.1:/ /mnt/x"; got != want {
		t.Errorf("MountCommand = %q, want %q", got, want)
	}
}

func TestTail(t *testing.T) {
	if got := Tail("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("Tail = %q", got)
	}
	if got := Tail("a", 5); got != "a" {
		t.Errorf("Tail of one line = %q", got)
	}
}

// TestRunFor: the output comes back, a failing script is an error, and
// the limit kills a script that outlives it.
func TestRunFor(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash:", err)
	}
	if out, err := RunFor(10*time.Second, "echo hi; echo there >&2"); err != nil || out != "hi\nthere\n" {
		t.Errorf("RunFor = %q, %v", out, err)
	}
	if _, err := Run("exit 3"); err == nil {
		t.Error("a failing script is no error")
	}
	t0 := time.Now()
	if _, err := RunFor(200*time.Millisecond, "sleep 30"); err == nil || time.Since(t0) > 20*time.Second {
		t.Errorf("sleep 30 under a 200 ms limit: %v after %v", err, time.Since(t0))
	}
}
