package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
)

// TestFlags: -h and -version exit 0 before anything runs, a bad flag or
// an argument exits 2 naming it.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		status int
		name   string
	}{
		{[]string{"-h"}, 0, ""},
		{[]string{"-version"}, 0, ""},
		{[]string{"-nope"}, 2, "-nope"},
		{[]string{"extra"}, 2, "extra"},
	} {
		var out, errb bytes.Buffer
		status := cmdline.Status("rpcrdma-demo", run(t.Context(), tc.args, &out, &errb), &errb)
		if status != tc.status || !strings.Contains(errb.String(), tc.name) {
			t.Errorf("%v: status %d, stderr %q; want %d naming %q", tc.args, status, errb.String(), tc.status, tc.name)
		}
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"-version"}, &out, &out); err != nil || !strings.HasPrefix(out.String(), "rpcrdma-demo ") {
		t.Errorf("-version printed %q, %v", out.String(), err)
	}
}
