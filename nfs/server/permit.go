package server

import (
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/creds"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// access is what a READ, WRITE, COMMIT, LOOKUP, READDIR or READDIRPLUS
// asks of its caller on the file or directory its handle names (knfsd's
// fh_verify and nfsd_permission flags for them).
type access struct {
	mode uint32 // access(2) mode: R_OK, W_OK, X_OK
	// owner lets the file's owner through whatever the mode says
	// (NFSD_MAY_OWNER_OVERRIDE: a client checks access at open time, and
	// the server must not refuse the I/O of a file opened then);
	// readIfExec lets a READ through with execute permission (a client
	// reads a binary it may only execute).
	owner, readIfExec bool
	// killPriv clears setuid (and setgid with group execute) before a
	// write by anyone but root, as the kernel does for the writer.
	killPriv bool
}

// checkedAccess is what each procedure checked here asks.
var checkedAccess = map[uint32]access{
	nfs.ProcRead:        {mode: unix.R_OK, owner: true, readIfExec: true},
	nfs.ProcWrite:       {mode: unix.W_OK, owner: true, killPriv: true},
	nfs.ProcCommit:      {mode: unix.W_OK, owner: true},
	nfs.ProcLookup:      {mode: unix.X_OK},
	nfs.ProcReaddir:     {mode: unix.R_OK},
	nfs.ProcReaddirplus: {mode: unix.R_OK},
}

// permit checks, as the caller, the access proc (one of checkedAccess)
// asks on the file whose handle begins args, before the procedure runs
// as the server. It returns nil to go on, or the reply refusing the
// call: NFS3ERR_ACCES (or the error of the check) with the file's
// attributes in the shape of the procedure's failure. A handle that does
// not resolve passes: the procedure answers it.
func (ss *session) permit(c *call, proc uint32, args []byte) []byte {
	s := ss.s
	if !s.ids.Enabled() || c.cred.UID == 0 {
		// The server's own identity, or root's unsquashed, which the
		// kernel lets through (CAP_DAC_OVERRIDE, CAP_FSETID).
		return nil
	}
	want := checkedAccess[proc]
	r := xdr.NewReader(args)
	fh, err := r.Opaque(nfs3.FHSize)
	if err != nil {
		return nil
	}
	// The open-file cache's descriptor when it has one (the READs and
	// WRITEs of a file in use), else the handle resolved now.
	var fd int
	var st unix.Stat_t
	if of, err := c.dh.openHandle(fh, false); err == nil {
		defer c.dh.files.put(of)
		if unix.Fstat(of.fd, &st) != nil {
			return nil
		}
		fd = of.fd
	} else if o, err := c.dh.openObject(fh); err == nil {
		defer o.close()
		fd, st = o.fd, o.st
	} else {
		return nil
	}
	err = s.permitted(c, fd, &st, want)
	if err == nil || c.wouldBlock {
		return nil // go on, or (errWouldBlock) be executed again off the poll loop
	}
	b := c.successReply()
	b = xdr.AppendUint32(b, uint32(statusOf(err)))
	attr := nfs3.PostOpAttr{Set: true, Attr: c.dh.fattr(&st)}
	if proc == nfs.ProcWrite || proc == nfs.ProcCommit {
		wcc := nfs3.WccData{Before: preOpOf(&st), After: attr}
		return wcc.Append(b)
	}
	return attr.Append(b)
}

// permitted checks want on the file fd (st its attributes) for the
// caller c. What the file's mode bits grant the caller, when the file has
// no access ACL, is granted here, as NFS-Ganesha grants it from the
// attributes (fsal_test_access), saving the hand-off to an identity thread
// (nfs/internal/creds) that a check by the kernel as the caller costs: the
// result is the kernel's (acl_permission_check) for a caller without
// capabilities, which every caller but unsquashed root is. Anything else
// (a file with an ACL, a symbolic link, what the mode bits deny) the
// kernel decides, as the caller; a Linux Security Module's policy is
// consulted only then.
func (s *Server) permitted(c *call, fd int, st *unix.Stat_t, want access) error {
	var err error
	if (!want.owner || st.Uid != c.cred.UID) && (!grantedByMode(c.cred, st, want) || hasACL(fd, st)) {
		regular := st.Mode&unix.S_IFMT == unix.S_IFREG // not st: the closure would move it to the heap
		err = s.as(c, func() error {
			err := unix.Faccessat2(fd, "", want.mode, unix.AT_EACCESS|unix.AT_EMPTY_PATH)
			if err == unix.EACCES && want.readIfExec && regular {
				err = unix.Faccessat2(fd, "", unix.X_OK, unix.AT_EACCESS|unix.AT_EMPTY_PATH)
			}
			return err
		})
	}
	if err == nil && want.killPriv {
		if kill := privBits(st.Mode); kill != 0 {
			err = unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), st.Mode&0o7777&^kill, 0)
		}
	}
	return err
}

// grantedByMode reports whether the mode bits of st grant c what want asks
// (its mode, or read as execute if want.readIfExec on a regular file), by
// the kernel's rules for a file without an ACL: the owner's class if c owns
// the file, else the group's if c is in the file's group, else the
// others'; the first class that applies decides, even if a later one
// would grant more.
func grantedByMode(c creds.Cred, st *unix.Stat_t, want access) bool {
	var class uint32
	switch {
	case st.Uid == c.UID:
		class = st.Mode >> 6 & 7
	case c.InGroup(st.Gid):
		class = st.Mode >> 3 & 7
	default:
		class = st.Mode & 7
	}
	if class&want.mode == want.mode {
		return true
	}
	return want.readIfExec && want.mode == unix.R_OK && st.Mode&unix.S_IFMT == unix.S_IFREG && class&unix.X_OK != 0
}

// hasACL reports whether the file fd (st its attributes) may have an
// access ACL (system.posix_acl_access): yes if the attribute is there, or
// if it cannot tell (a symbolic link, an error other than "no such
// attribute" or "not supported").
func hasACL(fd int, st *unix.Stat_t) bool {
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return true
	}
	err := fgetxattrSize(fd, &aclAccessName[0])
	if err == unix.EBADF { // an O_PATH descriptor
		_, err = unix.Getxattr("/proc/self/fd/"+strconv.Itoa(fd), "system.posix_acl_access", nil)
	}
	return err != unix.ENODATA && err != unix.EOPNOTSUPP
}

// aclAccessName is the access ACL's attribute name as a C string, so that
// hasACL's fgetxattr(2) allocates nothing (unix.Fgetxattr copies its name
// to the heap on every call).
var aclAccessName = [...]byte{'s', 'y', 's', 't', 'e', 'm', '.', 'p', 'o', 's', 'i', 'x', '_',
	'a', 'c', 'l', '_', 'a', 'c', 'c', 'e', 's', 's', 0}

// fgetxattrSize is fgetxattr(fd, name, NULL, 0): the size of the
// attribute name (a NUL-terminated string), only its error kept.
func fgetxattrSize(fd int, name *byte) error {
	_, _, e := unix.Syscall6(unix.SYS_FGETXATTR, uintptr(fd), uintptr(unsafe.Pointer(name)), 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// privBits are the bits of mode a write by an unprivileged caller
// clears (the kernel's should_remove_suid): setuid, and setgid when the
// group may execute (otherwise setgid marks mandatory locking).
func privBits(mode uint32) uint32 {
	kill := mode & unix.S_ISUID
	if mode&(unix.S_ISGID|unix.S_IXGRP) == unix.S_ISGID|unix.S_IXGRP {
		kill |= unix.S_ISGID
	}
	return kill
}
