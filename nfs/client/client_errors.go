package client

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Status is an nfsstat3 (RFC 1813 §2.6), the status of every NFSv3 result;
// MOUNT version 3's mountstat3 (§5.1.5) uses the same numbers.
type Status uint32

// NFSv3 statuses (RFC 1813 §2.6), those of package nfs3.
const (
	StatusOK          = Status(nfs3.OK)
	StatusPerm        = Status(nfs3.ErrPerm)
	StatusNoEnt       = Status(nfs3.ErrNoEnt)
	StatusIO          = Status(nfs3.ErrIO)
	StatusNXIO        = Status(nfs3.ErrNXIO)
	StatusAccess      = Status(nfs3.ErrAcces)
	StatusExist       = Status(nfs3.ErrExist)
	StatusXDev        = Status(nfs3.ErrXDev)
	StatusNoDev       = Status(nfs3.ErrNoDev)
	StatusNotDir      = Status(nfs3.ErrNotDir)
	StatusIsDir       = Status(nfs3.ErrIsDir)
	StatusInval       = Status(nfs3.ErrInval)
	StatusFBig        = Status(nfs3.ErrFBig)
	StatusNoSpc       = Status(nfs3.ErrNoSpc)
	StatusROFS        = Status(nfs3.ErrROFS)
	StatusMLink       = Status(nfs3.ErrMLink)
	StatusNameTooLong = Status(nfs3.ErrNameTooLong)
	StatusNotEmpty    = Status(nfs3.ErrNotEmpty)
	StatusDQuot       = Status(nfs3.ErrDQuot)
	StatusStale       = Status(nfs3.ErrStale)
	StatusRemote      = Status(nfs3.ErrRemote)
	StatusBadHandle   = Status(nfs3.ErrBadHandle)
	StatusNotSync     = Status(nfs3.ErrNotSync)
	StatusBadCookie   = Status(nfs3.ErrBadCookie)
	StatusNotSupp     = Status(nfs3.ErrNotSupp)
	StatusTooSmall    = Status(nfs3.ErrTooSmall)
	StatusServerFault = Status(nfs3.ErrServerFault)
	StatusBadType     = Status(nfs3.ErrBadType)
	StatusJukebox     = Status(nfs3.ErrJukebox)
)

// String returns the RFC 1813 name, as "NFS3ERR_NOENT" (nfs3.Status's), or
// "nfsstat3(N)" for a value RFC 1813 does not define.
func (s Status) String() string { return nfs3.Status(s).String() }

// statusErrno maps the statuses with a POSIX counterpart to the errno a
// local file system returns (Linux numbers differ from RFC 1813's for
// several, so the mapping is explicit).
var statusErrno = map[Status]syscall.Errno{
	StatusPerm: syscall.EPERM, StatusNoEnt: syscall.ENOENT, StatusIO: syscall.EIO, StatusNXIO: syscall.ENXIO,
	StatusAccess: syscall.EACCES, StatusExist: syscall.EEXIST, StatusXDev: syscall.EXDEV,
	StatusNoDev: syscall.ENODEV, StatusNotDir: syscall.ENOTDIR, StatusIsDir: syscall.EISDIR,
	StatusInval: syscall.EINVAL, StatusFBig: syscall.EFBIG, StatusNoSpc: syscall.ENOSPC,
	StatusROFS: syscall.EROFS, StatusMLink: syscall.EMLINK, StatusNameTooLong: syscall.ENAMETOOLONG,
	StatusNotEmpty: syscall.ENOTEMPTY, StatusDQuot: syscall.EDQUOT, StatusStale: syscall.ESTALE,
	StatusRemote: syscall.EREMOTE, StatusNotSupp: syscall.ENOTSUP, StatusJukebox: syscall.EAGAIN,
}

// Error is a procedure's failure status (RFC 1813 §2.6): the server
// executed the call and answered with something other than NFS3_OK.
//
// Error unwraps to the matching syscall.Errno, so errors.Is(err,
// fs.ErrNotExist) holds for NFS3ERR_NOENT, fs.ErrExist for NFS3ERR_EXIST,
// fs.ErrPermission for NFS3ERR_ACCES and NFS3ERR_PERM, and errors.Is(err,
// syscall.ENOTEMPTY) for NFS3ERR_NOTEMPTY.
type Error struct {
	// Proc is the procedure, as nfs.ProcName names it ("NFS3 LOOKUP").
	Proc string
	// Status is the nfsstat3 (or, when Mount is set, the mountstat3).
	Status Status
	// Mount says that Status is a mountstat3 (RFC 1813 §5.1.5), the
	// refusal of a MOUNT procedure (MNT): its names are MNT3ERR_*, its
	// numbers and plain words those of the nfsstat3 of the same number.
	Mount bool
}

