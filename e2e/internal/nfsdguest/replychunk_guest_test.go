//go:build e2eguest

package nfsdguest

import (
	"os"
	"testing"
)

// The kernel client's Reply chunks, from its xprtrdma_chunk_reply
// tracepoint (include/trace/events/rpcrdma.h): one event per registered
// segment, "task:<id>@<client> <length>@0x<offset>:0x<handle> (more|last)",
// the last segment of a chunk marked "last". What the client registers for
// a call's reply is what it offers the server to write (RFC 8166 §3.4.6),
// whichever server answers.
const replyChunkEvent = "/sys/kernel/tracing/events/rpcrdma/xprtrdma_chunk_reply/enable"

// startReplyChunkTrace empties the trace buffer and enables the event.
func startReplyChunkTrace(t *testing.T) {
	t.Helper()
	sh(t, "echo 0 > /sys/kernel/tracing/events/enable; echo > /sys/kernel/tracing/trace; echo 1 > "+replyChunkEvent+"; echo 1 > /sys/kernel/tracing/tracing_on")
}

// stopReplyChunkTrace disables the event and sums what it recorded; a
// buffer that lost events fails the test.
func stopReplyChunkTrace(t *testing.T) replyChunks {
	t.Helper()
	sh(t, "echo 0 > "+replyChunkEvent)
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
