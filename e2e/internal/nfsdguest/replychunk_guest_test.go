//go:build e2eguest

package nfsdguest

import (
	"os"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
)

// The kernel client's Reply chunks come from its xprtrdma_chunk_reply
// tracepoint (include/trace/events/rpcrdma.h): one event per registered
// segment, "task:<id>@<client> <length>@0x<offset>:0x<handle> (more|last)",
// the last segment of a chunk marked "last". What the client registers for
// a call's reply is what it offers the server to write (RFC 8166 §3.4.6),
// whichever server answers.
//
// enableReplyChunkTrace switches the event on for the rest of the boot,
// once, not around each workload (guesttest.ClientTraceEvents says why).
func enableReplyChunkTrace(t *testing.T) {
	t.Helper()
	if err := guesttest.EnableTrace("xprtrdma_chunk_reply"); err != nil {
		t.Fatal(err)
	}
	sh(t, "echo 1 > /sys/kernel/tracing/tracing_on")
}

// resetReplyChunkTrace empties the trace buffer.
func resetReplyChunkTrace(t *testing.T) {
	t.Helper()
	sh(t, "echo > /sys/kernel/tracing/trace")
}

// readReplyChunkTrace sums what the buffer recorded since the last reset;
// a buffer that lost events fails the test.
func readReplyChunkTrace(t *testing.T) replyChunks {
	t.Helper()
	raw, err := os.ReadFile("/sys/kernel/tracing/trace")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseReplyChunks(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
