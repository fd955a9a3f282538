package nfs

import (
	"bytes"
	"errors"
	"io/fs"

	"github.com/go-git/go-billy/v5"
	gonfs "github.com/willscott/go-nfs"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// createhow3 modes (RFC 1813 §3.3.8).
const (
	createUnchecked = 0
	createGuarded   = 1
)

// create executes an NFSv3 CREATE (RFC 1813 §3.3.8) of a DirHandler's
// file in the dispatch layer: the directory opened once for its
// pre-operation attributes, the new file's creation (O_EXCL when
// GUARDED), its handle and attributes, and the directory's
// post-operation attributes. go-nfs's CREATE resolves the directory from
// the root six times over and truncates an existing file even when the
// client asked for no size (RFC 1813: UNCHECKED leaves it as it is unless
// sattr sets the size). ok is false when the call is not for this path
// (another handler, EXCLUSIVE, arguments that do not decode): it then
// goes to go-nfs, which answers those.
//
//	CREATE3args: diropargs3 where; createhow3 how (UNCHECKED, GUARDED:
//	             sattr3 obj_attributes; EXCLUSIVE: createverf3 verf);
//	CREATE3resok: post_op_fh3 obj; post_op_attr obj_attributes;
//	              wcc_data dir_wcc;
//	CREATE3resfail: wcc_data dir_wcc;
func (s *Server) create(xid uint32, args []byte) (reply []byte, ok bool) {
	dh, isDH := s.handler.(*DirHandler)
	if !isDH {
		return nil, false
	}
	r := xdr.NewReader(args)
	dirFH, nameb, err := decodeDirOp(&r)
	if err != nil {
		return nil, false
	}
	how, err := r.Uint32()
	if err != nil || (how != createUnchecked && how != createGuarded) {
		return nil, false
	}
	sattr, err := gonfs.ReadSetFileAttributes(bytes.NewReader(args[r.Offset():]))
	if err != nil {
		return nil, false
	}
	fsys, p, err := dh.FromHandle(dirFH)
	if err != nil || fsys != billy.Filesystem(dh.dir) {
		return nil, false // go-nfs answers NFS3ERR_STALE the same
	}
	name := string(nameb)
	b := successReply(xid, nil)
	fail := func(status uint32, pre, post *gonfs.FileAttribute) ([]byte, bool) {
		b = xdr.AppendUint32(b, status)
		return appendWcc(b, pre, post), true
	}
	dirName := fsys.Join(p...)
	de, err := dh.openEntries(dirName)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail(nfs3ErrStale, nil, nil)
		}
		return fail(statusOr(err, nfs3ErrNotDir), nil, statAttr(fsys, dirName))
	}
	defer de.close()
	pre := de.attr()
	switch {
	case dh.dir.readOnly:
		return fail(nfs3ErrROFS, pre, pre)
	case len(name) > nameMax:
		return fail(nfs3ErrNameTooLong, pre, pre)
	case !validName(name) || name == "." || name == "..":
		return fail(nfs3ErrExist, pre, pre)
	}
	// Read-write, for the open-file cache (the WRITE that follows a
	// CREATE finds the file open); write-only if that is all the server
	// may do.
	flags := unix.O_CREAT | unix.O_RDWR | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	if how == createGuarded {
		flags |= unix.O_EXCL
	}
	fd, err := unix.Openat(de.fd, name, flags, 0o666)
	rw := err == nil
	if err == unix.EACCES {
		fd, err = unix.Openat(de.fd, name, flags&^unix.O_RDWR|unix.O_WRONLY, 0o666)
	}
	if err != nil {
		status := statusOr(err, nfs3ErrIO)
		if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ELOOP) {
			status = nfs3ErrExist // a directory or a symbolic link has the name
		}
		return fail(status, pre, de.fresh())
	}
	// The mode through the new descriptor (the umask played on
	// openat's); the rest, rarely sent with CREATE, through go-nfs's Apply.
	if sattr.SetMode != nil {
		err = unix.Fchmod(fd, *sattr.SetMode&0o777)
		sattr.SetMode = nil
	}
	defer func() {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}()
	if err != nil {
		return fail(statusOr(err, nfs3ErrIO), pre, de.fresh())
	}
	path := fsys.Join(append(p[:len(p):len(p)], name)...)
	if sattr.SetUID != nil || sattr.SetGID != nil || sattr.SetSize != nil || sattr.SetAtime != nil || sattr.SetMtime != nil {
		if err := sattr.Apply(dh.dir, dh.dir, path); err != nil {
			var se *gonfs.NFSStatusError
			if errors.As(err, &se) {
				return fail(uint32(se.NFSStatus), pre, de.fresh())
			}
			return fail(statusOr(err, nfs3ErrIO), pre, de.fresh())
		}
	}
	fi, fh, err := de.entry(name)
	if err != nil {
		return fail(statusOr(err, nfs3ErrIO), pre, de.fresh())
	}
	if rw && cacheCreated(dh, fh, fd) {
		fd = -1 // the cache's now
	}
	b = xdr.AppendUint32(b, nfs3OK)
	b = xdr.AppendBool(b, true)
	b = xdr.AppendOpaque(b, fh)
	b = appendPostOpAttr(b, fileAttr(fi, path))
	return appendWcc(b, pre, de.fresh()), true
}

// cacheCreated gives fd, a read-write descriptor of the file CREATE made,
// to the open-file cache as fh's if fh is its file (not one that took the
// name since: the descriptor pins its inode, so the inode numbers tell)
// and a regular file, and reports whether it did.
func cacheCreated(dh *DirHandler, fh []byte, fd int) bool {
	_, id, _, err := decodeHandle(fh)
	var st unix.Stat_t
	if err != nil || unix.Fstat(fd, &st) != nil || st.Ino != id.ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	dh.files.put(dh.files.add(fh, &openFile{fd: fd, rw: true}))
	return true
}

// appendWcc appends a wcc_data (RFC 1813 §2.6): pre's wcc_attr (size,
// mtime, ctime) and post's attributes, each left out when nil.
func appendWcc(b []byte, pre, post *gonfs.FileAttribute) []byte {
	if pre == nil {
		b = xdr.AppendBool(b, false)
	} else {
		b = xdr.AppendBool(b, true)
		b = xdr.AppendUint64(b, pre.Filesize)
		b = xdr.AppendUint32(b, pre.Mtime.Seconds)
		b = xdr.AppendUint32(b, pre.Mtime.Nseconds)
		b = xdr.AppendUint32(b, pre.Ctime.Seconds)
		b = xdr.AppendUint32(b, pre.Ctime.Nseconds)
	}
	return appendPostOpAttr(b, post)
}
