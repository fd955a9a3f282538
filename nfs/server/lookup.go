package server

import (
	"errors"
	"path"
	"strings"
	"sync/atomic"

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
	if c.nowait {
		return s.lookupCached(c, dirFH, name, b), true
	}
	var res nfs3.LookupRes
	dir, err := c.dh.openObject(dirFH)
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer dir.close()
	res.DirAttr = dir.attr()
	c.dh.cacheDir(dirFH, dir)
	var o *object
	switch {
	case !dir.isDir():
		err = nfs3.ErrNotDir
	case name == ".":
		// The directory itself, by the handle the client has.
		res.Object, res.ObjAttr = dirFH, res.DirAttr
		return res.Append(b), true
	case name == "..":
		var here string
		if here, err = dir.path(); err != nil {
			break
		}
		up := "."
		if here != "." {
			up = path.Dir(here)
		}
		o, err = c.dh.objectAt(up)
	default:
		var st unix.Stat_t
		fh, err := c.dh.entry(dir, name, &st)
		return c.dh.entryReply(&res, fh, &st, err, b), true
	}
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer o.close()
	res.Object, res.ObjAttr = o.fh, o.attr()
	return res.Append(b), true
}

// lookupCached is LOOKUP on the polling goroutine (c.nowait, inlineCalls),
// which must not wait on the disk: through the directory's descriptor in
// the open-file cache, the entry opened only if the kernel's dentry cache
// has it (openat2 with RESOLVE_CACHED, as io_uring resolves a path without
// blocking), a negative entry included; on tmpfs and ramfs, where a
// lookup never waits on a device, plainly. Anything else (the directory
// not cached, "..", a name not in the dentry cache) sets c.wouldBlock and
// answers nothing: the call is executed again off the loop. The reply is
// the one lookup gives.
func (s *Server) lookupCached(c *call, dirFH []byte, name string, b []byte) []byte {
	h := c.dh
	resolve := uint64(resolveCached)
	if h.inMemory {
		resolve = 0
	}
	of := h.files.get(dirFH, false)
	if of == nil || name == ".." || resolve != 0 && noResolveCached.Load() {
		c.wouldBlock = true
		return nil
	}
	defer h.files.put(of)
	var res nfs3.LookupRes
	var dst unix.Stat_t
	if err := h.statOpen(dirFH, of, &dst); err != nil {
		res.Status = statusOf(err)
		return res.Append(b)
	}
	res.DirAttr = nfs3.PostOpAttr{Set: true, Attr: h.fattr(&dst)}
	switch {
	case dst.Mode&unix.S_IFMT != unix.S_IFDIR:
		res.Status = nfs3.ErrNotDir
		return res.Append(b)
	case name == ".":
		res.Object, res.ObjAttr = dirFH, res.DirAttr
		return res.Append(b)
	}
	// The entry's name below the root, for the handle index, if the
	// index has the directory's (it has, once the directory was resolved
	// by name). After a rename on the server's disk that name may be
	// stale; the index is a hint checked on use (resolve), which then
	// finds the entry by its parent or a walk.
	dirName := "."
	if dst.Ino != h.root.ino {
		dirName, _ = h.dir.idx.lookup(dst.Ino) // "" if not: not indexed
	}
	if resolve == 0 {
		// In memory: a lookup never waits on a device, and the entry's
		// handle is taken by name (entryAt) without opening it.
		var st unix.Stat_t
		fh, err := h.entryAt(of.fd, dst.Ino, name, dirName, &st)
		return h.entryReply(&res, fh, &st, err, b)
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolve}
	fd, err := unix.Openat2(of.fd, name, &how)
	switch {
	case err == unix.EINVAL && resolve != 0:
		noResolveCached.Store(true) // a kernel before 5.12
		fallthrough
	case err == unix.EAGAIN || err == unix.EINTR:
		c.wouldBlock = true
		return nil
	case err != nil:
		res.Status = statusOf(err)
		return res.Append(b)
	}
	full := ""
	if dirName != "" {
		full = childName(dirName, name)
	}
	o, err := h.objectOf(fd, dst.Ino, full)
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b)
	}
	defer o.close()
	res.Object, res.ObjAttr = o.fh, o.attr()
	return res.Append(b)
}

// entryReply appends to b the LOOKUP reply res completed with the entry
// that entry or entryAt found (its handle fh, its attributes st), or with
// their failure err.
func (h *DirHandler) entryReply(res *nfs3.LookupRes, fh []byte, st *unix.Stat_t, err error, b []byte) []byte {
	if err != nil {
		res.Status = statusOf(err)
	} else {
		res.Object, res.ObjAttr = fh, nfs3.PostOpAttr{Set: true, Attr: h.fattr(st)}
	}
	return res.Append(b)
}

// resolveCached is openat2's RESOLVE_CACHED (linux/openat2.h, Linux 5.12):
// fail with EAGAIN unless every component is in the dentry cache.
// golang.org/x/sys/unix does not define it for Linux.
const resolveCached = 0x20

// noResolveCached: the kernel refused RESOLVE_CACHED (before Linux 5.12),
// so no LOOKUP runs on the polling goroutine.
var noResolveCached atomic.Bool

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
	return h.objectOf(fd, parent, name)
}

// validName reports whether name can be one component of a path: not
// empty, no "/" and no NUL, at most nameMax bytes.
func validName(name string) bool {
	return name != "" && len(name) <= nameMax && !strings.ContainsAny(name, "/\x00")
}
