package xdr

import "strconv"

// RPCVersion is the only ONC RPC protocol version: "rpcvers MUST be equal
// to 2" (RFC 5531 §9).
const RPCVersion = 2

// MaxAuthBytes is the largest opaque_auth body, opaque body<400>
// (RFC 5531 §8.2, MAX_AUTH_BYTES).
const MaxAuthBytes = 400

// MsgType is the msg_type discriminant of an rpc_msg (RFC 5531 §9).
type MsgType uint32

// msg_type values (RFC 5531 §9).
const (
	MsgCall  MsgType = 0 // CALL
	MsgReply MsgType = 1 // REPLY
)

// String returns the RFC 5531 name, or msg_type(N) for an unknown value.
func (t MsgType) String() string {
	switch t {
	case MsgCall:
		return "CALL"
	case MsgReply:
		return "REPLY"
	}
	return unknownEnum("msg_type", uint32(t))
}

// ReplyStat is the reply_stat discriminant of a reply_body (RFC 5531 §9).
type ReplyStat uint32

// reply_stat values (RFC 5531 §9).
const (
	MsgAccepted ReplyStat = 0 // MSG_ACCEPTED
	MsgDenied   ReplyStat = 1 // MSG_DENIED
)

// String returns the RFC 5531 name, or reply_stat(N) for an unknown value.
func (s ReplyStat) String() string {
	switch s {
	case MsgAccepted:
		return "MSG_ACCEPTED"
	case MsgDenied:
		return "MSG_DENIED"
	}
	return unknownEnum("reply_stat", uint32(s))
}

// AcceptStat is the status of an accepted reply (RFC 5531 §9, accept_stat).
type AcceptStat uint32

// accept_stat values (RFC 5531 §9).
const (
	AcceptSuccess      AcceptStat = 0 // SUCCESS: RPC executed successfully
	AcceptProgUnavail  AcceptStat = 1 // PROG_UNAVAIL: remote hasn't exported program
	AcceptProgMismatch AcceptStat = 2 // PROG_MISMATCH: remote can't support version #
	AcceptProcUnavail  AcceptStat = 3 // PROC_UNAVAIL: program can't support procedure
	AcceptGarbageArgs  AcceptStat = 4 // GARBAGE_ARGS: procedure can't decode params
	AcceptSystemErr    AcceptStat = 5 // SYSTEM_ERR: e.g. memory allocation failure
)

// String returns the RFC 5531 name, or accept_stat(N) for an unknown value.
func (s AcceptStat) String() string {
	switch s {
	case AcceptSuccess:
		return "SUCCESS"
	case AcceptProgUnavail:
		return "PROG_UNAVAIL"
	case AcceptProgMismatch:
		return "PROG_MISMATCH"
	case AcceptProcUnavail:
		return "PROC_UNAVAIL"
	case AcceptGarbageArgs:
		return "GARBAGE_ARGS"
	case AcceptSystemErr:
		return "SYSTEM_ERR"
	}
	return unknownEnum("accept_stat", uint32(s))
}

// RejectStat is the reason a call was rejected (RFC 5531 §9, reject_stat).
type RejectStat uint32

// reject_stat values (RFC 5531 §9).
const (
	RejectRPCMismatch RejectStat = 0 // RPC_MISMATCH: RPC version number != 2
	RejectAuthError   RejectStat = 1 // AUTH_ERROR: remote can't authenticate caller
)

// String returns the RFC 5531 name, or reject_stat(N) for an unknown value.
func (s RejectStat) String() string {
	switch s {
	case RejectRPCMismatch:
		return "RPC_MISMATCH"
	case RejectAuthError:
		return "AUTH_ERROR"
	}
	return unknownEnum("reject_stat", uint32(s))
}

// AuthFlavor identifies an authentication flavor (RFC 5531 §8.2,
// auth_flavor). Flavor numbers are assigned by IANA (RFC 5531 §13); any
// value is carried, only AUTH_NONE and AUTH_SYS are interpreted here.
type AuthFlavor uint32

