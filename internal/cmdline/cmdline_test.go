package cmdline

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport"
)

// TestStatus: the exit statuses and what is written for each kind of
// error.
func TestStatus(t *testing.T) {
	fs := flag.NewFlagSet("p", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("n", 0, "")
	parseErr := Parse(fs, []string{"-n", "x"})
	cfgErr := &net.OpError{Op: "listen", Net: "rdma", Err: &transport.ConfigError{Pkg: "rpcrdma", Field: "Config.Credits", Value: "100000", Range: "[0, 16384]"}}
	for _, tc := range []struct {
		err    error
		status int
		out    string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{Parse(fs, []string{"-h"}), 0, ""},
		{parseErr, 2, ""}, // flag reported it, with the usage
		{Usagef("-n %d: out of range", 7), 2, "p: -n 7: out of range\n"},
		{fmt.Errorf("starting: %w", cfgErr), 2, "p: starting: listen rdma: rpcrdma: Config.Credits 100000 out of range [0, 16384]\n"},
		{errors.New("disk full"), 1, "p: disk full\n"},
	} {
		var b bytes.Buffer
		if got := Status("p", tc.err, &b); got != tc.status || b.String() != tc.out {
			t.Errorf("Status(%v) = %d, wrote %q; want %d, %q", tc.err, got, b.String(), tc.status, tc.out)
		}
	}
}

// TestInt: the ranges and their messages.
func TestInt(t *testing.T) {
	for _, tc := range []struct {
		v, lo, hi int64
		zero      string
		want      string
	}{
		{0, 1, 10, "5", ""},
		{1, 1, 10, "5", ""},
		{10, 1, 10, "", ""},
		{0, 1, 10, "", "-f 0: out of range [1, 10]"},
		{-5, 1, 10, "5", "-f -5: out of range [1, 10] (0: 5)"},
		{-1, 0, 1<<63 - 1, "none", "-f -1: out of range [0, +inf) (0: none)"},
	} {
		err := Int("-f", tc.v, tc.lo, tc.hi, tc.zero)
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
			t.Errorf("Int(%d, %d, %d, %q) = %v, want %q", tc.v, tc.lo, tc.hi, tc.zero, err, tc.want)
		}
	}
	for v, ok := range map[int]bool{0: true, 1024: true, 4096: true, 262144: true, 100: false, 5000: false, -1024: false, 263168: false} {
		if err := Inline("-inline", v); (err == nil) != ok {
			t.Errorf("Inline(%d) = %v", v, err)
		}
	}
}
