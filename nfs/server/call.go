package server

import (
	"errors"
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/nfs/internal/creds"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Squash says which callers lose their identity (exports(5)'s
// root_squash, no_root_squash and all_squash; Config.Squash).
type Squash = creds.Squash

// Squash rules.
const (
	// RootSquash, the default, runs root's calls as the anonymous user.
	RootSquash = creds.RootSquash
	// NoRootSquash runs every call as its caller, root's included.
	NoRootSquash = creds.NoRootSquash
	// AllSquash runs every call as the anonymous user.
	AllSquash = creds.AllSquash
)

// ParseSquash parses "root_squash", "no_root_squash" or "all_squash".
func ParseSquash(s string) (Squash, error) { return creds.ParseSquash(s) }

// call is one NFS or MOUNT call being executed: its XID and the identity
// its file system operations run with.
type call struct {
	xid  uint32
	cred creds.Cred
	// dh is the export the call's handles belong to; ro refuses every
	// change (NFS3ERR_ROFS), as the client's rule says.
	dh *DirHandler
	ro bool
	// denied: no rule of the export admits the client; every handle of
	// the export is stale to it.
	denied bool
	// badPort: the client's rule says secure and the call came over TCP
	// from a port not below 1024 (session.privilegedPort); NFS calls
	// other than NULL get NFS3ERR_PERM.
	badPort bool
	// out is the buffer of the worker executing the call (worker.out),
	// which successReply builds the reply in; nil outside a session.
	out []byte
	// nowait: the call runs on the connection's polling goroutine
	// (inlineCalls), which must not wait on the disk or for another
	// thread: a READ whose data is not in memory, a LOOKUP of a name not
	// in the dentry cache, work that needs an identity thread (as) set
	// wouldBlock and answer nothing.
	nowait, wouldBlock bool
}

// successReply returns an MSG_ACCEPTED SUCCESS reply header to the call
// (RFC 5531 §9) for its procedure to append its results to: in the
// worker's reply buffer, which is reused once the reply is sent.
func (c *call) successReply() []byte {
	if c.out == nil {
		return successReply(c.xid, nil)
	}
	return appendSuccessHeader(c.out[:0], c.xid)
}

// readOnly reports whether the call may change nothing: its client's rule
// says ro, or the export's directory is read-only (Dir.SetReadOnly).
func (c *call) readOnly() bool { return c.ro || c.dh.dir.readOnly }

// callerOf returns the identity a call runs with (RFC 1813 §4.4): its
// AUTH_SYS credential mapped by policy (the client's export rule), or the
// anonymous identity for AUTH_NONE. Any other flavor, or an AUTH_SYS
// body that does not decode, is refused with the auth_stat to answer
// (RFC 5531 §9: AUTH_BADCRED, as knfsd answers an unknown flavor).
func (s *Server) callerOf(h *xdr.CallHeader, policy creds.Policy) (creds.Cred, xdr.AuthStat, bool) {
	switch h.Cred.Flavor {
	case xdr.FlavorNone:
		return policy.Anonymous(), 0, true
	case xdr.FlavorSys:
		var gids [xdr.MaxAuthSysGIDs]uint32
		a := xdr.AuthSys{GIDs: gids[:0]}
		if err := a.Unmarshal(h.Cred.Body); err != nil {
			return creds.Cred{}, xdr.AuthBadCred, false
		}
		return policy.Map(creds.NewCred(a.UID, a.GID, a.GIDs)), 0, true
	}
	return creds.Cred{}, xdr.AuthBadCred, false
}

// as runs f with the caller's identity (on a thread of the identity
// switcher's: f makes file system calls only) and returns f's error. If
// the kernel did not apply the identity, f does not run and the error is
// EPERM (NFS3ERR_PERM). A call on the polling goroutine (c.nowait) does
// not wait for an identity thread: f does not run, c.wouldBlock is set
// and the error is errWouldBlock (the call is executed again elsewhere).
func (s *Server) as(c *call, f func() error) error {
	if c.nowait && s.ids.HandsOff(c.cred) {
		c.wouldBlock = true
		return errWouldBlock
	}
	if identityHook != nil {
		identityHook()
	}
	var ferr error
	if err := s.ids.Run(c.cred, func() { ferr = f() }); err != nil {
		s.log.Warn("nfs: the caller's identity was not applied; call refused", "cred", c.cred, "err", err)
		return syscall.EPERM
	}
	return ferr
}

// identityHook, if not nil, is called as a call's file system work is
// given the caller's identity (tests: where that happens).
var identityHook func()

// statusOf maps an error of the server's file system operations to an
// nfsstat3 (RFC 1813 §2.6): a system call's errno as knfsd's nfserrno
// does, a handle the server cannot resolve as NFS3ERR_STALE (a malformed
// one NFS3ERR_BADHANDLE), anything else NFS3ERR_IO.
// It allocates nothing (errors.AsType), on a call's success path or not.
func statusOf(err error) nfs3.Status {
	if err == nil {
		return nfs3.OK
	}
	if st, ok := errors.AsType[nfs3.Status](err); ok {
		return st
	}
	switch {
	case errors.Is(err, ErrBadHandle):
		return nfs3.ErrBadHandle
	case errors.Is(err, ErrStaleHandle), errors.Is(err, ErrForeignHandle):
		return nfs3.ErrStale
	}
	if errno, ok := errors.AsType[syscall.Errno](err); ok {
		return nfs3.StatusFromErrno(errno)
	}
	return nfs3.ErrIO
}
