package xdr

import "encoding/binary"

// CallHeader is the header of an ONC RPC call message (RFC 5531 §9): the
// rpc_msg xid and msg_type CALL followed by the call_body up to, not
// including, the procedure arguments:
//
//	struct call_body {
//	    unsigned int rpcvers;       /* must be equal to two (2) */
//	    unsigned int prog;
//	    unsigned int vers;
//	    unsigned int proc;
//	    opaque_auth  cred;
//	    opaque_auth  verf;
//	    /* procedure-specific parameters start here */
//	};
//
// After Unmarshal, Cred.Body and Verf.Body alias the decoded buffer.
type CallHeader struct {
	XID uint32
	// RPCVers is the RPC protocol version; Append writes RPCVersion (2)
	// when it is zero.
	RPCVers uint32
	Prog    uint32
	Vers    uint32
	Proc    uint32
	Cred    OpaqueAuth
	Verf    OpaqueAuth
}

// EncodedLen returns the number of bytes Append adds, which is also the
// offset of the procedure arguments in the encoded call.
func (h *CallHeader) EncodedLen() int {
	return 6*4 + h.Cred.EncodedLen() + h.Verf.EncodedLen()
}

// Append appends the XDR encoding of the call header; the caller appends
// the procedure arguments after it. Append validates nothing (an
// opaque_auth body over 400 bytes is written as given).
func (h *CallHeader) Append(b []byte) []byte {
	vers := h.RPCVers
	if vers == 0 {
		vers = RPCVersion
	}
	b = AppendUint32(b, h.XID)
	b = AppendUint32(b, uint32(MsgCall))
	b = AppendUint32(b, vers)
	b = AppendUint32(b, h.Prog)
	b = AppendUint32(b, h.Vers)
	b = AppendUint32(b, h.Proc)
	b = h.Cred.Append(b)
	return h.Verf.Append(b)
}

// Unmarshal decodes a call header from the start of msg, an entire rpc_msg,
// and returns the offset in msg at which the procedure arguments start. It
// never allocates; Cred.Body and Verf.Body alias msg.
//
// Errors (test with errors.Is):
//   - ErrShortBuffer: msg ends inside the header;
//   - ErrMsgType: msg_type is not CALL (RFC 5531 §9);
//   - ErrRPCVersion: rpcvers is not 2 (RFC 5531 §9 "MUST be equal to 2").
//     XID and RPCVers are set, so that a server can answer with
//     MSG_DENIED / RPC_MISMATCH (low = high = 2), as Linux does;
//   - ErrTooLong: a credential or verifier body exceeds 400 bytes
//     (RFC 5531 §8.2, opaque body<400>). A server answers with
//     MSG_DENIED / AUTH_ERROR / AUTH_BADCRED (or AUTH_BADVERF).
//
// On any error other than ErrRPCVersion the contents of h are unspecified.
func (h *CallHeader) Unmarshal(msg []byte) (argsOffset int, err error) {
	// xid, msg_type and rpcvers first: their failure modes are distinct.
	if len(msg) < 12 {
		if len(msg) >= 8 && MsgType(binary.BigEndian.Uint32(msg[4:])) != MsgCall {
			return 0, ErrMsgType
		}
		return 0, errCallShort
	}
	if MsgType(binary.BigEndian.Uint32(msg[4:])) != MsgCall {
		return 0, ErrMsgType
	}
	*h = CallHeader{
		XID:     binary.BigEndian.Uint32(msg),
		RPCVers: binary.BigEndian.Uint32(msg[8:]),
	}
	// RFC 5531 §9: "rpcvers MUST be equal to 2". The rest of a call of
	// another version need not even have this layout, so stop here.
	if h.RPCVers != RPCVersion {
		return 0, ErrRPCVersion
	}
	if len(msg) < 24 {
		return 0, errCallShort
	}
	h.Prog = binary.BigEndian.Uint32(msg[12:])
	h.Vers = binary.BigEndian.Uint32(msg[16:])
	h.Proc = binary.BigEndian.Uint32(msg[20:])
	r := Reader{buf: msg, off: 24}
	if err := h.Cred.Decode(&r); err != nil {
		return 0, callAuthError(err)
	}
	if err := h.Verf.Decode(&r); err != nil {
		return 0, callAuthError(err)
	}
	return r.off, nil
}

func callAuthError(err error) error {
	if err == ErrTooLong {
		return errCallAuthTooLong
	}
	return errCallShort
}

var (
	errCallShort       = &parseError{"rpc call header", ErrShortBuffer}
	errCallAuthTooLong = &parseError{"rpc call header: opaque_auth body over 400 bytes (RFC 5531 §8.2)", ErrTooLong}
)
