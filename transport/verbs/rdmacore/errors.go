//go:build linux && cgo

package rdmacore

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Errors of posting and of a connection's life. They are values so that
// the hot paths never allocate.
var (
	errConnClosed       = fmt.Errorf("rdmacore: connection closed: %w", verbs.ErrClosed)
	errListenerClosed   = fmt.Errorf("rdmacore: listener closed: %w", verbs.ErrClosed)
	errNotEstablished   = fmt.Errorf("rdmacore: send queue not ready before the connection is established: %w", verbs.ErrNotSupported)
	errSendQueueFull    = fmt.Errorf("rdmacore: send queue full: %w", verbs.ErrQueueFull)
	errRecvQueueFull    = fmt.Errorf("rdmacore: receive queue full: %w", verbs.ErrQueueFull)
	errTooManySGE       = fmt.Errorf("rdmacore: scatter/gather list longer than MaxSGE: %w", verbs.ErrNotSupported)
	errSGELength        = fmt.Errorf("rdmacore: scatter/gather element of more than 2 GiB: %w", verbs.ErrLength)
	errForeignRegion    = fmt.Errorf("rdmacore: scatter/gather element names a region of another connection: %w", verbs.ErrLocalProtection)
	errClosedRegion     = fmt.Errorf("rdmacore: scatter/gather element names a closed region: %w", verbs.ErrLocalProtection)
	errForeignWindow    = fmt.Errorf("rdmacore: bind names a window of another connection, or a closed one: %w", verbs.ErrLocalProtection)
	errOpcode           = fmt.Errorf("rdmacore: unknown work request opcode: %w", verbs.ErrNotSupported)
	errPeerDisconnected = fmt.Errorf("rdmacore: peer disconnected: %w", verbs.ErrDisconnected)
	errDeviceRemoved    = fmt.Errorf("rdmacore: RDMA device removed: %w", verbs.ErrDisconnected)
	errAddrChange       = fmt.Errorf("rdmacore: local address changed: %w", verbs.ErrDisconnected)
	errCQ               = fmt.Errorf("rdmacore: completion queue failed: %w", verbs.ErrDisconnected)
	errBadCompletion    = fmt.Errorf("rdmacore: completion names no posted work request: %w", verbs.ErrDisconnected)
	errCaps             = fmt.Errorf("rdmacore: queue capacities out of the device's range: %w", verbs.ErrNotSupported)
	errNotBound         = fmt.Errorf("rdmacore: no device: %w", verbs.ErrNotSupported)
	errRegionSize       = fmt.Errorf("rdmacore: region size must be positive: %w", verbs.ErrNotSupported)
	errRegionBusy       = fmt.Errorf("rdmacore: region has bound memory windows (IBA 10.6.7.2.6): %w", verbs.ErrNotSupported)
	errRequestUsed      = fmt.Errorf("rdmacore: connection request already accepted or rejected: %w", verbs.ErrClosed)

	errRejectPrivateData = fmt.Errorf("rdmacore: reject private data over %d bytes: %w", verbs.RejectPrivateDataLen, verbs.ErrPrivateDataTooLong)
)

// completionError is the error of a connection after a failed
// completion: it names the device's status and matches both
// verbs.ErrDisconnected and the status's own error.
type completionError struct {
	status    verbs.Status
	wcStatus  uint32 // enum ibv_wc_status
	vendorErr uint32
}

func (e *completionError) Error() string {
	return fmt.Sprintf("rdmacore: a work request failed with %s (ibv_wc_status %d, vendor error %#x): the queue pair is in the error state: %v",
		wcStatusName(e.wcStatus), e.wcStatus, e.vendorErr, verbs.ErrDisconnected)
}

// Unwrap returns verbs.ErrDisconnected and the status's error.
func (e *completionError) Unwrap() []error { return []error{verbs.ErrDisconnected, e.status.Err()} }

// padPrivateData returns pd zero-padded to n bytes (the IB CM always
// delivers the whole field).
func padPrivateData(pd []byte, n int) []byte {
	out := make([]byte, max(n, len(pd)))
	copy(out, pd)
	return out
}
