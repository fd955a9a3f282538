//go:build e2eguest

package knfsdclient_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tracefs is where the guest mounts the kernel's tracing file system.
const tracefs = "/sys/kernel/tracing"

// enableServerTrace turns on the kernel's rpcrdma tracepoints
// (include/trace/events/rpcrdma.h), whose svcrdma_* events are knfsd's
// own record of what it decoded from our transport headers and what it
// did about them, with a buffer large enough for the longest test.
func enableServerTrace() error {
	if err := os.WriteFile(filepath.Join(tracefs, "buffer_size_kb"), []byte("8192"), 0); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(tracefs, "events/rpcrdma/enable"), []byte("1"), 0)
}

// clearServerTrace empties the trace buffer (a truncating open does).
func clearServerTrace(t testing.TB) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(tracefs, "trace"), nil, 0), "clearing the trace")
}

// serverEvents is what knfsd's svcrdma tracepoints recorded since the last
// clearServerTrace.
type serverEvents struct {
	// count is the number of events by name, without "svcrdma_".
	count map[string]int
	// invRKeys are the rkeys of the Sends that were Send With
	// Invalidate (svcrdma_post_send inv_rkey, when not zero).
	invRKeys []uint32
	// chunkRKeys are the rkeys of every Read and Write/Reply chunk
	// segment svcrdma decoded from our calls (svcrdma_decode_rseg,
	// svcrdma_decode_wseg: LENGTH@OFFSET:HANDLE).
	chunkRKeys map[uint32]bool
	// errors are the lines of error events: a rejected header
	// (svcrdma_decode_*_err, svcrdma_err_chunk, svcrdma_err_vers), a
	// failed work request or post, a queue pair error. Work requests
	// flushed when a connection closes (svcrdma_wc_*_flush) are not
	// errors: they may also come late from an earlier test's connection.
	errors []string
	lines  []string
}

// readServerEvents reads and parses the trace buffer.
func readServerEvents(t testing.TB) serverEvents {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(tracefs, "trace"))
	require.NoError(t, err, "reading the trace")
	ev := serverEvents{count: map[string]int{}, chunkRKeys: map[uint32]bool{}}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		i := slices.IndexFunc(f, func(s string) bool { return strings.HasPrefix(s, "svcrdma_") && strings.HasSuffix(s, ":") })
		if i < 0 {
			continue
		}
		ev.lines = append(ev.lines, strings.TrimSpace(line))
		name := strings.TrimSuffix(strings.TrimPrefix(f[i], "svcrdma_"), ":")
		ev.count[name]++
		switch {
		case strings.HasSuffix(name, "_err") || name == "err_chunk" || name == "err_vers" || name == "qp_error":
			ev.errors = append(ev.errors, strings.TrimSpace(line))
		case name == "post_send":
			for _, kv := range f[i+1:] {
				if v, ok := strings.CutPrefix(kv, "inv_rkey="); ok {
					if k := parseHex32(t, v); k != 0 {
						ev.invRKeys = append(ev.invRKeys, k)
					}
				}
			}
		case name == "decode_rseg" || name == "decode_wseg":
			seg := f[len(f)-1] // LENGTH@OFFSET:HANDLE
			_, handle, ok := strings.Cut(seg, ":")
			require.True(t, ok, "segment in %q", line)
			ev.chunkRKeys[parseHex32(t, handle)] = true
		}
	}
	return ev
}

func parseHex32(t testing.TB, s string) uint32 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	require.NoError(t, err, "hex number %q in the trace", s)
	return uint32(v)
}

// requireHealthy checks that svcrdma reported no error, and that every
// rkey it invalidated by Send With Invalidate was one of our chunks'.
func (ev serverEvents) requireHealthy(t testing.TB) {
	t.Helper()
	require.Empty(t, ev.errors, "svcrdma error events")
	for _, k := range ev.invRKeys {
		require.True(t, ev.chunkRKeys[k], "knfsd invalidated rkey %#x, not one of our chunks'", k)
	}
}

// String summarises the counts, for the log.
func (ev serverEvents) String() string {
	names := make([]string, 0, len(ev.count))
	for n := range ev.count {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, " %s=%d", n, ev.count[n])
	}
	fmt.Fprintf(&b, " send_with_invalidate=%d", len(ev.invRKeys))
	return strings.TrimSpace(b.String())
}

// logServerTail logs the last svcrdma events, for a failed test.
func logServerTail(t testing.TB) {
	raw, err := os.ReadFile(filepath.Join(tracefs, "trace"))
	if err != nil {
		t.Logf("trace: %v", err)
		return
	}
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.Contains(l, "svcrdma_") && !strings.Contains(l, "svcrdma_post_recv") && !strings.Contains(l, "wc_recv_flush") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	t.Logf("svcrdma trace, last events:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
}

func TestMain(m *testing.M) {
	if err := enableServerTrace(); err != nil {
		fmt.Fprintln(os.Stderr, "knfsdclient: enabling the rpcrdma tracepoints:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
