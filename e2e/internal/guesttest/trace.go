package guesttest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// TraceDir is the guest's tracefs (internal/vm/guest/init mounts it).
const TraceDir = "/sys/kernel/tracing"

// ClientTraceEvents are the kernel client's RPC-over-RDMA tracepoints
// (include/trace/events/rpcrdma.h) that a failure report shows: each call
// marshaled, posted and answered, the connection's life and every error.
// A handful, not the whole rpcrdma system of about a hundred: each event
// switched on or off patches kernel text (a static key) and waits for
// every vCPU to acknowledge it, and under TCG a guest has stalled for good
// in that wait (after a few hundred switches, on a busy host).
var ClientTraceEvents = []string{
	"xprtrdma_marshal", "xprtrdma_marshal_failed", "xprtrdma_post_send", "xprtrdma_post_send_err",
	"xprtrdma_reply", "xprtrdma_err_chunk", "xprtrdma_err_vers", "xprtrdma_err_unrecognized",
	"xprtrdma_reply_vers_err", "xprtrdma_reply_rqst_err", "xprtrdma_reply_short_err", "xprtrdma_reply_hdr_err",
	"xprtrdma_op_connect", "xprtrdma_connect", "xprtrdma_disconnect", "xprtrdma_op_inject_dsc",
	"xprtrdma_post_recvs_err", "xprtrdma_dma_maperr", "xprtrdma_frwr_maperr",
}

// EnableTrace empties the trace buffer and switches on each of the
// events, named "system/event" or, for rpcrdma's, "event". An event that
// is already on is left as it is (no switch).
func EnableTrace(events ...string) error {
	if err := os.WriteFile(filepath.Join(TraceDir, "trace"), nil, 0o644); err != nil {
		return fmt.Errorf("empty the trace buffer: %w", err)
	}
	var errs []error
	for _, e := range events {
		if filepath.Dir(e) == "." {
			e = "rpcrdma/" + e
		}
		f := filepath.Join(TraceDir, "events", e, "enable")
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 && b[0] == '1' {
			continue
		}
		if err := os.WriteFile(f, []byte("1"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("enable %s: %w", e, err))
		}
	}
	return errors.Join(errs...)
}
