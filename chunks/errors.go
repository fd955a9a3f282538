package chunks

import (
	"errors"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Outcome is what the receiver of a malformed transport header does about it
// (RFC 8166 §4.5). A responder has three choices: answer RDMA_ERROR with
// ERR_VERS, answer RDMA_ERROR with ERR_CHUNK, or drop the message without an
// answer. A requester either drops a reply it cannot attribute to a call or
// fails the call whose XID the reply carries.
type Outcome uint8

// Outcomes, as reported by OutcomeOf (responder) and ReplyOutcomeOf
// (requester).
const (
	// OutcomeOK means the header is acceptable.
	OutcomeOK Outcome = iota
	// OutcomeErrVers means: reply RDMA_ERROR ERR_VERS with low = high = 1
	// (see AppendErrVers).
	OutcomeErrVers
	// OutcomeErrChunk means: reply RDMA_ERROR ERR_CHUNK (see
	// AppendErrChunk).
	OutcomeErrChunk
	// OutcomeDrop means: discard the message silently.
	OutcomeDrop
	// OutcomeFailRPC is a requester's outcome: the reply is unusable, so the
	// RPC whose XID is in the header completes with an error (Linux
	// completes it with EIO and counts a bad reply).
	OutcomeFailRPC
)

// String returns a short name for o.
func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeErrVers:
		return "ERR_VERS"
	case OutcomeErrChunk:
		return "ERR_CHUNK"
	case OutcomeDrop:
		return "drop"
	case OutcomeFailRPC:
		return "fail RPC"
	}
	return "Outcome(?)"
}

// ProtocolError describes a transport header that violates RFC 8166 or this
// package's Limits, together with the responder's Outcome. Every error the
// parsers return is one of the sentinel *ProtocolError values below, so a
// failed parse never allocates; compare with errors.Is.
type ProtocolError struct {
	// Outcome is what a responder does about the error.
	Outcome Outcome
	// Reason says what is wrong, in a few words.
	Reason string
	// Err is the underlying cause, if any (xdr.ErrShortBuffer for a
	// truncated header), so that errors.Is sees through the ProtocolError.
	Err error
}

// Error implements error.
func (e *ProtocolError) Error() string { return "chunks: " + e.Reason }

// Unwrap returns the underlying cause, or nil.
func (e *ProtocolError) Unwrap() error { return e.Err }

// Structural errors, reported by Header.Unmarshal and therefore by every
// parser.
var (
	// ErrShortHeader: fewer than 16 bytes, so not even the XID is known.
	// The issue this package implements mandates a silent drop: an answer
	// would have to invent an XID. (Linux svcrdma answers ERR_CHUNK here,
	// echoing whatever the first word of its receive buffer holds.)
	ErrShortHeader = &ProtocolError{Outcome: OutcomeDrop, Reason: "header shorter than 16 bytes"}
	// ErrVersion: rdma_vers is not 1 (RFC 8166 §4.5.1).
	ErrVersion = &ProtocolError{Outcome: OutcomeErrVers, Reason: "unsupported transport header version"}
	// ErrUnknownProc: rdma_proc names no procedure (RFC 8166 §4.5.2 gives
	// "an invalid value in the rdma_proc field" as its first example).
	ErrUnknownProc = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "unknown rdma_proc"}
	// ErrMsgp: RDMA_MSGP, which RFC 8166 §4.6.1 retires; Linux svcrdma
	// rejects it with ERR_CHUNK like an unknown procedure.
	ErrMsgp = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "RDMA_MSGP is not supported"}
	// ErrDone: RDMA_DONE, which RFC 8166 §4.6.2 retires; Linux svcrdma
	// drops it.
	ErrDone = &ProtocolError{Outcome: OutcomeDrop, Reason: "RDMA_DONE is not supported"}
	// ErrTruncated: the header ends inside a chunk list or error body, or a
	// count claims more segments than the bytes received hold. It wraps
	// xdr.ErrShortBuffer.
	ErrTruncated = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "truncated transport header", Err: xdr.ErrShortBuffer}
	// ErrBadDiscriminator: an optional-data discriminator of a chunk list
	// is neither 0 nor 1 (RFC 4506 §4.19, §4.4).
	ErrBadDiscriminator = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "chunk list discriminator is neither 0 nor 1"}
	// ErrTooManyReadChunks: more Read chunks than Limits.MaxReadChunks.
	ErrTooManyReadChunks = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "too many Read chunks"}
	// ErrTooManyWriteChunks: more Write chunks than Limits.MaxWriteChunks.
	ErrTooManyWriteChunks = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "too many Write chunks"}
	// ErrTooManySegments: a chunk with more segments than
	// Limits.MaxSegments.
	ErrTooManySegments = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "too many segments in a chunk"}
	// ErrChunkTooLong: a chunk whose segment lengths add up to more than
	// Limits.MaxChunkLength.
	ErrChunkTooLong = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "chunk longer than the configured limit"}
	// ErrUnknownErrorCode: an RDMA_ERROR whose rdma_err is neither ERR_VERS
	// nor ERR_CHUNK, so its length is unknown.
	ErrUnknownErrorCode = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "unknown rdma_err"}
	// ErrTrailingData: bytes after the body of an RDMA_ERROR, such as a
	// Write list or Reply chunk, which RDMA_ERROR cannot carry.
	ErrTrailingData = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "data after an RDMA_ERROR body"}
)