// auth_flavor values (RFC 5531 §8.2 and the IANA registry it creates;
// AUTH_TLS is defined by RFC 9289).
const (
	FlavorNone  AuthFlavor = 0 // AUTH_NONE (also known as AUTH_NULL)
	FlavorSys   AuthFlavor = 1 // AUTH_SYS (also known as AUTH_UNIX)
	FlavorShort AuthFlavor = 2 // AUTH_SHORT
	FlavorDH    AuthFlavor = 3 // AUTH_DH
	FlavorKerb4 AuthFlavor = 4 // AUTH_KERB (Kerberos 4)
	FlavorRSA   AuthFlavor = 5 // AUTH_RSA
	FlavorGSS   AuthFlavor = 6 // RPCSEC_GSS (RFC 2203)
	FlavorTLS   AuthFlavor = 7 // AUTH_TLS (RFC 9289)
)

// String returns the RFC name, or auth_flavor(N) for an unknown value.
func (f AuthFlavor) String() string {
	switch f {
	case FlavorNone:
		return "AUTH_NONE"
	case FlavorSys:
		return "AUTH_SYS"
	case FlavorShort:
		return "AUTH_SHORT"
	case FlavorDH:
		return "AUTH_DH"
	case FlavorKerb4:
		return "AUTH_KERB"
	case FlavorRSA:
		return "AUTH_RSA"
	case FlavorGSS:
		return "RPCSEC_GSS"
	case FlavorTLS:
		return "AUTH_TLS"
	}
	return unknownEnum("auth_flavor", uint32(f))
}

// AuthStat is why authentication failed in an AUTH_ERROR rejection
// (RFC 5531 §9, auth_stat).
type AuthStat uint32

// auth_stat values (RFC 5531 §9).
const (
	AuthOK               AuthStat = 0  // AUTH_OK: success
	AuthBadCred          AuthStat = 1  // AUTH_BADCRED: bad credential (seal broken)
	AuthRejectedCred     AuthStat = 2  // AUTH_REJECTEDCRED: client must begin new session
	AuthBadVerf          AuthStat = 3  // AUTH_BADVERF: bad verifier (seal broken)
	AuthRejectedVerf     AuthStat = 4  // AUTH_REJECTEDVERF: verifier expired or replayed
	AuthTooWeak          AuthStat = 5  // AUTH_TOOWEAK: rejected for security reasons
	AuthInvalidResp      AuthStat = 6  // AUTH_INVALIDRESP: bogus response verifier
	AuthFailed           AuthStat = 7  // AUTH_FAILED: reason unknown
	AuthKerbGeneric      AuthStat = 8  // AUTH_KERB_GENERIC: kerberos generic error
	AuthTimeExpire       AuthStat = 9  // AUTH_TIMEEXPIRE: time of credential expired
	AuthTktFile          AuthStat = 10 // AUTH_TKT_FILE: problem with ticket file
	AuthDecode           AuthStat = 11 // AUTH_DECODE: can't decode authenticator
	AuthNetAddr          AuthStat = 12 // AUTH_NET_ADDR: wrong net address in ticket
	RPCSecGSSCredProblem AuthStat = 13 // RPCSEC_GSS_CREDPROBLEM: no credentials for user
	RPCSecGSSCtxProblem  AuthStat = 14 // RPCSEC_GSS_CTXPROBLEM: problem with context
)

var authStatNames = [...]string{
	AuthOK:               "AUTH_OK",
	AuthBadCred:          "AUTH_BADCRED",
	AuthRejectedCred:     "AUTH_REJECTEDCRED",
	AuthBadVerf:          "AUTH_BADVERF",
	AuthRejectedVerf:     "AUTH_REJECTEDVERF",
	AuthTooWeak:          "AUTH_TOOWEAK",
	AuthInvalidResp:      "AUTH_INVALIDRESP",
	AuthFailed:           "AUTH_FAILED",
	AuthKerbGeneric:      "AUTH_KERB_GENERIC",
	AuthTimeExpire:       "AUTH_TIMEEXPIRE",
	AuthTktFile:          "AUTH_TKT_FILE",
	AuthDecode:           "AUTH_DECODE",
	AuthNetAddr:          "AUTH_NET_ADDR",
	RPCSecGSSCredProblem: "RPCSEC_GSS_CREDPROBLEM",
	RPCSecGSSCtxProblem:  "RPCSEC_GSS_CTXPROBLEM",
}

// String returns the RFC 5531 name, or auth_stat(N) for an unknown value.
func (s AuthStat) String() string {
	if uint64(s) < uint64(len(authStatNames)) {
		return authStatNames[s]
	}
	return unknownEnum("auth_stat", uint32(s))
}

func unknownEnum(typ string, v uint32) string {
	return typ + "(" + strconv.FormatUint(uint64(v), 10) + ")"
}
