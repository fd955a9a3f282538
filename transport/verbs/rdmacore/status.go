//go:build linux && cgo

package rdmacore

import "github.com/go-rpcrdma/rpcrdma/transport/verbs"

// Values of enum ibv_wc_status (cshim.c checks them against the headers).
const (
	wcSuccess        = 0
	wcLocLenErr      = 1
	wcLocQPOpErr     = 2
	wcLocEECOpErr    = 3
	wcLocProtErr     = 4
	wcWRFlushErr     = 5
	wcMWBindErr      = 6
	wcBadRespErr     = 7
	wcLocAccessErr   = 8
	wcRemInvReqErr   = 9
	wcRemAccessErr   = 10
	wcRemOpErr       = 11
	wcRetryExcErr    = 12
	wcRNRRetryExcErr = 13
	wcLocRDDViolErr  = 14
	wcRemInvRDReqErr = 15
	wcRemAbortErr    = 16
	wcInvEECNErr     = 17
	wcInvEECStateErr = 18
	wcFatalErr       = 19
	wcRespTimeoutErr = 20
	wcGeneralErr     = 21
)

// Completion flags (enum ibv_wc_flags).
const (
	// wcWithInv is IBV_WC_WITH_INV.
	wcWithInv = 1 << 3
	// wcKernelWithInv is the kernel's IB_WC_WITH_INVALIDATE (1 << 2),
	// which rxe copies unchanged into the completions of user-space
	// queues, where libibverbs calls that bit IBV_WC_IP_CSUM_OK (see
	// invalidateQuirk).
	wcKernelWithInv = 1 << 2
)

// Send work request opcodes (enum ibv_wr_opcode).
const (
	wrRDMAWrite   = 0
	wrSend        = 2
	wrRDMARead    = 4
	wrLocalInv    = 7
	wrBindMW      = 8
	wrSendWithInv = 9
)

// Access flags of a window bind (enum ibv_access_flags).
const (
	accessRemoteWrite = 1 << 1
	accessRemoteRead  = 1 << 2
)

// wcStatus maps an ibv_wc_status to the verbs status that names the same
// condition. Statuses the interface has no name for (reliable datagram,
// EE contexts, bad responses, remote operation errors, fatal errors) are
// StatusOther; a failed bind or local invalidate is StatusOther too, as
// in the software provider.
func wcStatus(s uint32) verbs.Status {
	switch s {
	case wcSuccess:
		return verbs.StatusSuccess
	case wcLocLenErr:
		return verbs.StatusLength
	case wcLocProtErr, wcLocAccessErr:
		return verbs.StatusLocalProtection
	case wcWRFlushErr:
		return verbs.StatusFlushed
	case wcRemInvReqErr:
		return verbs.StatusRemoteInvalidRequest
	case wcRemAccessErr:
		return verbs.StatusRemoteAccess
	case wcRetryExcErr:
		return verbs.StatusRetryExceeded
	case wcRNRRetryExcErr:
		return verbs.StatusRNR
	}
	return verbs.StatusOther
}

// wcStatusName names an ibv_wc_status as ibv_wc_status_str does.
func wcStatusName(s uint32) string {
	names := [...]string{
		wcSuccess:        "success",
		wcLocLenErr:      "local length error",
		wcLocQPOpErr:     "local QP operation error",
		wcLocEECOpErr:    "local EE context operation error",
		wcLocProtErr:     "local protection error",
		wcWRFlushErr:     "Work Request Flushed Error",
		wcMWBindErr:      "memory management operation error",
		wcBadRespErr:     "bad response error",
		wcLocAccessErr:   "local access error",
		wcRemInvReqErr:   "remote invalid request error",
		wcRemAccessErr:   "remote access error",
		wcRemOpErr:       "remote operation error",
		wcRetryExcErr:    "transport retry counter exceeded",
		wcRNRRetryExcErr: "RNR retry counter exceeded",
		wcLocRDDViolErr:  "local RDD violation error",
		wcRemInvRDReqErr: "remote invalid RD request",
		wcRemAbortErr:    "aborted error",
		wcInvEECNErr:     "invalid EE context number",
		wcInvEECStateErr: "invalid EE context state",
		wcFatalErr:       "fatal error",
		wcRespTimeoutErr: "response timeout error",
		wcGeneralErr:     "general error",
	}
	if int(s) < len(names) {
		return names[s]
	}
	return "unknown"
}

// wrOpcode maps a verbs opcode to the ibv_wr_opcode that posts it.
func wrOpcode(op verbs.Opcode) (uint32, bool) {
	switch op {
	case verbs.OpSend:
		return wrSend, true
	case verbs.OpSendWithInvalidate:
		return wrSendWithInv, true
	case verbs.OpRDMAWrite:
		return wrRDMAWrite, true
	case verbs.OpRDMARead:
		return wrRDMARead, true
	case verbs.OpLocalInvalidate:
		return wrLocalInv, true
	case verbs.OpBindWindow:
		return wrBindMW, true
	}
	return 0, false
}

// mwAccess maps window access rights to ibv_access_flags.
func mwAccess(a verbs.Access) uint32 {
	var f uint32
	if a&verbs.AccessRemoteRead != 0 {
		f |= accessRemoteRead
	}
	if a&verbs.AccessRemoteWrite != 0 {
		f |= accessRemoteWrite
	}
	return f
}

// recvInvalidated reports whether a successful Receive completion's flags
// say that the message was a Send With Invalidate. quirk accepts rxe's
// flag (see invalidateQuirk).
func recvInvalidated(flags uint32, quirk bool) bool {
	return flags&wcWithInv != 0 || quirk && flags&wcKernelWithInv != 0
}
