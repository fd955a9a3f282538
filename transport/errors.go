package transport

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
)

// Errors of the transport. At the API edge they are wrapped in *net.OpError,
// as the net package does.
var (
	// ErrProtocol: the peer violated RPC-over-RDMA version 1; the
	// connection is closed.
	ErrProtocol = errors.New("rpcrdma: protocol violation")
	// ErrMessageTooLarge: an RPC message exceeds Config.MaxRPCSize.
	ErrMessageTooLarge = errors.New("rpcrdma: RPC message too large")
	// ErrNotCall, ErrNotReply: a requester was given something other than
	// an RPC call to send, or a responder something other than a reply.
	ErrNotCall  = errors.New("rpcrdma: not an RPC call")
	ErrNotReply = errors.New("rpcrdma: not an RPC reply")
	// ErrUnknownXID: a responder was given a reply to no outstanding call.
	ErrUnknownXID = errors.New("rpcrdma: reply to no outstanding call")
	// ErrDuplicateXID: a requester was given a call whose XID is in flight.
	ErrDuplicateXID = errors.New("rpcrdma: XID already in flight")
	// ErrBadReply: a responder's reply to a call failed validation (a
	// header that does not parse, a chunk the call did not offer or that
	// overruns it, data that does not match the reply, RFC 8166 §3.5);
	// the call fails and its synthesized reply is SYSTEM_ERR.
	ErrBadReply = errors.New("rpcrdma: malformed reply")
)

// RemoteError is an RDMA_ERROR a responder sent for one call (RFC 8166
// §4.5), or on a version 2 connection an RDMA2_ERROR (docs/v2.md). On the
// byte stream the call fails with a synthesized RPC reply (MSG_ACCEPTED,
// SYSTEM_ERR); ReadMsg reports this error as well.
type RemoteError struct {
	XID uint32
	// Code is rdma_err: ERR_VERS (1) or ERR_CHUNK (2); on a version 2
	// connection an rpcrdma2.ErrorCode (RDMA2_ERR_VERS 1, _BAD_XDR 2,
	// the value of ERR_CHUNK, up to _SYSTEM 9, or an extension's).
	Code uint32
	// Low and High are the versions an ERR_VERS reports.
	Low, High uint32
}

func (e *RemoteError) Error() string {
	switch e.Code {
	case 1:
		return fmt.Sprintf("rpcrdma: responder sent ERR_VERS (versions %d..%d) for xid %#x", e.Low, e.High, e.XID)
	case 2:
		return fmt.Sprintf("rpcrdma: responder sent ERR_CHUNK for xid %#x", e.XID)
	}
	return fmt.Sprintf("rpcrdma: responder sent %v for xid %#x", rpcrdma2.ErrorCode(e.Code), e.XID)
}

// opError wraps err the way net.Conn methods report errors.
func (c *Conn) opError(op string, err error) error {
	if err == nil {
		return nil
	}
	return &net.OpError{Op: op, Net: "rdma", Source: c.laddr, Addr: c.raddr, Err: err}
}

// errDeadline is returned when a deadline passes; it is
// os.ErrDeadlineExceeded as the net package returns it.
var errDeadline error = os.ErrDeadlineExceeded
