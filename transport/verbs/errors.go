package verbs

import (
	"errors"
	"fmt"
)

// Errors a provider reports. Completion errors are returned by
// Completion.Err and match these with errors.Is.
var (
	// ErrNotSupported: the provider or this build cannot do that.
	ErrNotSupported = errors.New("verbs: not supported")
	// ErrClosed: the connection, listener or region was closed locally.
	ErrClosed = errors.New("verbs: use of closed resource")
	// ErrDisconnected: the connection is gone (peer disconnect, fatal
	// error on either side). Posting to it fails with this error.
	ErrDisconnected = errors.New("verbs: disconnected")
	// ErrRefused: nothing listens at the address (RDMA_CM_EVENT_REJECTED
	// with consumer reason "port unreachable", or a refused TCP connect for
	// the software provider).
	ErrRefused = errors.New("verbs: connection refused")
	// ErrRejected: the listener rejected the connection request.
	ErrRejected = errors.New("verbs: connection rejected")
	// ErrLength: a message was longer than the posted Receive, or a
	// scatter/gather list longer than its buffers (IBV_WC_LOC_LEN_ERR). It
	// is the receiver's status for an overlong Send; the sender's is
	// ErrRemoteInvalidRequest (IBA). rxe (Linux 6.1) differs: the sender
	// gets IBV_WC_REM_OP_ERR and the receiver IBV_WC_LOC_QP_OP_ERR, both
	// StatusOther, because its copy_data returns -EINVAL and never reaches
	// RESPST_ERR_LENGTH (verbstest.Quirks.OverlongSendRemoteOpError).
	ErrLength = errors.New("verbs: length error")
	// ErrRemoteAccess: an RDMA Read or Write named an rkey, address or
	// length the peer had not exposed (IBV_WC_REM_ACCESS_ERR).
	ErrRemoteAccess = errors.New("verbs: remote access error")
	// ErrLocalProtection: a local buffer was not registered or was
	// outside its region (IBV_WC_LOC_PROT_ERR).
	ErrLocalProtection = errors.New("verbs: local protection error")
	// ErrRNR: a Send found no Receive posted at the peer and the RNR retry
	// count was exhausted (IBV_WC_RNR_RETRY_EXC_ERR).
	ErrRNR = errors.New("verbs: receiver not ready (RNR retry exceeded)")
	// ErrFlushed: the work request was flushed because the queue pair had
	// entered the error state (IBV_WC_WR_FLUSH_ERR).
	ErrFlushed = errors.New("verbs: work request flushed")
	// ErrRemoteInvalidRequest: the peer rejected the request as invalid,
	// e.g. a Send longer than the Receive it landed in (the sender's
	// status), or, at the receiver, a Send With Invalidate naming an rkey
	// it cannot invalidate (IBV_WC_REM_INV_REQ_ERR).
	ErrRemoteInvalidRequest = errors.New("verbs: remote invalid request")
	// ErrRetryExceeded: the transport retry counter was exhausted: the
	// peer stopped answering (IBV_WC_RETRY_EXC_ERR).
	ErrRetryExceeded = errors.New("verbs: transport retry counter exceeded")
	// ErrQueueFull: more work requests were posted than the queue pair's
	// capacity allows. Nothing of the batch was posted from the first
	// request that did not fit on.
	ErrQueueFull = errors.New("verbs: work queue full")
	// ErrPrivateDataTooLong: private data over the CM limit (56 bytes on
	// connect, 196 on accept, 148 on reject: IB CM REQ, REP and REJ).
	ErrPrivateDataTooLong = errors.New("verbs: private data too long")
	// ErrInvalidRKey: a bind asked for an rkey the window cannot take
	// (WorkRequest.RKey of another window, or with the current key
	// byte); the work request is refused when posted.
	ErrInvalidRKey = errors.New("verbs: invalid rkey for a bind")
)

// RejectedError is the error Dial returns when the listener rejected the
// connection request (RDMA_CM_EVENT_REJECTED with a consumer reject). It
// matches ErrRejected with errors.Is.
type RejectedError struct {
	// PrivateData is the reject's private data as delivered: zero-padded
	// to 148 bytes by the IB CM (IB_CM_REJ_PRIVATE_DATA_SIZE).
	PrivateData []byte
}

// Error returns the error's text.
func (e *RejectedError) Error() string { return ErrRejected.Error() }

// Is reports whether target is ErrRejected.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// Status is the outcome of a work request, as in struct ibv_wc's status.
type Status uint8

// Completion statuses. Every status but StatusSuccess means the queue pair
// is in the error state (RC semantics): later work requests complete with
// StatusFlushed.
const (
	StatusSuccess Status = iota
	StatusLength
	StatusLocalProtection
	StatusRemoteAccess
	StatusRemoteInvalidRequest
	StatusRNR
	StatusRetryExceeded
	StatusFlushed
	StatusOther
)

var statusErrs = [...]error{
	StatusSuccess:              nil,
	StatusLength:               ErrLength,
	StatusLocalProtection:      ErrLocalProtection,
	StatusRemoteAccess:         ErrRemoteAccess,
	StatusRemoteInvalidRequest: ErrRemoteInvalidRequest,
	StatusRNR:                  ErrRNR,
	StatusRetryExceeded:        ErrRetryExceeded,
	StatusFlushed:              ErrFlushed,
	StatusOther:                errors.New("verbs: work request failed"),
}

// Err returns the error for s: nil for StatusSuccess, else one of the
// package's sentinel errors.
func (s Status) Err() error {
	if int(s) < len(statusErrs) {
		return statusErrs[s]
	}
	return statusErrs[StatusOther]
}

// String returns the name of s.
func (s Status) String() string {
	switch s {
	case StatusSuccess:
		return "success"
	case StatusLength:
		return "length error"
	case StatusLocalProtection:
		return "local protection error"
	case StatusRemoteAccess:
		return "remote access error"
	case StatusRemoteInvalidRequest:
		return "remote invalid request"
	case StatusRNR:
		return "RNR retry exceeded"
	case StatusRetryExceeded:
		return "transport retry exceeded"
	case StatusFlushed:
		return "flushed"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}
