package nfs3

import (
	"strconv"
	"syscall"
)

// Status is an nfsstat3 (RFC 1813 §2.5, §2.6), the status of every NFS version 3
// result. A Status is an error so that it can be returned as one; OK is not
// an error and must not be returned as one.
type Status uint32

// Status values (RFC 1813 §2.6, nfsstat3).
const (
	OK             Status = 0
	ErrPerm        Status = 1
	ErrNoEnt       Status = 2
	ErrIO          Status = 5
	ErrNXIO        Status = 6
	ErrAcces       Status = 13
	ErrExist       Status = 17
	ErrXDev        Status = 18
	ErrNoDev       Status = 19
	ErrNotDir      Status = 20
	ErrIsDir       Status = 21
	ErrInval       Status = 22
	ErrFBig        Status = 27
	ErrNoSpc       Status = 28
	ErrROFS        Status = 30
	ErrMLink       Status = 31
	ErrNameTooLong Status = 63
	ErrNotEmpty    Status = 66
	ErrDQuot       Status = 69
	ErrStale       Status = 70
	ErrRemote      Status = 71
	ErrBadHandle   Status = 10001
	ErrNotSync     Status = 10002
	ErrBadCookie   Status = 10003
	ErrNotSupp     Status = 10004
	ErrTooSmall    Status = 10005
	ErrServerFault Status = 10006
	ErrBadType     Status = 10007
	ErrJukebox     Status = 10008
)

// String returns the status's name in RFC 1813 (as "NFS3_OK",
// "NFS3ERR_NOENT"), or "nfsstat3(N)" for a value RFC 1813 does not define.
func (s Status) String() string {
	switch s {
	case OK:
		return "NFS3_OK"
	case ErrPerm:
		return "NFS3ERR_PERM"
	case ErrNoEnt:
		return "NFS3ERR_NOENT"
	case ErrIO:
		return "NFS3ERR_IO"
	case ErrNXIO:
		return "NFS3ERR_NXIO"
	case ErrAcces:
		return "NFS3ERR_ACCES"
	case ErrExist:
		return "NFS3ERR_EXIST"
	case ErrXDev:
		return "NFS3ERR_XDEV"
	case ErrNoDev:
		return "NFS3ERR_NODEV"
	case ErrNotDir:
		return "NFS3ERR_NOTDIR"
	case ErrIsDir:
		return "NFS3ERR_ISDIR"
	case ErrInval:
		return "NFS3ERR_INVAL"
	case ErrFBig:
		return "NFS3ERR_FBIG"
	case ErrNoSpc:
		return "NFS3ERR_NOSPC"
	case ErrROFS:
		return "NFS3ERR_ROFS"
	case ErrMLink:
		return "NFS3ERR_MLINK"
	case ErrNameTooLong:
		return "NFS3ERR_NAMETOOLONG"
	case ErrNotEmpty:
		return "NFS3ERR_NOTEMPTY"
	case ErrDQuot:
		return "NFS3ERR_DQUOT"
	case ErrStale:
		return "NFS3ERR_STALE"
	case ErrRemote:
		return "NFS3ERR_REMOTE"
	case ErrBadHandle:
		return "NFS3ERR_BADHANDLE"
	case ErrNotSync:
		return "NFS3ERR_NOT_SYNC"
	case ErrBadCookie:
		return "NFS3ERR_BAD_COOKIE"
	case ErrNotSupp:
		return "NFS3ERR_NOTSUPP"
	case ErrTooSmall:
		return "NFS3ERR_TOOSMALL"
	case ErrServerFault:
		return "NFS3ERR_SERVERFAULT"
	case ErrBadType:
		return "NFS3ERR_BADTYPE"
	case ErrJukebox:
		return "NFS3ERR_JUKEBOX"
	}
	return "nfsstat3(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// Error returns s.String(). It allocates nothing for the statuses RFC 1813
// defines.
func (s Status) Error() string { return s.String() }

// Linux errno values that package syscall does not name portably, or
// at all (those above 511 are the kernel's own and never reach user space;
// they are mapped for a server that receives them from a kernel interface).
const (
	errnoENOKEY       = syscall.Errno(126)
	errnoERESTARTSYS  = syscall.Errno(512)
	errnoEOPENSTALE   = syscall.Errno(518)
	errnoENOTSUPP     = syscall.Errno(524)
	errnoETOOSMALL    = syscall.Errno(525)
	errnoESERVERFAULT = syscall.Errno(526)
)

// StatusFromErrno returns the nfsstat3 for a Linux errno as knfsd's
// nfserrno does (fs/nfsd/vfs.c): the errno of the same name where there is
// one, EBADF and ESTALE as NFS3ERR_STALE, E2BIG as NFS3ERR_FBIG, ETIMEDOUT,
// EAGAIN (EWOULDBLOCK) and ENOMEM as NFS3ERR_JUKEBOX, ENFILE as
// NFS3ERR_SERVERFAULT, ENOKEY as NFS3ERR_PERM, EOPNOTSUPP (ENOTSUP) as
// NFS3ERR_NOTSUPP, and any errno not listed (ETXTBSY, EREMOTEIO, EUCLEAN,
// ELOOP among them) as NFS3ERR_IO. It also maps the kernel-internal
// ENOTSUPP (524) to NFS3ERR_NOTSUPP, which knfsd leaves to NFS3ERR_IO.
// Errno 0 is OK.
func StatusFromErrno(errno syscall.Errno) Status {
	switch errno {
	case 0:
		return OK
	case syscall.EPERM, errnoENOKEY:
		return ErrPerm
	case syscall.ENOENT:
		return ErrNoEnt
	case syscall.ENXIO:
		return ErrNXIO
	case syscall.EACCES:
		return ErrAcces
	case syscall.EEXIST:
		return ErrExist
	case syscall.EXDEV:
		return ErrXDev
	case syscall.ENODEV:
		return ErrNoDev
	case syscall.ENOTDIR:
		return ErrNotDir
	case syscall.EISDIR:
		return ErrIsDir
	case syscall.EINVAL:
		return ErrInval
	case syscall.EFBIG, syscall.E2BIG:
		return ErrFBig
	case syscall.ENOSPC:
		return ErrNoSpc
	case syscall.EROFS:
		return ErrROFS
	case syscall.EMLINK:
		return ErrMLink
	case syscall.ENAMETOOLONG:
		return ErrNameTooLong
	case syscall.ENOTEMPTY:
		return ErrNotEmpty
	case syscall.EDQUOT:
		return ErrDQuot
	case syscall.ESTALE, syscall.EBADF, errnoEOPENSTALE:
		return ErrStale
	case syscall.ETIMEDOUT, syscall.EAGAIN, syscall.ENOMEM, errnoERESTARTSYS:
		return ErrJukebox
	case syscall.EOPNOTSUPP, errnoENOTSUPP:
		return ErrNotSupp
	case errnoETOOSMALL:
		return ErrTooSmall
	case errnoESERVERFAULT, syscall.ENFILE:
		return ErrServerFault
	}
	// EIO, ETXTBSY, EREMOTEIO, EUCLEAN and everything else.
	return ErrIO
}
