//go:build e2eguest

// The tests in this file run inside the VM only: the smoke test compiles them
// with `go test -c -tags e2eguest` and runs the binary from the 9p share.

package main

import (
	"os"
	"strings"
	"testing"
)

// TestGuestEnvironment checks what every in-VM test relies on: the in-VM
// marker, both rxe devices on their veths, and the 9p share.
func TestGuestEnvironment(t *testing.T) {
	if os.Getenv("RPCRDMA_IN_VM") != "1" {
		t.Fatal("RPCRDMA_IN_VM is not 1: not started by the VM's /init")
	}
	got := strings.Join(rdmaDevices(), " ")
	if got != "rxe0:veth0 rxe1:veth1" {
		t.Fatalf("RDMA devices = %q, want %q", got, "rxe0:veth0 rxe1:veth1")
	}
	mounts, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mounts), "host0 /host 9p ") {
		t.Fatalf("/host is not the 9p share:\n%s", mounts)
	}
}
