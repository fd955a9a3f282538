package server

import (
	"errors"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// nameMax is the longest file name (NAME_MAX, Linux's NFS3_MAXNAMLEN).
const nameMax = nfs3.NameMax

// getattr executes an NFSv3 GETATTR (RFC 1813 §3.3.1): an fstat of the
// file's descriptor in the open-file cache (regular files and
// directories), else of the file the handle names. ok is false if the
// arguments do not decode.
func (s *Server) getattr(c *call, args []byte) (reply []byte, ok bool) {
	r := xdr.NewReader(args)
	var a nfs3.GetattrArgs
	if a.Decode(&r) != nil {
		return nil, false
	}
	var res nfs3.GetattrRes
	var st unix.Stat_t
	res.Status = statusOf(c.dh.statHandle(a.Object, &st))
	if res.Status == nfs3.OK {
		res.Attr = c.dh.fattr(&st)
	}
	return res.Append(c.successReply()), true
}

// statHandle fills st with the attributes of fh's file: through its
// descriptor in the open-file cache (opened and cached now for a regular
// file or a directory), else through the handle resolved now.
func (h *DirHandler) statHandle(fh []byte, st *unix.Stat_t) error {
	of, err := h.openHandle(fh, false)
	if err == nil {
		defer h.files.put(of)
		return h.statOpen(fh, of, st)
	}
	if !errors.Is(err, errNotCacheable) {
		return err
	}
	o, err := h.openObject(fh)
	if err != nil {
		return err
	}
	*st = o.st
	o.close()
	return nil
}

// lookup executes an NFSv3 LOOKUP (RFC 1813 §3.3.3): the name's handle
// and attributes and the directory's attributes, the directory's
// attributes in a failure too (the client then keeps its cached
// directory). "." is the directory itself, ".." its parent, and the
// export root's own parent. ok is false if the arguments do not decode,
// or the name is empty, longer than NAME_MAX or holds "/" or NUL, which
// knfsd's decoder refuses as well (GARBAGE_ARGS).
//
//	LOOKUP3args: diropargs3 what (nfs_fh3 dir; filename3 name);
func (s *Server) lookup(c *call, args []byte) (reply []byte, ok bool) {
	r := xdr.NewReader(args)
	var a nfs3.LookupArgs
	if a.Decode(&r) != nil || (!validName(a.What.Name)) {
		return nil, false // as knfsd's decoder (svcxdr_decode_filename3)
	}
	dirFH, name := a.What.Dir, a.What.Name
	b := c.successReply()
	var res nfs3.LookupRes
	dir, err := c.dh.openObject(dirFH)
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer dir.close()
	res.DirAttr = dir.attr()
	var o *object
	switch {
	case !dir.isDir():
		err = nfs3.ErrNotDir
	case name == ".":
		// The directory itself, by the handle the client has.
		res.Object, res.ObjAttr = dirFH, res.DirAttr
		return res.Append(b), true
	case name == "..":
		up := "."
		if dir.name != "." {
			up = path.Dir(dir.name)
		}
		o, err = c.dh.objectAt(up)
	default:
		o, err = c.dh.childOf(dir, name)
	}
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer o.close()
	res.Object, res.ObjAttr = o.fh, o.attr()
	return res.Append(b), true
}

// objectAt opens the file name below the export's root (not following a
// last symbolic link) as an object with its handle, made in its
// directory, and records its name in the handle index.
func (h *DirHandler) objectAt(name string) (*object, error) {
	name = rel(name)
	dirfd, base, err := h.dir.parent(name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	var parent uint64
	if name != "." {
		var pst unix.Stat_t
		if err := unix.Fstat(dirfd, &pst); err != nil {
			return nil, err
		}
		parent = pst.Ino
	}
	fd, err := unix.Openat(dirfd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	o := &object{dh: h, fd: fd, name: name}
	id, err := fdIdentity(fd, &o.st)
	if err != nil {
		o.close()
		return nil, err
	}
	o.fh = encodeHandle(h.export, id, parent)
	h.dir.idx.add(id.ino, name, o.isDir())
	return o, nil
}

// validName reports whether name can be one component of a path: not
// empty, no "/" and no NUL, at most nameMax bytes.
func validName(name string) bool {
	return name != "" && len(name) <= nameMax && !strings.ContainsAny(name, "/\x00")
}
