package server

import (
	"errors"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// setattr executes an NFSv3 SETATTR (RFC 1813 §3.3.2) as the caller: the
// kernel's rules for truncate, chown, chmod and utimes decide, the
// file's owner truncating a file it cannot write as knfsd lets it
// (NFSD_MAY_OWNER_OVERRIDE). A guard whose ctime no longer matches gets
// NFS3ERR_NOT_SYNC.
func (s *Server) setattr(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.SetattrArgs
	if a.Decode(r) != nil {
		return nil, false
	}
	res := nfs3.SetattrRes{}
	o, err := c.dh.openObject(a.Object)
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer o.close()
	switch {
	case a.Check && timeOf(o.st.Ctim) != a.CtimeGuard:
		err = nfs3.ErrNotSync
	case c.readOnly():
		err = nfs3.ErrROFS
	default:
		err = s.setAttrs(c, o, &a.NewAttr)
		if a.NewAttr.SetMode || a.NewAttr.SetUID || a.NewAttr.SetGID {
			c.dh.recheck(a.Object)
		}
	}
	res.Status = statusOf(err)
	res.Wcc = nfs3.WccData{Before: preOpOf(&o.st), After: o.fresh()}
	return res.Append(b), true
}

// setAttrs applies a, an sattr3, to o as the caller, in knfsd's order:
// the size, the owner and group, the mode, the times.
func (s *Server) setAttrs(c *call, o *object, a *nfs3.Sattr) error {
	typ := o.st.Mode & unix.S_IFMT
	rootFD := -1
	if a.SetSize {
		switch typ {
		case unix.S_IFREG:
		case unix.S_IFDIR:
			return nfs3.ErrIsDir
		default:
			return nfs3.ErrInval
		}
		if o.st.Uid == c.cred.UID {
			// The owner may truncate its file whatever the mode says
			// (knfsd's NFSD_MAY_OWNER_OVERRIDE: a client's open for
			// writing was allowed when the file was created): opened
			// here, truncated as the caller, which keeps the kernel's
			// clearing of setuid and setgid.
			fd, err := unix.Open(o.proc(), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			rootFD = fd
			defer unix.Close(fd)
		}
	}
	var parent int = -1
	if typ == unix.S_IFLNK && (a.Atime.How != nfs3.DontChange || a.Mtime.How != nfs3.DontChange) && o.name != "." {
		// utimes of a symbolic link itself goes through its directory
		// (AT_SYMLINK_NOFOLLOW): /proc's name would follow it.
		dirfd, _, err := c.dh.dir.parent(o.name)
		if err != nil {
			return err
		}
		parent = dirfd
		defer unix.Close(dirfd)
	}
	// The server's time for one of the two times (the other unchanged)
	// asks only write permission of a caller who is not the owner, as
	// knfsd's nfsd_setattr asks (NFSD_MAY_WRITE, then notify_change
	// without ATTR_TIMES_SET); utimensat would ask ownership of the
	// caller unless both times are UTIME_NOW. Checked as the caller, set
	// as the server below.
	touch := a.Atime.How != nfs3.SetToClientTime && a.Mtime.How != nfs3.SetToClientTime &&
		(a.Atime.How == nfs3.DontChange) != (a.Mtime.How == nfs3.DontChange) && o.st.Uid != c.cred.UID
	utimes := func() error {
		ts := [2]unix.Timespec{timespecOf(a.Atime), timespecOf(a.Mtime)}
		switch {
		case parent >= 0:
			return unix.UtimesNanoAt(parent, baseName(o.name), ts[:], unix.AT_SYMLINK_NOFOLLOW)
		case o.of != nil:
			return futimens(o.fd, &ts)
		}
		return unix.UtimesNanoAt(unix.AT_FDCWD, o.proc(), ts[:], 0)
	}
	err := s.as(c, func() error {
		if a.SetSize {
			fd := rootFD
			if fd < 0 {
				var err error
				if fd, err = unix.Open(o.proc(), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err != nil {
					return err
				}
				defer unix.Close(fd)
			}
			if err := unix.Ftruncate(fd, int64(a.Size)); err != nil {
				return err
			}
		}
		if a.SetUID || a.SetGID {
			uid, gid := -1, -1
			if a.SetUID {
				uid = int(a.UID)
			}
			if a.SetGID {
				gid = int(a.GID)
			}
			if err := unix.Fchownat(o.fd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
				return err
			}
		}
		// A symbolic link has no mode of its own: knfsd ignores one.
		if a.SetMode && typ != unix.S_IFLNK {
			if err := o.chmod(a.Mode & 0o7777); err != nil {
				return err
			}
		}
		switch {
		case a.Atime.How == nfs3.DontChange && a.Mtime.How == nfs3.DontChange:
			return nil
		case touch:
			return unix.Faccessat2(o.fd, "", unix.W_OK, unix.AT_EACCESS|unix.AT_EMPTY_PATH)
		}
		return utimes()
	})
	if err == nil && touch {
		err = utimes()
	}
	return err
}

// chmod sets o's mode: through its descriptor if it is the open-file
// cache's (opened, not O_PATH: fchmod), else through its /proc/self/fd
// name (a path walk through procfs the descriptor saves). The kernel's
// permission check is the inode's either way.
func (o *object) chmod(mode uint32) error {
	if o.of != nil {
		return unix.Fchmod(o.fd, mode)
	}
	return unix.Fchmodat(unix.AT_FDCWD, o.proc(), mode, 0)
}

// futimens sets the times of the file open as fd (not O_PATH) to ts
// (utimensat with a NULL path, as glibc's futimens), which x/sys/unix
// has no call for (its Futimes goes through /proc/self/fd).
func futimens(fd int, ts *[2]unix.Timespec) error {
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// timespecOf is utimensat's time for a set_atime or set_mtime: UTIME_OMIT,
// UTIME_NOW (the server's clock) or the client's time.
func timespecOf(t nfs3.SetTime) unix.Timespec {
	switch t.How {
	case nfs3.SetToServerTime:
		return unix.Timespec{Nsec: unix.UTIME_NOW}
	case nfs3.SetToClientTime:
		return unix.Timespec{Sec: int64(t.Time.Sec), Nsec: int64(t.Time.Nsec)}
	}
	return unix.Timespec{Nsec: unix.UTIME_OMIT}
}

func baseName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// accessBits maps ACCESS3 bits to the access(2) modes knfsd checks for
// them (fs/nfsd/vfs.c, nfsd_access's maps) by file type.
type accessBit struct {
	bit  uint32
	mode uint32
}

var (
	accessReg = []accessBit{
		{nfs3.AccessRead, unix.R_OK}, {nfs3.AccessExecute, unix.X_OK},
		{nfs3.AccessModify, unix.W_OK}, {nfs3.AccessExtend, unix.W_OK},
	}
	accessDir = []accessBit{
		{nfs3.AccessRead, unix.R_OK}, {nfs3.AccessLookup, unix.X_OK},
		{nfs3.AccessModify, unix.W_OK | unix.X_OK}, {nfs3.AccessExtend, unix.W_OK | unix.X_OK},
		{nfs3.AccessDelete, unix.W_OK | unix.X_OK},
	}
	accessOther = []accessBit{
		{nfs3.AccessRead, unix.R_OK}, {nfs3.AccessExecute, unix.X_OK},
		{nfs3.AccessModify, unix.W_OK}, {nfs3.AccessExtend, unix.W_OK},
	}
)

// access executes an NFSv3 ACCESS (RFC 1813 §3.3.4): of the bits asked,
// those the kernel grants the caller on the object (faccessat2 with the
// caller's identity, AT_EACCESS), as knfsd's nfsd_access answers. A
// read-only export grants no MODIFY, EXTEND or DELETE.
func (s *Server) access(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.AccessArgs
	if a.Decode(r) != nil {
		return nil, false
	}
	res := nfs3.AccessRes{}
	o, err := c.dh.openObject(a.Object)
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer o.close()
	m := accessOther
	switch o.st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		m = accessReg
	case unix.S_IFDIR:
		m = accessDir
	}
	err = s.as(c, func() error {
		for _, e := range m {
			if a.Access&e.bit == 0 {
				continue
			}
			if c.readOnly() && e.mode&unix.W_OK != 0 {
				continue
			}
			err := unix.Faccessat2(unix.AT_FDCWD, o.proc(), e.mode, unix.AT_EACCESS)
			switch {
			case err == nil:
				res.Access |= e.bit
			case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS):
			default:
				return err
			}
		}
		return nil
	})
	res.Status = statusOf(err)
	if err != nil {
		res.Access = 0
	}
	res.ObjAttr = o.fresh()
	return res.Append(b), true
}

// readlink executes an NFSv3 READLINK (RFC 1813 §3.3.5): the link's
// target, read through its descriptor (NFS3ERR_INVAL for another type).
func (s *Server) readlink(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.ReadlinkArgs
	if a.Decode(r) != nil {
		return nil, false
	}
	res := nfs3.ReadlinkRes{}
	o, err := c.dh.openObject(a.Symlink)
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer o.close()
	res.SymlinkAttr = o.attr()
	if o.st.Mode&unix.S_IFMT != unix.S_IFLNK {
		res.Status = nfs3.ErrInval
		return res.Append(b), true
	}
	buf := make([]byte, nfs3.PathMax+1)
	n, err := unix.Readlinkat(o.fd, "", buf)
	switch {
	case err != nil:
		res.Status = statusOf(err)
	case n > nfs3.PathMax:
		res.Status = nfs3.ErrNameTooLong
	default:
		res.Path = string(buf[:n])
	}
	return res.Append(b), true
}
