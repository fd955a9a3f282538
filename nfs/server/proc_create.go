package server

import (
	"encoding/binary"
	"errors"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// isDot reports whether name is "." or "..", which no call may create or
// remove.
func isDot(name string) bool { return name == "." || name == ".." }

// childOf opens the entry name of directory dir (not following a
// symbolic link) as an object with its handle, and records its name in
// the handle index.
func (h *DirHandler) childOf(dir *object, name string) (*object, error) {
	fd, err := unix.Openat(dir.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return h.objectOf(fd, dir.st.Ino, dir.child(name))
}

// objectOf makes fd, an O_PATH descriptor of the entry name (below the
// root) of directory parent, an object with its handle, and records its
// name in the handle index unless name is "" (not known). It takes fd,
// which it closes on failure.
func (h *DirHandler) objectOf(fd int, parent uint64, name string) (*object, error) {
	o := &object{dh: h, fd: fd, name: name}
	fh, err := h.handleOf(fd, parent, name, &o.st)
	if err != nil {
		o.close()
		return nil, err
	}
	o.fh = fh
	return o, nil
}

// handleOf returns the handle of the file open as fd, the entry name
// (below the root) of directory parent, fills st with its attributes,
// and records its name in the handle index unless name is "" (not
// known). fd stays the caller's. The handle is the entry handles' (see
// entry) when they have the file's, under its inode and change time from
// the fstat: a LOOKUP of a file listed, created or looked up before
// costs no name_to_handle_at and no MAC. It is shared: the caller must
// not modify it.
func (h *DirHandler) handleOf(fd int, parent uint64, name string, st *unix.Stat_t) ([]byte, error) {
	if err := unix.Fstat(fd, st); err != nil {
		return nil, err
	}
	if name != "" {
		h.dir.idx.add(st.Ino, name, st.Mode&unix.S_IFMT == unix.S_IFDIR)
	}
	k := entryKeyOf(parent, st)
	if fh := h.entries.get(k); fh != nil {
		return fh, nil
	}
	fh := encodeHandle(h.export, identityOf(fd, st), parent)
	h.entries.put(k, fh)
	return fh, nil
}

// createRes finishes a CREATE, MKDIR, SYMLINK or MKNOD: the new entry's
// handle and attributes on success, the directory's wcc_data always.
func (s *Server) createRes(c *call, dir *object, name string, err error) *nfs3.CreateRes {
	res := &nfs3.CreateRes{Status: statusOf(err)}
	if err == nil {
		if o, err := c.dh.childOf(dir, name); err == nil {
			res.Obj = nfs3.PostOpFH{Set: true, FH: o.fh}
			res.ObjAttr = o.attr()
			o.close()
		}
	}
	res.DirWcc = dir.wcc()
	return res
}

// openWhere opens the directory a diropargs3 names, for a call that
// creates there: NFS3ERR_ROFS on a read-only export, NFS3ERR_EXIST for
// "." and "..", as knfsd answers.
func (s *Server) openWhere(c *call, w *nfs3.DirOpArgs) (*object, error) {
	dir, err := c.dh.openDir(w.Dir)
	if err != nil {
		return nil, err
	}
	switch {
	case c.readOnly():
		err = nfs3.ErrROFS
	case isDot(w.Name):
		err = nfs3.ErrExist
	}
	return dir, err
}

// fixMode gives a new entry the permission bits asked for when the
// process's umask took some away (knfsd creates with no umask), leaving
// the bits the kernel set by its own rules (setgid inherited or
// stripped). It runs as the caller, the entry's owner.
func (s *Server) fixMode(dirfd int, name string, mode uint32) error {
	if s.umask&mode&0o777 == 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	return unix.Fchmodat(dirfd, name, st.Mode&0o7000|mode&0o777, 0)
}

// createAttrs applies what an sattr3 sets besides the mode to a new
// entry, as the caller: the size and times, and the owner and group only
// for root (knfsd's nfsd_create_setattr).
func (s *Server) createAttrs(c *call, dir *object, name string, a *nfs3.Sattr) error {
	rest := *a
	rest.SetMode = false
	if c.cred.UID != 0 {
		rest.SetUID, rest.SetGID = false, false
	}
	if !rest.SetUID && !rest.SetGID && !rest.SetSize && rest.Atime.How == nfs3.DontChange && rest.Mtime.How == nfs3.DontChange {
		return nil
	}
	o, err := c.dh.childOf(dir, name)
	if err != nil {
		return err
	}
	defer o.close()
	return s.setAttrs(c, o, &rest)
}

// create executes an NFSv3 CREATE (RFC 1813 §3.3.8) as the caller:
// UNCHECKED leaves an existing regular file as it is but for a size
// asked for, GUARDED fails with NFS3ERR_EXIST, EXCLUSIVE keeps the
// verifier in the new file's mtime and atime seconds, as knfsd does, so
// that a retransmission finds its own file and succeeds (the client then
// sets the attributes it wants with SETATTR).
func (s *Server) create(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.CreateArgs
	if a.Decode(r) != nil || !validName(a.Where.Name) {
		return nil, false
	}
	dir, err := s.openWhere(c, &a.Where)
	if dir == nil {
		return (&nfs3.CreateRes{Status: statusOf(err)}).Append(b), true
	}
	defer dir.close()
	if err != nil {
		return s.createRes(c, dir, "", err).Append(b), true
	}
	name := a.Where.Name
	mode := uint32(0)
	if a.Mode != nfs3.Exclusive && a.Attr.SetMode {
		mode = a.Attr.Mode & 0o7777
	}
	vm := binary.BigEndian.Uint32(a.Verf[0:4]) & 0x7fffffff
	va := binary.BigEndian.Uint32(a.Verf[4:8]) & 0x7fffffff
	var fd = -1
	err = s.as(c, func() error {
		var err error
		fd, err = unix.Openat(dir.fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		if err == nil {
			return s.fixMode(dir.fd, name, mode)
		}
		if !errors.Is(err, unix.EEXIST) || a.Mode == nfs3.Guarded {
			return err
		}
		// The name exists: UNCHECKED succeeds on a regular file in a
		// directory the caller may create in; EXCLUSIVE only on the file
		// an earlier call with this verifier created.
		if err := unix.Faccessat2(dir.fd, "", unix.W_OK|unix.X_OK, unix.AT_EACCESS|unix.AT_EMPTY_PATH); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dir.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return unix.EEXIST
		}
		if a.Mode == nfs3.Exclusive && (uint32(st.Mtim.Sec) != vm || uint32(st.Atim.Sec) != va || st.Size != 0) {
			return unix.EEXIST
		}
		return errExisting
	})
	if fd >= 0 {
		defer func() {
			if fd >= 0 {
				_ = unix.Close(fd)
			}
		}()
	}
	switch {
	case errors.Is(err, errExisting):
		err = nil
		if a.Mode == nfs3.Unchecked && a.Attr.SetSize {
			err = s.createAttrs(c, dir, name, &nfs3.Sattr{SetSize: true, Size: a.Attr.Size})
		}
	case err != nil:
	case a.Mode == nfs3.Exclusive:
		ts := [2]unix.Timespec{{Sec: int64(va)}, {Sec: int64(vm)}}
		err = unix.UtimesNanoAt(dir.fd, name, ts[:], unix.AT_SYMLINK_NOFOLLOW)
	default:
		err = s.createAttrs(c, dir, name, &a.Attr)
	}
	if err != nil || fd < 0 {
		return s.createRes(c, dir, name, err).Append(b), true
	}
	// The new file's handle and attributes from its descriptor (the file
	// O_EXCL made, whatever took its name since); the WRITEs that follow
	// a CREATE find it open.
	res := &nfs3.CreateRes{}
	var st unix.Stat_t
	if fh, err := c.dh.handleOf(fd, dir.st.Ino, dir.child(name), &st); err == nil {
		res.Obj = nfs3.PostOpFH{Set: true, FH: fh}
		res.ObjAttr = nfs3.PostOpAttr{Set: true, Attr: c.dh.fattr(&st)}
		c.dh.files.put(c.dh.files.add(fh, &openFile{fd: fd, rw: true}))
		fd = -1
	}
	res.DirWcc = dir.wcc()
	return res.Append(b), true
}

// errExisting says that CREATE found the file it may succeed on.
var errExisting = errors.New("nfs: existing file")

// mkdir executes an NFSv3 MKDIR (RFC 1813 §3.3.9) as the caller.
func (s *Server) mkdir(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.MkdirArgs
	if a.Decode(r) != nil || !validName(a.Where.Name) {
		return nil, false
	}
	return s.makeEntry(c, b, &a.Where, &a.Attr, nil, func(dirfd int, name string, mode uint32) error {
		return unix.Mkdirat(dirfd, name, mode)
	}), true
}

// symlink executes an NFSv3 SYMLINK (RFC 1813 §3.3.10) as the caller; an
// empty target, or one with a NUL, is NFS3ERR_INVAL. A link has no mode
// of its own: one asked for is ignored, as by knfsd.
func (s *Server) symlink(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.SymlinkArgs
	if a.Decode(r) != nil || !validName(a.Where.Name) {
		return nil, false
	}
	var bad error
	if a.Path == "" || strings.IndexByte(a.Path, 0) >= 0 {
		bad = nfs3.ErrInval
	}
	a.Attr.SetMode = false
	return s.makeEntry(c, b, &a.Where, &a.Attr, bad, func(dirfd int, name string, _ uint32) error {
		return unix.Symlinkat(a.Path, dirfd, name)
	}), true
}

// mknod executes an NFSv3 MKNOD (RFC 1813 §3.3.11) as the caller: FIFOs
// and sockets for anyone who may create in the directory, character and
// block devices where the kernel lets the caller (root, unsquashed);
// another type is NFS3ERR_BADTYPE.
func (s *Server) mknod(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.MknodArgs
	if a.Decode(r) != nil || !validName(a.Where.Name) {
		return nil, false
	}
	var typ uint32
	var dev uint64
	var bad error
	switch a.Type {
	case nfs3.TypeChr:
		typ, dev = unix.S_IFCHR, unix.Mkdev(a.Spec.Major, a.Spec.Minor)
	case nfs3.TypeBlk:
		typ, dev = unix.S_IFBLK, unix.Mkdev(a.Spec.Major, a.Spec.Minor)
	case nfs3.TypeSock:
		typ = unix.S_IFSOCK
	case nfs3.TypeFIFO:
		typ = unix.S_IFIFO
	default:
		bad = nfs3.ErrBadType
	}
	return s.makeEntry(c, b, &a.Where, &a.Attr, bad, func(dirfd int, name string, mode uint32) error {
		return unix.Mknodat(dirfd, name, typ|mode, int(dev))
	}), true
}

// makeEntry executes the rest of a MKDIR, SYMLINK or MKNOD and appends
// its CREATE3res-shaped result to b: in the directory where names, mk
// makes the entry as the caller, with the mode attr asks for (the
// process's umask undone), and the rest of attr is applied. bad, if not
// nil, is what is wrong with the arguments, answered once the directory
// is known to be there and writable.
func (s *Server) makeEntry(c *call, b []byte, where *nfs3.DirOpArgs, attr *nfs3.Sattr, bad error,
	mk func(dirfd int, name string, mode uint32) error) []byte {
	dir, err := s.openWhere(c, where)
	if dir == nil {
		return (&nfs3.CreateRes{Status: statusOf(err)}).Append(b)
	}
	defer dir.close()
	if err == nil {
		err = bad
	}
	if err == nil {
		mode := uint32(0)
		if attr.SetMode {
			mode = attr.Mode & 0o7777
		}
		err = s.as(c, func() error {
			if err := mk(dir.fd, where.Name, mode); err != nil {
				return err
			}
			return s.fixMode(dir.fd, where.Name, mode)
		})
		if err == nil {
			err = s.createAttrs(c, dir, where.Name, attr)
		}
	}
	return s.createRes(c, dir, where.Name, err).Append(b)
}
