package xdr

import "encoding/hex"

// Byte vectors written out by hand from the XDR definitions of RFC 5531 §9,
// §8.2 and Appendix A (one 32-bit word per group). They are the independent
// reference for the encoders and decoders; the golden files under
// testdata/golden hold the same messages as produced by Append, to catch
// regressions.

type callVector struct {
	name       string
	hex        string // a whole message: header, then arguments
	hdr        CallHeader
	argsOffset int
}

type replyVector struct {
	name          string
	hex           string
	hdr           ReplyHeader
	resultsOffset int
}

// authSysBody is the AUTH_SYS credential of the "nfs3 getattr auth_sys"
// vector: stamp 1, machinename "client", uid 1000, gid 1000, gids 1000, 10.
const authSysBodyHex = `
	00000001
	00000006 636c6965 6e740000
	000003e8
	000003e8
	00000002 000003e8 0000000a`

var callVectors = []callVector{
	{
		name: "nfs3 null auth_none",
		hex: `01020304 00000000 00000002
			000186a3 00000003 00000000
			00000000 00000000
			00000000 00000000`,
		hdr:        CallHeader{XID: 0x01020304, RPCVers: 2, Prog: 100003, Vers: 3, Proc: 0},
		argsOffset: 40,
	},
	{
		name: "nfs3 getattr auth_sys",
		hex: `8a3c0001 00000000 00000002
			000186a3 00000003 00000001
			00000001 00000024` + authSysBodyHex + `
			00000000 00000000
			00000008 01020304 05060708`,
		hdr: CallHeader{XID: 0x8a3c0001, RPCVers: 2, Prog: 100003, Vers: 3, Proc: 1,
			Cred: OpaqueAuth{Flavor: FlavorSys, Body: unhexConst(authSysBodyHex)}},
		argsOffset: 76,
	},
	{
		name: "mount3 mnt rpcsec_gss 5-byte verf",
		hex: `ffffffff 00000000 00000002
			000186a5 00000003 00000001
			00000006 00000003 aabbcc00
			00000006 00000005 0102030405000000`,
		hdr: CallHeader{XID: 0xffffffff, RPCVers: 2, Prog: 100005, Vers: 3, Proc: 1,
			Cred: OpaqueAuth{Flavor: FlavorGSS, Body: []byte{0xaa, 0xbb, 0xcc}},
			Verf: OpaqueAuth{Flavor: FlavorGSS, Body: []byte{1, 2, 3, 4, 5}}},
		argsOffset: 52,
	},
	{
		name: "unknown flavor carried",
		hex: `00000000 00000000 00000002
			00000001 00000002 00000003
			00012345 00000004 deadbeef
			00000000 00000000`,
		hdr: CallHeader{XID: 0, RPCVers: 2, Prog: 1, Vers: 2, Proc: 3,
			Cred: OpaqueAuth{Flavor: 0x12345, Body: []byte{0xde, 0xad, 0xbe, 0xef}}},
		argsOffset: 44,
	},
}

var replyVectors = []replyVector{
	{
		name: "success",
		hex: `8a3c0001 00000001 00000000
			00000000 00000000
			00000000
			00000000 0000abcd`,
		hdr:           ReplyHeader{XID: 0x8a3c0001, Stat: MsgAccepted, AcceptStat: AcceptSuccess},
		resultsOffset: 24,
	},
	{
		name: "success with gss verf",
		hex: `00000007 00000001 00000000
			00000006 00000002 01020000
			00000000`,
		hdr: ReplyHeader{XID: 7, Stat: MsgAccepted, AcceptStat: AcceptSuccess,
			Verf: OpaqueAuth{Flavor: FlavorGSS, Body: []byte{1, 2}}},
		resultsOffset: 28,
	},
	{
		name: "prog_unavail",
		hex:  `00000001 00000001 00000000 00000000 00000000 00000001`,
		hdr:  ReplyHeader{XID: 1, Stat: MsgAccepted, AcceptStat: AcceptProgUnavail}, resultsOffset: 24,
	},
	{
		name: "prog_mismatch",
		hex: `00000002 00000001 00000000 00000000 00000000 00000002
			00000002 00000004`,
		hdr: ReplyHeader{XID: 2, Stat: MsgAccepted, AcceptStat: AcceptProgMismatch,
			Mismatch: Mismatch{Low: 2, High: 4}},
		resultsOffset: 32,
	},
	{
		name: "proc_unavail",
		hex:  `00000003 00000001 00000000 00000000 00000000 00000003`,
		hdr:  ReplyHeader{XID: 3, Stat: MsgAccepted, AcceptStat: AcceptProcUnavail}, resultsOffset: 24,
	},
	{
		name: "garbage_args",
		hex:  `00000004 00000001 00000000 00000000 00000000 00000004`,
		hdr:  ReplyHeader{XID: 4, Stat: MsgAccepted, AcceptStat: AcceptGarbageArgs}, resultsOffset: 24,
	},
	{
		name: "system_err",
		hex:  `00000005 00000001 00000000 00000000 00000000 00000005`,
		hdr:  ReplyHeader{XID: 5, Stat: MsgAccepted, AcceptStat: AcceptSystemErr}, resultsOffset: 24,
	},
	{
		name: "rpc_mismatch",
		hex:  `00000006 00000001 00000001 00000000 00000002 00000002`,
		hdr: ReplyHeader{XID: 6, Stat: MsgDenied, RejectStat: RejectRPCMismatch,
			Mismatch: Mismatch{Low: 2, High: 2}},
		resultsOffset: 24,
	},
	{
		name: "auth_error tooweak",
		hex:  `00000008 00000001 00000001 00000001 00000005`,
		hdr: ReplyHeader{XID: 8, Stat: MsgDenied, RejectStat: RejectAuthError,
			AuthStat: AuthTooWeak},
		resultsOffset: 20,
	},
	{
		name: "auth_error rpcsec_gss_ctxproblem",
		hex:  `00000009 00000001 00000001 00000001 0000000e`,
		hdr: ReplyHeader{XID: 9, Stat: MsgDenied, RejectStat: RejectAuthError,
			AuthStat: RPCSecGSSCtxProblem},
		resultsOffset: 20,
	},
}

// unhexConst decodes a hex constant of this file (a programming error
// panics).
func unhexConst(s string) []byte {
	b, err := hex.DecodeString(stripSpace(s))
	if err != nil {
		panic(err)
	}
	return b
}
