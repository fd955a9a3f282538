package xdr

import (
	"fmt"
	"testing"
)

// TestEnumValuesAndNames pins every constant of RFC 5531 §8.2 and §9 to its
// wire value and its RFC name.
func TestEnumValuesAndNames(t *testing.T) {
	tests := []struct {
		v    fmt.Stringer
		wire uint32
		name string
	}{
		{MsgCall, 0, "CALL"},
		{MsgReply, 1, "REPLY"},
		{MsgType(2), 2, "msg_type(2)"},

		{MsgAccepted, 0, "MSG_ACCEPTED"},
		{MsgDenied, 1, "MSG_DENIED"},
		{ReplyStat(2), 2, "reply_stat(2)"},

		{AcceptSuccess, 0, "SUCCESS"},
		{AcceptProgUnavail, 1, "PROG_UNAVAIL"},
		{AcceptProgMismatch, 2, "PROG_MISMATCH"},
		{AcceptProcUnavail, 3, "PROC_UNAVAIL"},
		{AcceptGarbageArgs, 4, "GARBAGE_ARGS"},
		{AcceptSystemErr, 5, "SYSTEM_ERR"},
		{AcceptStat(6), 6, "accept_stat(6)"},

		{RejectRPCMismatch, 0, "RPC_MISMATCH"},
		{RejectAuthError, 1, "AUTH_ERROR"},
		{RejectStat(2), 2, "reject_stat(2)"},

		{FlavorNone, 0, "AUTH_NONE"},
		{FlavorSys, 1, "AUTH_SYS"},
		{FlavorShort, 2, "AUTH_SHORT"},
		{FlavorDH, 3, "AUTH_DH"},
		{FlavorKerb4, 4, "AUTH_KERB"},
		{FlavorRSA, 5, "AUTH_RSA"},
		{FlavorGSS, 6, "RPCSEC_GSS"},
		{FlavorTLS, 7, "AUTH_TLS"},
		{AuthFlavor(390003), 390003, "auth_flavor(390003)"},

		{AuthOK, 0, "AUTH_OK"},
		{AuthBadCred, 1, "AUTH_BADCRED"},
		{AuthRejectedCred, 2, "AUTH_REJECTEDCRED"},
		{AuthBadVerf, 3, "AUTH_BADVERF"},
		{AuthRejectedVerf, 4, "AUTH_REJECTEDVERF"},
		{AuthTooWeak, 5, "AUTH_TOOWEAK"},
		{AuthInvalidResp, 6, "AUTH_INVALIDRESP"},
		{AuthFailed, 7, "AUTH_FAILED"},
		{AuthKerbGeneric, 8, "AUTH_KERB_GENERIC"},
		{AuthTimeExpire, 9, "AUTH_TIMEEXPIRE"},
		{AuthTktFile, 10, "AUTH_TKT_FILE"},
		{AuthDecode, 11, "AUTH_DECODE"},
		{AuthNetAddr, 12, "AUTH_NET_ADDR"},
		{RPCSecGSSCredProblem, 13, "RPCSEC_GSS_CREDPROBLEM"},
		{RPCSecGSSCtxProblem, 14, "RPCSEC_GSS_CTXPROBLEM"},
		{AuthStat(15), 15, "auth_stat(15)"},
		{AuthStat(1 << 31), 1 << 31, "auth_stat(2147483648)"},
	}
	for _, tt := range tests {
		var wire uint32
		switch v := tt.v.(type) {
		case MsgType:
			wire = uint32(v)
		case ReplyStat:
			wire = uint32(v)
		case AcceptStat:
			wire = uint32(v)
		case RejectStat:
			wire = uint32(v)
		case AuthFlavor:
			wire = uint32(v)
		case AuthStat:
			wire = uint32(v)
		default:
			t.Fatalf("unexpected type %T", v)
		}
		if wire != tt.wire {
			t.Errorf("%s = %d, want %d", tt.name, wire, tt.wire)
		}
		if got := tt.v.String(); got != tt.name {
			t.Errorf("%T(%d).String() = %q, want %q", tt.v, wire, got, tt.name)
		}
	}
	if RPCVersion != 2 || MaxAuthBytes != 400 || MaxMachineNameLen != 255 || MaxAuthSysGIDs != 16 {
		t.Errorf("RFC 5531 limits changed")
	}
}
