package chunks

import "strconv"

// Version1 is the only transport header version this package speaks, the
// value of rdma_vers in every RPC-over-RDMA version 1 header (RFC 8166 §4.2.2).
const Version1 uint32 = 1

// Proc is the rdma_proc field of the transport header (RFC 8166 §4.2.4): it
// selects the arm of the header's body.
type Proc uint32

// Procedures of RPC-over-RDMA version 1 (RFC 8166 §4.2.4, §4.1.2).
const (
	// ProcMsg (RDMA_MSG) carries chunk lists followed by an inline RPC message.
	ProcMsg Proc = 0
	// ProcNoMsg (RDMA_NOMSG) carries chunk lists and no inline RPC message:
	// the message travels in a position-zero Read chunk (a Long Call) or in
	// the Reply chunk (a Long Reply).
	ProcNoMsg Proc = 1
	// ProcMsgp (RDMA_MSGP) was defined by RFC 5666 and is no longer to be
	// used (RFC 8166 §4.6.1). It is recognised and rejected.
	ProcMsgp Proc = 2
	// ProcDone (RDMA_DONE) was defined by RFC 5666 and is no longer to be
	// used (RFC 8166 §4.6.2). It is recognised and dropped.
	ProcDone Proc = 3
	// ProcError (RDMA_ERROR) reports a transport error (RFC 8166 §4.5).
	ProcError Proc = 4
)

// String returns the RFC 8166 name of p, such as "RDMA_MSG", or "Proc(n)"
// for a value the protocol does not define.
func (p Proc) String() string {
	switch p {
	case ProcMsg:
		return "RDMA_MSG"
	case ProcNoMsg:
		return "RDMA_NOMSG"
	case ProcMsgp:
		return "RDMA_MSGP"
	case ProcDone:
		return "RDMA_DONE"
	case ProcError:
		return "RDMA_ERROR"
	}
	return "Proc(" + strconv.FormatUint(uint64(p), 10) + ")"
}

// ErrorCode is the rdma_err field of an RDMA_ERROR header (RFC 8166 §4.1.2,
// §4.5).
type ErrorCode uint32

// Error codes of RPC-over-RDMA version 1 (RFC 8166 §4.5). They are named
// Code… rather than Err… so that they are not mistaken for Go error values.
const (
	// CodeVers (ERR_VERS) reports an unsupported transport header version
	// and carries the lowest and highest versions the sender supports.
	CodeVers ErrorCode = 1
	// CodeChunk (ERR_CHUNK) reports a header that could not be parsed or
	// chunks that could not be used.
	CodeChunk ErrorCode = 2
)

// String returns the RFC 8166 name of c, such as "ERR_VERS", or
// "ErrorCode(n)" for a value the protocol does not define.
func (c ErrorCode) String() string {
	switch c {
	case CodeVers:
		return "ERR_VERS"
	case CodeChunk:
		return "ERR_CHUNK"
	}
	return "ErrorCode(" + strconv.FormatUint(uint64(c), 10) + ")"
}
