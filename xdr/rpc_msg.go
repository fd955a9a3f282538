package xdr

import (
	"encoding/binary"
	"errors"
)

// Errors reported by the ONC RPC header decoders. Like the Reader errors they
// are sentinel values (or statically allocated wrappers of them), so a failed
// parse never allocates. Test with errors.Is.
var (
	// ErrMsgType means the msg_type of an rpc_msg was not the one expected
	// (a reply given to CallHeader.Unmarshal or the reverse) or was neither
	// CALL nor REPLY (RFC 5531 §9).
	ErrMsgType = errors.New("xdr: rpc: unexpected msg_type")
	// ErrRPCVersion means a call carried an rpcvers other than 2. RFC 5531
	// §9 says rpcvers MUST be 2; a server answers such a call with a
	// MSG_DENIED / RPC_MISMATCH reply giving low = high = 2.
	ErrRPCVersion = errors.New("xdr: rpc: rpcvers is not 2")
	// ErrReplyStat means a reply_stat was neither MSG_ACCEPTED nor
	// MSG_DENIED (RFC 5531 §9: the union has no default arm).
	ErrReplyStat = errors.New("xdr: rpc: unknown reply_stat")
	// ErrRejectStat means a reject_stat was neither RPC_MISMATCH nor
	// AUTH_ERROR (RFC 5531 §9: the union has no default arm).
	ErrRejectStat = errors.New("xdr: rpc: unknown reject_stat")
	// ErrAuthFlavor means an opaque_auth did not have the flavor a parser
	// expected (e.g. OpaqueAuth.AuthSys on an AUTH_NONE credential).
	ErrAuthFlavor = errors.New("xdr: rpc: unexpected auth flavor")
	// ErrTrailingData means bytes were left over after a structure that
	// must fill its container exactly (an AUTH_SYS credential body).
	ErrTrailingData = errors.New("xdr: trailing bytes after structure")
)

// parseError gives a Reader sentinel the context of the structure being
// parsed. Every instance is a package-level variable, so returning one
// costs nothing; errors.Is sees the sentinel through Unwrap.
type parseError struct {
	what string
	err  error
}

func (e *parseError) Error() string { return "xdr: " + e.what + ": " + e.err.Error() }
func (e *parseError) Unwrap() error { return e.err }

// PeekXID returns the xid and msg_type at the start of an rpc_msg
// (RFC 5531 §9) without decoding the rest: a transport matches replies to
// calls by xid before it knows anything else about the message. The xid is
// returned even when err is ErrMsgType (msg_type neither CALL nor REPLY), so
// that the caller can log it.
func PeekXID(msg []byte) (xid uint32, t MsgType, err error) {
	if len(msg) < 8 {
		return 0, 0, errPeekShort
	}
	xid = binary.BigEndian.Uint32(msg)
	t = MsgType(binary.BigEndian.Uint32(msg[4:]))
	if t != MsgCall && t != MsgReply {
		return xid, t, ErrMsgType
	}
	return xid, t, nil
}

var errPeekShort = &parseError{"rpc_msg xid and msg_type", ErrShortBuffer}
