package server

import (
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
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

// caller returns the call h (its arguments args) as its caller makes it:
// the export its first handle belongs to (the first export if none), what
// the client's rule there allows, and the caller's identity mapped by
// that rule; or the reply refusing its credential (MSG_DENIED,
// AUTH_ERROR). A client no rule of the export admits gets a call marked
// denied.
func (ss *session) caller(h *xdr.CallHeader, args []byte) (call, []byte) {
	t := ss.s.exports.Load()
	e := t.list[0]
	r := xdr.NewReader(args)
	if fh, err := r.Opaque(nfs3.FHSize); err == nil && len(fh) > 0 {
		if x := t.byHandle(fh); x != nil {
			e = x
		}
	}
	adm := e.admit(ss.addr.Addr())
	policy := adm.policy
	if !adm.ok {
		policy = ss.s.policy
	}
	cred, why, ok := ss.s.callerOf(h, policy)
	if !ok {
		rh := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgDenied, RejectStat: xdr.RejectAuthError, AuthStat: why}
		return call{}, rh.Append(nil)
	}
	return call{xid: h.XID, cred: cred, dh: e.Handler, ro: adm.ro, denied: !adm.ok,
		badPort: adm.ok && !adm.insecure && !ss.privilegedPort()}, nil
}

// execute runs f for the worker's call (its arguments args) as its caller, and
// answers it (recording the reply in entry, if not nil). A caller whose
// credential the server refuses gets MSG_DENIED, AUTH_ERROR.
func (ss *session) execute(w *worker, f procFunc, entry *drcEntry, args []byte) error {
	h := &w.h
	c, refusal := ss.caller(h, args)
	c.out, c.nowait = w.out, w.inline
	if refusal == nil && c.denied {
		refusal = staleReply(h.Proc, h.XID)
	}
	if refusal == nil {
		refusal = ss.refusePort(&c, h)
	}
	if refusal != nil {
		return ss.answer(entry, refusal)
	}
	if executeHook != nil {
		executeHook(h)
	}
	r := xdr.NewReader(args)
	reply, ok := f(ss.s, &c, &r, c.successReply())
	if c.wouldBlock {
		// Begun on the polling goroutine, it needs an identity thread:
		// nothing was done or sent; it is executed again off the loop.
		ss.s.drc.abandon(entry)
		return errWouldBlock
	}
	if !ok {
		reply = acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{})
	}
	return ss.answer(entry, reply)
}
