package rpcrdma2

import "github.com/go-rpcrdma/rpcrdma/chunks"

// Outcome is what a responder does about a header it cannot use (draft
// §5.3.3).
type Outcome uint8

// Outcomes of a failed parse.
const (
	// OutcomeOK: the header is usable.
	OutcomeOK Outcome = iota
	// OutcomeErrVers: rdma_vers is not 2; answer RDMA2_ERR_VERS (or, on
	// a connection that speaks version 1, v1's ERR_VERS).
	OutcomeErrVers
	// OutcomeErrInvalHType: the header type is unknown; answer
	// RDMA2_ERR_INVAL_HTYPE.
	OutcomeErrInvalHType
	// OutcomeErrBadXDR: the header cannot be parsed (truncated, a bad
	// discriminator, a count beyond the limits, a property whose data
	// does not fit its type); answer RDMA2_ERR_BAD_XDR and do nothing
	// else with the message (§5.3.3).
	OutcomeErrBadXDR
	// OutcomeDrop: the message is too short to hold an XID to answer;
	// discard it.
	OutcomeDrop
)

// String returns a short name for o.
func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeErrVers:
		return "RDMA2_ERR_VERS"
	case OutcomeErrInvalHType:
		return "RDMA2_ERR_INVAL_HTYPE"
	case OutcomeErrBadXDR:
		return "RDMA2_ERR_BAD_XDR"
	case OutcomeDrop:
		return "drop"
	}
	return "Outcome(?)"
}

// ProtocolError describes a version 2 header this package refuses, with the
// Outcome for a responder. Every error of Unmarshal is one of the sentinel
// values below, or wraps a *chunks.ProtocolError of the chunk lists (its
// Outcome is then OutcomeErrBadXDR); a failed parse allocates nothing.
type ProtocolError struct {
	Outcome Outcome
	Reason  string
	// Err is the underlying cause, if any (a chunk list's
	// *chunks.ProtocolError).
	Err error
}

// Error implements error.
func (e *ProtocolError) Error() string {
	if e.Err != nil {
		return "rpcrdma2: " + e.Reason + ": " + e.Err.Error()
	}
	return "rpcrdma2: " + e.Reason
}

// Unwrap returns the underlying cause, or nil.
func (e *ProtocolError) Unwrap() error { return e.Err }

// The errors of Unmarshal.
var (
	// ErrShortHeader: fewer than CommonSize bytes, no XID to answer.
	ErrShortHeader = &ProtocolError{Outcome: OutcomeDrop, Reason: "header shorter than 16 bytes"}
	// ErrVersion: rdma_vers is not 2.
	ErrVersion = &ProtocolError{Outcome: OutcomeErrVers, Reason: "rdma_vers is not 2"}
	// ErrShortPrefix: rdma_vers is 2 but rdma_flags is missing.
	ErrShortPrefix = &ProtocolError{Outcome: OutcomeErrBadXDR, Reason: "header prefix shorter than 20 bytes"}
	// ErrHType: an rdma_htype this package does not know (§5.2).
	ErrHType = &ProtocolError{Outcome: OutcomeErrInvalHType, Reason: "unknown rdma_htype"}
	// ErrTruncated: the body ends early.
	ErrTruncated = &ProtocolError{Outcome: OutcomeErrBadXDR, Reason: "header body truncated"}
	// ErrTrailingData: bytes after the body of an RDMA2_ERROR or an
	// RDMA2_CONNPROP, which carry no RPC message.
	ErrTrailingData = &ProtocolError{Outcome: OutcomeErrBadXDR, Reason: "bytes after the header body"}
	// ErrErrorNotResponse: an RDMA2_ERROR without RPCRDMA2_F_RESPONSE,
	// which §3.2 requires of every one.
	ErrErrorNotResponse = &ProtocolError{Outcome: OutcomeErrBadXDR, Reason: "RDMA2_ERROR without RPCRDMA2_F_RESPONSE"}
	// ErrTooManyProperties: a property set longer than MaxProperties.
	ErrTooManyProperties = &ProtocolError{Outcome: OutcomeErrBadXDR, Reason: "more properties than MaxProperties"}
	// ErrPropertyData: a known property whose rdma_data is not its type's
	// XDR (§4.1): not four bytes, or an rpcrdma2_rvreqsup out of range.
	ErrPropertyData = &ProtocolError{Outcome: OutcomeErrBadXDR, Reason: "property data does not fit its type"}
)

// chunkErrors wrap the errors of the chunk lists' parse and validation,
// one per sentinel of package chunks, made once so that a failed parse
// allocates nothing.
var chunkErrors = func() map[error]*ProtocolError {
	m := map[error]*ProtocolError{}
	for _, e := range []*chunks.ProtocolError{chunks.ErrTruncated, chunks.ErrBadDiscriminator,
		chunks.ErrTooManyReadChunks, chunks.ErrTooManyWriteChunks, chunks.ErrTooManySegments,
		chunks.ErrChunkTooLong, chunks.ErrPositionAlign, chunks.ErrReadListOrder,
		chunks.ErrReadChunkOverlap, chunks.ErrPositionBeyondMessage, chunks.ErrPositionZeroInMsg,
		chunks.ErrNoMsgNoCallChunk, chunks.ErrReplyReadList, chunks.ErrReplyMsgReplyChunk,
		chunks.ErrReplyNoMsgNoReplyChunk} {
		m[e] = &ProtocolError{Outcome: OutcomeErrBadXDR, Reason: "chunk lists", Err: e}
	}
	return m
}()

// listError returns the error of Unmarshal for err, an error of
// chunks.Header.UnmarshalChunkLists.
func listError(err error) error {
	if e, ok := chunkErrors[err]; ok {
		return e
	}
	return &ProtocolError{Outcome: OutcomeErrBadXDR, Reason: "chunk lists", Err: err}
}

// OutcomeOf returns the responder's Outcome for err, an error of
// Unmarshal: OutcomeOK for nil, OutcomeErrBadXDR for an error of another
// kind.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return OutcomeOK
	}
	if e, ok := err.(*ProtocolError); ok {
		return e.Outcome
	}
	return OutcomeErrBadXDR
}
