package main

import (
	"context"
	"testing"
)

// TestUsageErrors checks the exit statuses of command line mistakes (2)
// and of -h for the program and each command (0), which never boot a VM
// nor build an image.
func TestUsageErrors(t *testing.T) {
	t.Setenv("RPCRDMA_VM_CACHE", t.TempDir())
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 2},
		{[]string{"frobnicate"}, 2},
		{[]string{"run"}, 2},
		{[]string{"run", "-t", "10"}, 2},
		{[]string{"run", "-nosuchflag", "true"}, 2},
		{[]string{"run", "-mtu", "100", "true"}, 2},
		{[]string{"build", "-nosuchflag"}, 2},
		{[]string{"manifest"}, 1}, // empty cache: no image
		{[]string{"build", "extra"}, 2},
		{[]string{"manifest", "extra"}, 2},
		{[]string{"manifest", "-x"}, 2},
		{[]string{"help"}, 0},
		{[]string{"-h"}, 0},
		{[]string{"--help"}, 0},
		{[]string{"build", "-h"}, 0},
		{[]string{"run", "-h"}, 0},
		{[]string{"shell", "-help"}, 0},
		{[]string{"manifest", "-h"}, 0},
	} {
		if got := rxevm(context.Background(), c.args); got != c.want {
			t.Errorf("rxevm %q = %d, want %d", c.args, got, c.want)
		}
	}
}