// Error reads "nfs: NFS3 LOOKUP: no such file or directory
// (NFS3ERR_NOENT)": the procedure, the status in plain words, then its
// RFC 1813 name (StatusName).
func (e *Error) Error() string {
	return "nfs: " + e.Proc + ": " + e.Status.Text() + " (" + e.StatusName() + ")"
}

// StatusName is the RFC 1813 name of the status: "MNT3ERR_ACCES" for a
// MOUNT refusal (§5.1.5), "NFS3ERR_ACCES" otherwise (§2.6).
func (e *Error) StatusName() string {
	if e.Mount {
		return nfs3.MountStatus(e.Status).String()
	}
	return e.Status.String()
}

// statusText words the statuses with no errno counterpart (RFC 1813 §2.6).
var statusText = map[Status]string{
	StatusBadHandle:   "illegal file handle",
	StatusNotSync:     "update synchronization mismatch",
	StatusBadCookie:   "stale directory cookie",
	StatusTooSmall:    "buffer or request too small",
	StatusServerFault: "server fault",
	StatusBadType:     "type not supported by the server",
}

// Text says what the status means in plain words, as strerror does for
// its errno ("no such file or directory" for NFS3ERR_NOENT); "unknown
// status" for a value RFC 1813 does not define.
func (s Status) Text() string {
	if errno, ok := statusErrno[s]; ok {
		return errno.Error()
	}
	if t, ok := statusText[s]; ok {
		return t
	}
	if s == StatusOK {
		return "success"
	}
	return "unknown status"
}

// Unwrap returns the syscall.Errno of the status, or nil if it has none.
func (e *Error) Unwrap() error {
	if errno, ok := statusErrno[e.Status]; ok {
		return errno
	}
	return nil
}

// RPCError is an RPC reply that carries no results (RFC 5531 §9): the call
// was denied (RPC version or authentication) or accepted with a status
// other than SUCCESS (PROG_UNAVAIL, PROC_UNAVAIL, GARBAGE_ARGS,
// SYSTEM_ERR, ...).
type RPCError struct {
	Proc   string
	Header xdr.ReplyHeader
}

func (e *RPCError) Error() string {
	if e.Header.Stat == xdr.MsgDenied {
		if e.Header.RejectStat == xdr.RejectAuthError {
			return fmt.Sprintf("nfs: %s: call denied: %v", e.Proc, e.Header.AuthStat)
		}
		return fmt.Sprintf("nfs: %s: call denied: %v", e.Proc, e.Header.RejectStat)
	}
	return fmt.Sprintf("nfs: %s: %v", e.Proc, e.Header.AcceptStat)
}

// Unwrap maps an AUTH_ERROR to fs.ErrPermission.
func (e *RPCError) Unwrap() error {
	if e.Header.Stat == xdr.MsgDenied && e.Header.RejectStat == xdr.RejectAuthError {
		return syscall.EACCES
	}
	return nil
}

// ErrCallLost: the connection was lost with the call in flight and the
// call was not answered on a new connection: the server may or may not
// have executed it. Errors of such calls wrap both ErrCallLost and
// transport.ErrCallLost. A client with Retransmit on (the default) resends
// calls in flight on the new connection with their XIDs, so this happens
// only when reconnection fails or retransmission is off.
var ErrCallLost = errors.New("nfs: call lost with its connection: outcome unknown")

// ErrBadReply: a reply could not be decoded (it ends early, or holds a
// value out of range); the connection is kept.
var ErrBadReply = errors.New("nfs: malformed reply")

// ErrVerifierChanged: the server's write verifier changed (it restarted)
// while a File's unstable writes waited for COMMIT, and resending them
// failed or the verifier kept changing.
var ErrVerifierChanged = errors.New("nfs: write verifier changed (server restarted)")

// callErr wraps an error from transport.Conn.Call for procedure proc.
func callErr(proc string, err error) error {
	if errors.Is(err, transport.ErrCallLost) {
		return fmt.Errorf("nfs: %s: %w: %w", proc, ErrCallLost, err)
	}
	return fmt.Errorf("nfs: %s: %w", proc, err)
}

// badReply is ErrBadReply for procedure proc, with the decoding error.
func badReply(proc string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrBadReply, proc, err)
}