// Responder errors, reported by Header.ParseCall and Header.ValidateCall.
var (
	// ErrUnexpectedError: an RDMA_ERROR arrived at a responder. Errors
	// answer calls, so there is nothing to do; Linux svcrdma drops it.
	ErrUnexpectedError = &ProtocolError{Outcome: OutcomeDrop, Reason: "RDMA_ERROR received by a responder"}
	// ErrPositionAlign: a Read segment's Position is not a multiple of 4.
	ErrPositionAlign = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "Read chunk position is not a multiple of 4"}
	// ErrReadListOrder: Read list positions decrease, or the segments of
	// one Read chunk are not contiguous in the list.
	ErrReadListOrder = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "Read list positions are not in increasing order"}
	// ErrReadChunkOverlap: a Read chunk starts inside the previous one.
	ErrReadChunkOverlap = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "Read chunks overlap"}
	// ErrPositionBeyondMessage: a Read chunk's Position lies past the end
	// of the message it is to be inserted into.
	ErrPositionBeyondMessage = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "Read chunk position is beyond the end of the message"}
	// ErrPositionZeroInMsg: an RDMA_MSG carries a position-zero Read chunk,
	// although its RPC message is inline.
	ErrPositionZeroInMsg = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "position-zero Read chunk in RDMA_MSG"}
	// ErrXIDMismatch: the inline RPC message of an RDMA_MSG does not start
	// with rdma_xid, or is too short to hold an XID. ParseReply reports it
	// too.
	ErrXIDMismatch = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "RPC message XID does not match rdma_xid"}
	// ErrNoMsgNoCallChunk: an RDMA_NOMSG call without a position-zero Read
	// chunk, so the call has no RPC message at all.
	ErrNoMsgNoCallChunk = &ProtocolError{Outcome: OutcomeErrChunk, Reason: "RDMA_NOMSG call without a position-zero Read chunk"}
)

// Requester errors, reported by Header.ParseReply and Header.ValidateReply.
// Their Outcome is OutcomeFailRPC.
var (
	// ErrReplyReadList: a reply carries a Read list.
	ErrReplyReadList = &ProtocolError{Outcome: OutcomeFailRPC, Reason: "Read list in a reply"}
	// ErrReplyMsgReplyChunk: an RDMA_MSG reply whose Reply chunk reports
	// written bytes, although the reply is inline.
	ErrReplyMsgReplyChunk = &ProtocolError{Outcome: OutcomeFailRPC, Reason: "RDMA_MSG reply with a non-empty Reply chunk"}
	// ErrReplyNoMsgNoReplyChunk: an RDMA_NOMSG reply whose Reply chunk is
	// absent or empty, so the reply has no RPC message at all.
	ErrReplyNoMsgNoReplyChunk = &ProtocolError{Outcome: OutcomeFailRPC, Reason: "RDMA_NOMSG reply without Reply chunk data"}
)

// OutcomeOf returns what a responder does about err, an error returned by
// Unmarshal, ParseCall or ValidateCall: OutcomeOK for nil, the Outcome of a
// *ProtocolError found in err's chain, and OutcomeDrop for any other error.
// A requester-side error (OutcomeFailRPC) maps to OutcomeDrop, as a responder
// never sends replies to replies.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return OutcomeOK
	}
	pe := asProtocolError(err)
	if pe == nil || pe.Outcome == OutcomeFailRPC {
		return OutcomeDrop
	}
	return pe.Outcome
}

// asProtocolError returns the *ProtocolError in err's chain, or nil. The
// common case, a sentinel returned as is, costs a type assertion and no
// allocation.
func asProtocolError(err error) *ProtocolError {
	if pe, ok := err.(*ProtocolError); ok {
		return pe
	}
	return asProtocolErrorSlow(err)
}

func asProtocolErrorSlow(err error) *ProtocolError {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// ReplyOutcomeOf returns what a requester does about err, an error returned
// by Unmarshal, ParseReply or ValidateReply, following the Linux client
// (rpcrdma_reply_handler): OutcomeOK for nil; OutcomeDrop for a header too
// short to carry an XID or of another version, as its XID cannot be trusted;
// OutcomeFailRPC for every other error, which completes the RPC named by the
// header's XID with an error.
func ReplyOutcomeOf(err error) Outcome {
	if err == nil {
		return OutcomeOK
	}
	switch pe := asProtocolError(err); pe {
	case nil, ErrShortHeader, ErrVersion:
		return OutcomeDrop
	}
	return OutcomeFailRPC
}
