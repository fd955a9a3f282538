package server

import (
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// procFunc executes one NFSv3 procedure for a DirHandler's export as the
// caller c: it decodes its arguments from r and appends its results to
// b, an MSG_ACCEPTED SUCCESS reply header; ok is false when the
// arguments do not decode (the reply is then GARBAGE_ARGS).
type procFunc func(s *Server, c *call, r *xdr.Reader, b []byte) (reply []byte, ok bool)

// nativeProcs are the procedures executed by procFuncs; the others
// still have their own paths in dispatchNFS.
var nativeProcs = [...]procFunc{
	nfs.ProcSetattr:  (*Server).setattr,
	nfs.ProcAccess:   (*Server).access,
	nfs.ProcReadlink: (*Server).readlink,
	nfs.ProcCreate:   (*Server).create,
	nfs.ProcMkdir:    (*Server).mkdir,
	nfs.ProcSymlink:  (*Server).symlink,
	nfs.ProcMknod:    (*Server).mknod,
	nfs.ProcRemove: func(s *Server, c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
		return s.remove(c, r, b, false)
	},
	nfs.ProcRmdir: func(s *Server, c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
		return s.remove(c, r, b, true)
	},
	nfs.ProcRename:   (*Server).rename,
	nfs.ProcLink:     (*Server).link,
	nfs.ProcFsstat:   (*Server).fsstat,
	nfs.ProcFsinfo:   (*Server).fsinfo,
	nfs.ProcPathconf: (*Server).pathconf,
}

// nativeProc returns the procFunc of proc, or nil.
func nativeProc(proc uint32) procFunc {
	if proc < uint32(len(nativeProcs)) {
		return nativeProcs[proc]
	}
	return nil
}

// executeHook, if not nil, is called as a procFunc starts, its
// duplicate request cache entry made (tests: a call that takes long).
var executeHook func(h *xdr.CallHeader)

// caller returns the call h as its caller makes it, or the reply
// refusing its credential (MSG_DENIED, AUTH_ERROR).
func (ss *session) caller(h *xdr.CallHeader) (call, []byte) {
	cred, why, ok := ss.s.callerOf(h)
	if !ok {
		rh := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgDenied, RejectStat: xdr.RejectAuthError, AuthStat: why}
		return call{}, rh.Append(nil)
	}
	return call{xid: h.XID, cred: cred, dh: ss.s.dh}, nil
}

// execute runs f for the call h (its arguments args) as its caller, and
// answers it (recording the reply in entry, if not nil). A caller whose
// credential the server refuses gets MSG_DENIED, AUTH_ERROR.
func (ss *session) execute(f procFunc, entry *drcEntry, h *xdr.CallHeader, args []byte) error {
	c, refusal := ss.caller(h)
	if refusal != nil {
		return ss.answer(entry, refusal)
	}
	if executeHook != nil {
		executeHook(h)
	}
	r := xdr.NewReader(args)
	reply, ok := f(ss.s, &c, &r, successReply(h.XID, nil))
	if !ok {
		reply = acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{})
	}
	return ss.answer(entry, reply)
}
