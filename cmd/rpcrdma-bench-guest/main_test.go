package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
)

// TestFlags: -h and -version exit 0, a bad flag or an argument exits 2 naming it, and
// outside the VM the program refuses to run (status 1, saying why).
func TestFlags(t *testing.T) {
	t.Setenv("RPCRDMA_IN_VM", "")
	for _, tc := range []struct {
		args   []string
		status int
		name   string
	}{
		{[]string{"-h"}, 0, ""},
		{[]string{"-version"}, 0, ""},
		{[]string{"-nope"}, 2, "-nope"},
		{[]string{"extra"}, 2, "extra"},
		{[]string{"-mode", "bench"}, 1, "inside the VM only"},
	} {
		var out, errb bytes.Buffer
		status := cmdline.Status("rpcrdma-bench-guest", run(t.Context(), tc.args, &out, &errb), &errb)
		if status != tc.status || !strings.Contains(errb.String(), tc.name) {
			t.Errorf("%v: status %d, stderr %q; want %d naming %q", tc.args, status, errb.String(), tc.status, tc.name)
		}
		if tc.args[0] == "-version" && !strings.HasPrefix(out.String(), "rpcrdma-bench-guest ") {
			t.Errorf("-version printed %q", out.String())
		}
	}
}
