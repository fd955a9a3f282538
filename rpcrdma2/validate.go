package rpcrdma2

import (
	"encoding/binary"
	"errors"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// The errors of ParseCall beyond Unmarshal's.
var (
	// ErrErrorFromRequester: an RDMA2_ERROR sent to a responder, which
	// a requester never sends (§5.3.3); it is dropped.
	ErrErrorFromRequester = &ProtocolError{Outcome: OutcomeDrop, Reason: "RDMA2_ERROR sent to a responder"}
	// ErrNotCall: an RDMA2_MSG or RDMA2_NOMSG with RPCRDMA2_F_RESPONSE,
	// a reply (to a reverse-direction call), where ParseCall expects a
	// call; it is dropped.
	ErrNotCall = &ProtocolError{Outcome: OutcomeDrop, Reason: "a reply (RPCRDMA2_F_RESPONSE) where a call was expected"}
	// ErrXIDMismatch: the RPC message of an RDMA2_MSG does not start with
	// rdma_xid (RFC 8166 §4.5.2's XDR error, kept by version 2).
	ErrXIDMismatch = &ProtocolError{Outcome: OutcomeErrBadXDR, Reason: "rdma_xid differs from the RPC message's XID"}
)

// ParseCall parses the transport header of a message a responder received
// and checks what a call must be: an RDMA2_CONNPROP (no further check), or
// an RDMA2_MSG or RDMA2_NOMSG without RPCRDMA2_F_RESPONSE whose chunk lists
// pass version 1's ValidateCall (positions, limits, a position-zero Read
// chunk for a NOMSG) and, for an RDMA2_MSG, whose RPC message starts with
// rdma_xid. b is the whole message; the RPC message of an RDMA2_MSG is
// b[hdrLen:]. Errors are Unmarshal's, ErrErrorFromRequester and ErrNotCall
// (dropped), ErrXIDMismatch, and version 1's validation errors wrapped in a
// *ProtocolError with OutcomeErrBadXDR (errors.Is finds the chunks error:
// ErrTooManyReadChunks, say, for RDMA2_ERR_READ_CHUNKS). On error the body
// is cleared and, if len(b) >= CommonSize, the common part kept for the
// answer.
func (h *Header) ParseCall(b []byte, lim *chunks.Limits) (hdrLen int, err error) {
	hdrLen, err = h.Unmarshal(b, lim)
	switch {
	case err != nil:
		return 0, err
	case h.Type == HTypeError:
		err = ErrErrorFromRequester
	case h.Type == HTypeConnProp:
		return hdrLen, nil
	case h.Response():
		err = ErrNotCall
	default:
		err = h.checkMsg(b, hdrLen, h.Chunks.ValidateCall(len(b)-hdrLen, lim))
	}
	return h.parsed(hdrLen, err)
}

// checkMsg returns the error of an RDMA2_MSG or RDMA2_NOMSG whose lists
// version 1's validation judged verr, and whose RPC message, for an
// RDMA2_MSG, is b[hdrLen:].
func (h *Header) checkMsg(b []byte, hdrLen int, verr error) error {
	switch {
	case verr != nil:
		return listError(verr)
	case h.Type == HTypeMsg && (len(b)-hdrLen < 4 || binary.BigEndian.Uint32(b[hdrLen:]) != h.XID):
		return ErrXIDMismatch
	}
	return nil
}

// parsed ends a parse: hdrLen, or on error 0 and no body.
func (h *Header) parsed(hdrLen int, err error) (int, error) {
	if err != nil {
		h.clearBody()
		return 0, err
	}
	return hdrLen, nil
}

// ErrNotReply: an RDMA2_MSG or RDMA2_NOMSG without RPCRDMA2_F_RESPONSE (a
// reverse-direction call) where ParseReply expects a reply; dropped.
var ErrNotReply = &ProtocolError{Outcome: OutcomeDrop, Reason: "a call (no RPCRDMA2_F_RESPONSE) where a reply was expected"}

// ParseReply parses the transport header of a message a requester received
// and checks what a reply must be: an RDMA2_ERROR or an RDMA2_CONNPROP (no
// further check), or an RDMA2_MSG or RDMA2_NOMSG with RPCRDMA2_F_RESPONSE
// whose chunk lists pass version 1's ValidateReply and, for an RDMA2_MSG,
// whose RPC message starts with rdma_xid. b is the whole message. Errors
// are Unmarshal's, ErrNotReply, ErrXIDMismatch and version 1's validation
// errors wrapped; on error the common part is kept (if len(b) >=
// CommonSize): h.XID names the call to fail.
func (h *Header) ParseReply(b []byte, lim *chunks.Limits) (hdrLen int, err error) {
	hdrLen, err = h.Unmarshal(b, lim)
	switch {
	case err != nil:
		return 0, err
	case h.Type == HTypeError, h.Type == HTypeConnProp:
		return hdrLen, nil
	case !h.Response():
		err = ErrNotReply
	default:
		err = h.checkMsg(b, hdrLen, h.Chunks.ValidateReply())
	}
	return h.parsed(hdrLen, err)
}

// ChunkError returns the version 1 validation error err wraps (a
// *chunks.ProtocolError), or nil: what a responder turns into
// RDMA2_ERR_READ_CHUNKS, _WRITE_CHUNKS or _SEGMENTS.
func ChunkError(err error) *chunks.ProtocolError {
	var pe *chunks.ProtocolError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
