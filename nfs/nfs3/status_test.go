package nfs3

import (
	"errors"
	"syscall"
	"testing"
	"time"
)

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{
		OK: "NFS3_OK", ErrPerm: "NFS3ERR_PERM", ErrNoEnt: "NFS3ERR_NOENT", ErrIO: "NFS3ERR_IO",
		ErrNXIO: "NFS3ERR_NXIO", ErrAcces: "NFS3ERR_ACCES", ErrExist: "NFS3ERR_EXIST",
		ErrXDev: "NFS3ERR_XDEV", ErrNoDev: "NFS3ERR_NODEV", ErrNotDir: "NFS3ERR_NOTDIR",
		ErrIsDir: "NFS3ERR_ISDIR", ErrInval: "NFS3ERR_INVAL", ErrFBig: "NFS3ERR_FBIG",
		ErrNoSpc: "NFS3ERR_NOSPC", ErrROFS: "NFS3ERR_ROFS", ErrMLink: "NFS3ERR_MLINK",
		ErrNameTooLong: "NFS3ERR_NAMETOOLONG", ErrNotEmpty: "NFS3ERR_NOTEMPTY",
		ErrDQuot: "NFS3ERR_DQUOT", ErrStale: "NFS3ERR_STALE", ErrRemote: "NFS3ERR_REMOTE",
		ErrBadHandle: "NFS3ERR_BADHANDLE", ErrNotSync: "NFS3ERR_NOT_SYNC",
		ErrBadCookie: "NFS3ERR_BAD_COOKIE", ErrNotSupp: "NFS3ERR_NOTSUPP",
		ErrTooSmall: "NFS3ERR_TOOSMALL", ErrServerFault: "NFS3ERR_SERVERFAULT",
		ErrBadType: "NFS3ERR_BADTYPE", ErrJukebox: "NFS3ERR_JUKEBOX",
		3: "nfsstat3(3)", 10009: "nfsstat3(10009)", 0xffffffff: "nfsstat3(4294967295)",
	} {
		if got := s.String(); got != want {
			t.Errorf("Status(%d).String() = %q, want %q", uint32(s), got, want)
		}
		if got := s.Error(); got != want {
			t.Errorf("Status(%d).Error() = %q, want %q", uint32(s), got, want)
		}
	}
	// RFC 1813 §2.6 values.
	for s, want := range map[Status]uint32{
		ErrPerm: 1, ErrNoEnt: 2, ErrIO: 5, ErrNXIO: 6, ErrAcces: 13, ErrExist: 17, ErrXDev: 18,
		ErrNoDev: 19, ErrNotDir: 20, ErrIsDir: 21, ErrInval: 22, ErrFBig: 27, ErrNoSpc: 28,
		ErrROFS: 30, ErrMLink: 31, ErrNameTooLong: 63, ErrNotEmpty: 66, ErrDQuot: 69,
		ErrStale: 70, ErrRemote: 71, ErrBadHandle: 10001, ErrNotSync: 10002, ErrBadCookie: 10003,
		ErrNotSupp: 10004, ErrTooSmall: 10005, ErrServerFault: 10006, ErrBadType: 10007,
		ErrJukebox: 10008,
	} {
		if uint32(s) != want {
			t.Errorf("%v = %d, want %d", s, uint32(s), want)
		}
	}
	var err error = ErrStale
	if !errors.Is(err, ErrStale) || errors.Is(err, ErrIO) {
		t.Error("Status does not compare as an error")
	}
	if n := testing.AllocsPerRun(10, func() { _ = ErrJukebox.Error() }); n != 0 {
		t.Errorf("Error allocates %v times", n)
	}
}

