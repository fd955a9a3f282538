package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
)

// TestBadFlags: flags out of their range, those that feed the transport's
// and the Go client's settings included, exit with status 2 and a message
// naming them, before anything runs; -h exits 0.
func TestBadFlags(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		name string
	}{
		{[]string{"bench", "-inline", "5000"}, "inline 5000"},
		{[]string{"bench", "-inline", "100"}, "inline 100"},
		{[]string{"bench", "-inline", "-1k"}, "-inline"},
		{[]string{"bench", "-inflight", "-3"}, "in flight -3"},
		{[]string{"bench", "-sizes", "2MiB"}, "size 2097152"},
		{[]string{"bench", "-rounds", "-3"}, "rounds -3"},
		{[]string{"bench", "-d", "-1s"}, "duration -1s"},
		{[]string{"bench", "-mtu", "100"}, "MTU 100"},
		{[]string{"bench", "-nope"}, "-nope"},
		{[]string{"matrix", "-inline", "5000"}, "inline 5000"},
		{[]string{"report"}, "report"},
		{[]string{"frobnicate"}, "frobnicate"},
		{nil, "no command"},
	} {
		var out, errb bytes.Buffer
		status := cmdline.Status("rpcrdma-bench", dispatch(ctx, tc.args, &out, &errb), &errb)
		if status != 2 || !strings.Contains(errb.String(), tc.name) {
			t.Errorf("%v: status %d, stderr %q; want 2 naming %q", tc.args, status, errb.String(), tc.name)
		}
	}
	for _, args := range [][]string{{"bench", "-h"}, {"matrix", "-h"}, {"help"}} {
		var out, errb bytes.Buffer
		if status := cmdline.Status("rpcrdma-bench", dispatch(ctx, args, &out, &errb), &errb); status != 0 {
			t.Errorf("%v: status %d, stderr %q", args, status, errb.String())
		}
	}
}
