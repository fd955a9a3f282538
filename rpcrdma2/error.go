package rpcrdma2

import "github.com/go-rpcrdma/rpcrdma/xdr"

// ErrorCode is rdma_err, the discriminant of rpcrdma2_error (draft §5.3.3,
// rpcrdma2_errcode).
type ErrorCode uint32

// The error codes of the draft (§6.4).
const (
	// ErrVers is RDMA2_ERR_VERS: the responder does not speak the
	// call's rdma_vers; the body is the range it does speak.
	ErrVers ErrorCode = 1
	// ErrBadXDR is RDMA2_ERR_BAD_XDR: the header could not be parsed
	// (the value of version 1's ERR_CHUNK).
	ErrBadXDR ErrorCode = 2
	// ErrInvalHType is RDMA2_ERR_INVAL_HTYPE: an unknown header type.
	ErrInvalHType ErrorCode = 3
	// ErrReadChunks is RDMA2_ERR_READ_CHUNKS: more Read chunks than the
	// responder takes; the body is how many it takes.
	ErrReadChunks ErrorCode = 4
	// ErrWriteChunks is RDMA2_ERR_WRITE_CHUNKS: more Write chunks than
	// the responder fills; the body is how many it fills.
	ErrWriteChunks ErrorCode = 5
	// ErrSegments is RDMA2_ERR_SEGMENTS: a chunk with more segments than
	// the responder takes; the body is how many it takes.
	ErrSegments ErrorCode = 6
	// ErrWriteResource is RDMA2_ERR_WRITE_RESOURCE: a Write chunk too
	// short for its result; the body names it (from 1; 0: unknown) and
	// the bytes it needs.
	ErrWriteResource ErrorCode = 7
	// ErrReplyResource is RDMA2_ERR_REPLY_RESOURCE: no Reply chunk, or
	// one too short, for a reply that does not fit inline; the body is
	// the bytes needed.
	ErrReplyResource ErrorCode = 8
	// ErrSystem is RDMA2_ERR_SYSTEM: any other failure, permanent.
	ErrSystem ErrorCode = 9
)

// String returns the draft's name of c.
func (c ErrorCode) String() string {
	switch c {
	case ErrVers:
		return "RDMA2_ERR_VERS"
	case ErrBadXDR:
		return "RDMA2_ERR_BAD_XDR"
	case ErrInvalHType:
		return "RDMA2_ERR_INVAL_HTYPE"
	case ErrReadChunks:
		return "RDMA2_ERR_READ_CHUNKS"
	case ErrWriteChunks:
		return "RDMA2_ERR_WRITE_CHUNKS"
	case ErrSegments:
		return "RDMA2_ERR_SEGMENTS"
	case ErrWriteResource:
		return "RDMA2_ERR_WRITE_RESOURCE"
	case ErrReplyResource:
		return "RDMA2_ERR_REPLY_RESOURCE"
	case ErrSystem:
		return "RDMA2_ERR_SYSTEM"
	}
	return "RDMA2_ERR(" + uitoa(uint32(c)) + ")"
}

// VersRange is rpcrdma2_err_vers: the inclusive range of versions a
// responder speaks.
type VersRange struct {
	Low  uint32 `xdr:"rdma_vers_low"`
	High uint32 `xdr:"rdma_vers_high"`
}

// WriteNeed is rpcrdma2_err_write: the Write chunk too short (numbered
// from 1; 0 when the responder cannot tell which) and the bytes it needs.
type WriteNeed struct {
	ChunkIndex   uint32 `xdr:"rdma_chunk_index"`
	LengthNeeded uint32 `xdr:"rdma_length_needed"`
}

// Error is rpcrdma2_error, the body of an RDMA2_ERROR: Code and the field
// of its arm. A code without an arm (RDMA2_ERR_BAD_XDR, _INVAL_HTYPE,
// _SYSTEM, and codes added by extensions: the union's default) has an
// empty body.
type Error struct {
	Code ErrorCode `xdr:"rdma_err"`
	// Vers is the arm of ErrVers.
	Vers VersRange `xdr:"rdma_vrange"`
	// MaxChunks is the arm of ErrReadChunks and ErrWriteChunks.
	MaxChunks uint32 `xdr:"rdma_max_chunks"`
	// MaxSegments is the arm of ErrSegments.
	MaxSegments uint32 `xdr:"rdma_max_segments"`
	// Write is the arm of ErrWriteResource.
	Write WriteNeed `xdr:"rdma_writeres"`
	// LengthNeeded is the arm of ErrReplyResource.
	LengthNeeded uint32 `xdr:"rdma_length_needed"`
}

// armWords returns how many words the arm of code holds.
func armWords(code ErrorCode) int {
	switch code {
	case ErrVers, ErrWriteResource:
		return 2
	case ErrReadChunks, ErrWriteChunks, ErrSegments, ErrReplyResource:
		return 1
	}
	return 0
}

// len returns the encoded size of e.
func (e *Error) len() int { return 4 + 4*armWords(e.Code) }

// append appends rdma_err and its arm.
func (e *Error) append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(e.Code))
	switch e.Code {
	case ErrVers:
		b = xdr.AppendUint32(b, e.Vers.Low)
		b = xdr.AppendUint32(b, e.Vers.High)
	case ErrReadChunks, ErrWriteChunks:
		b = xdr.AppendUint32(b, e.MaxChunks)
	case ErrSegments:
		b = xdr.AppendUint32(b, e.MaxSegments)
	case ErrWriteResource:
		b = xdr.AppendUint32(b, e.Write.ChunkIndex)
		b = xdr.AppendUint32(b, e.Write.LengthNeeded)
	case ErrReplyResource:
		b = xdr.AppendUint32(b, e.LengthNeeded)
	}
	return b
}

// unmarshal decodes rdma_err and its arm from r; nothing may follow.
func (e *Error) unmarshal(r *xdr.Reader) error {
	*e = Error{}
	code, err := r.Uint32()
	if err != nil {
		return ErrTruncated
	}
	e.Code = ErrorCode(code)
	if r.Len() < 4*armWords(e.Code) {
		return ErrTruncated
	}
	// The length was checked: these reads cannot fail.
	switch e.Code {
	case ErrVers:
		e.Vers.Low, _ = r.Uint32()
		e.Vers.High, _ = r.Uint32()
	case ErrReadChunks, ErrWriteChunks:
		e.MaxChunks, _ = r.Uint32()
	case ErrSegments:
		e.MaxSegments, _ = r.Uint32()
	case ErrWriteResource:
		e.Write.ChunkIndex, _ = r.Uint32()
		e.Write.LengthNeeded, _ = r.Uint32()
	case ErrReplyResource:
		e.LengthNeeded, _ = r.Uint32()
	}
	if r.Len() != 0 {
		return ErrTrailingData
	}
	return nil
}