func TestMountStatusString(t *testing.T) {
	for s, want := range map[MountStatus]string{
		MntOK: "MNT3_OK", MntErrPerm: "MNT3ERR_PERM", MntErrNoEnt: "MNT3ERR_NOENT",
		MntErrIO: "MNT3ERR_IO", MntErrAcces: "MNT3ERR_ACCES", MntErrNotDir: "MNT3ERR_NOTDIR",
		MntErrInval: "MNT3ERR_INVAL", MntErrNameTooLong: "MNT3ERR_NAMETOOLONG",
		MntErrNotSupp: "MNT3ERR_NOTSUPP", MntErrServerFault: "MNT3ERR_SERVERFAULT",
		3: "mountstat3(3)",
	} {
		if got := s.Error(); got != want {
			t.Errorf("MountStatus(%d) = %q, want %q", uint32(s), got, want)
		}
	}
	for s, want := range map[MountStatus]uint32{
		MntErrPerm: 1, MntErrNoEnt: 2, MntErrIO: 5, MntErrAcces: 13, MntErrNotDir: 20,
		MntErrInval: 22, MntErrNameTooLong: 63, MntErrNotSupp: 10004, MntErrServerFault: 10006,
	} {
		if uint32(s) != want {
			t.Errorf("%v = %d, want %d", s, uint32(s), want)
		}
	}
}

func TestStatusFromErrno(t *testing.T) {
	for _, c := range []struct {
		errno syscall.Errno
		want  Status
	}{
		{0, OK},
		{syscall.EPERM, ErrPerm},
		{syscall.ENOENT, ErrNoEnt},
		{syscall.EIO, ErrIO},
		{syscall.ENXIO, ErrNXIO},
		{syscall.EACCES, ErrAcces},
		{syscall.EEXIST, ErrExist},
		{syscall.EXDEV, ErrXDev},
		{syscall.ENODEV, ErrNoDev},
		{syscall.ENOTDIR, ErrNotDir},
		{syscall.EISDIR, ErrIsDir},
		{syscall.EINVAL, ErrInval},
		{syscall.EFBIG, ErrFBig},
		{syscall.E2BIG, ErrFBig},
		{syscall.ENOSPC, ErrNoSpc},
		{syscall.EROFS, ErrROFS},
		{syscall.EMLINK, ErrMLink},
		{syscall.ENAMETOOLONG, ErrNameTooLong},
		{syscall.ENOTEMPTY, ErrNotEmpty},
		{syscall.EDQUOT, ErrDQuot},
		{syscall.ESTALE, ErrStale},
		{syscall.EBADF, ErrStale},
		{518, ErrStale}, // EOPENSTALE
		{syscall.ETIMEDOUT, ErrJukebox},
		{syscall.EAGAIN, ErrJukebox},
		{syscall.EWOULDBLOCK, ErrJukebox},
		{syscall.ENOMEM, ErrJukebox},
		{512, ErrJukebox}, // ERESTARTSYS
		{syscall.EOPNOTSUPP, ErrNotSupp},
		{syscall.ENOTSUP, ErrNotSupp},
		{524, ErrNotSupp}, // ENOTSUPP
		{525, ErrTooSmall},
		{526, ErrServerFault},
		{syscall.ENFILE, ErrServerFault},
		{126, ErrPerm}, // ENOKEY
		{syscall.ETXTBSY, ErrIO},
		{121, ErrIO}, // EREMOTEIO
		{117, ErrIO}, // EUCLEAN
		{syscall.ELOOP, ErrIO},
		{syscall.EBUSY, ErrIO},
		{syscall.EINTR, ErrIO},
	} {
		if got := StatusFromErrno(c.errno); got != c.want {
			t.Errorf("StatusFromErrno(%d %v) = %v, want %v", int(c.errno), c.errno, got, c.want)
		}
	}
}

func TestTime(t *testing.T) {
	tm := time.Unix(1700000000, 123456789)
	nt := TimeOf(tm)
	if nt != (Time{Sec: 1700000000, Nsec: 123456789}) {
		t.Errorf("TimeOf = %+v", nt)
	}
	if !nt.Time().Equal(tm) {
		t.Errorf("Time() = %v, want %v", nt.Time(), tm)
	}
	// Seconds are unsigned: past 2038 they stay positive.
	late := Time{Sec: 0xfffffff0}
	if late.Time().Unix() != 0xfffffff0 {
		t.Errorf("Time() of %d = %d", late.Sec, late.Time().Unix())
	}
}
