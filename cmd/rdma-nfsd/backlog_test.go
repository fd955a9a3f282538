package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport"
)

// TestBacklogFlag (issue 36): -backlog is bounded by the handshakes the
// transport's handshake memory budget holds at the -credits and inline
// sizes given (128 at the defaults, 512 with -credits 16): a larger one
// exits 2 with one line naming the flag and the figures, before anything
// listens; one that fits is taken (the run then fails on the port in
// use, exit 1).
func TestBacklogFlag(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	_, port, _ := net.SplitHostPort(busy.Addr().String())
	base := []string{"-dir", t.TempDir(), "-addr", "127.0.0.1", "-rdma-port", port, "-tcp-port", port,
		"-provider", "soft", "-rpcbind=false"}
	for _, tc := range []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"-backlog", "129"}, 2, "-backlog 129: out of range [1, 128] (0: 128): each handshake registers 512 KiB"},
		{[]string{"-backlog", "65535"}, 2, "-backlog 65535: out of range [1, 128]"},
		{[]string{"-credits", "128", "-backlog", "65"}, 2, "-backlog 65: out of range [1, 64]"},
		{[]string{"-inline-send", "16384", "-inline-recv", "16384", "-backlog", "33"}, 2, "-backlog 33: out of range [1, 32]"},
		{[]string{"-backlog", "-1"}, 2, "-backlog -1: out of range [1, 128]"},
		{[]string{"-backlog", "128"}, 1, "address already in use"},
		{[]string{"-credits", "16", "-backlog", "512"}, 1, "address already in use"},
		{[]string{"-backlog", "0"}, 1, "address already in use"},
	} {
		var errb bytes.Buffer
		status := mainStatus(t.Context(), append(append([]string(nil), base...), tc.args...), &errb)
		require.Equal(t, tc.status, status, "%v: %s", tc.args, errb.String())
		require.Contains(t, errb.String(), tc.want, "%v", tc.args)
		if tc.status == 2 {
			require.Equal(t, 1, strings.Count(errb.String(), "\n"), "%v: one line: %q", tc.args, errb.String())
		}
	}
}

// TestHandshakeMetrics: /metrics has the handshake bounds (-backlog 16,
// within the default budget of 128 MiB) and the displaced handshakes.
func TestHandshakeMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, logs, done := startRun(t, ctx, "-dir", t.TempDir(), "-rdma-port", "0", "-provider", "soft",
		"-rpcbind=false", "-metrics", "127.0.0.1:0", "-backlog", "16")
	mfs := scrape(t, metricsURL(t, logs.String()))
	l := srv.RDMAAddr().String()
	require.Equal(t, 16.0, value(t, mfs, "rpcrdma_listener_handshakes_limit", l))
	require.Equal(t, float64(transport.DefaultHandshakeMemory), value(t, mfs, "rpcrdma_listener_handshake_memory_limit_bytes", l))
	require.Equal(t, 0.0, value(t, mfs, "rpcrdma_listener_handshakes_displaced_total", l))
	cancel()
	require.NoError(t, <-done)
}
