package nfs

import (
	"bytes"
	"errors"
	"io/fs"
	"reflect"
	"syscall"

	"github.com/go-git/go-billy/v5"
	gonfs "github.com/willscott/go-nfs"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Linker is implemented by a billy.Filesystem that makes hard links. The
// Server answers NFSv3 LINK (RFC 1813 §3.3.15) with it; on a file system
// without it, LINK fails with NFS3ERR_NOTSUPP.
type Linker interface {
	// Link makes newname a new name of the existing file oldname, as
	// link(2); both are names in the file system.
	Link(oldname, newname string) error
}

// nameMax is the longest file name LINK accepts (NAME_MAX, as go-nfs's
// PathNameMax).
const nameMax = 255

// linkBilly executes an NFSv3 LINK call for a handler other than a
// DirHandler (RFC 1813 §3.3.15) and returns its
// LINK3res. go-nfs v0.0.4 decodes LINK3args as if they were SYMLINK's
// (a diropargs3, then attributes and a path), so the dispatch layer never
// forwards LINK to it.
//
//	struct LINK3args { nfs_fh3 file; diropargs3 link; };
//	LINK3res: nfsstat3, post_op_attr file_attributes, wcc_data linkdir_wcc
//	(the same on success and failure).
func (s *Server) linkBilly(args []byte) []byte {
	r := xdr.NewReader(args)
	fileFH, err1 := r.Opaque(nfs3FHSize)
	dirFH, err2 := r.Opaque(nfs3FHSize)
	name, err3 := r.String(4 * nameMax)
	if err := errors.Join(err1, err2, err3); err != nil {
		return linkRes(nfs3ErrInval, nil, nil, nil)
	}
	fsys, path, err := s.handler.FromHandle(fileFH)
	if err != nil {
		return linkRes(nfs3ErrStale, nil, nil, nil)
	}
	oldname := fsys.Join(path...)
	fileAttr := statAttr(fsys, oldname)
	dfs, dpath, err := s.handler.FromHandle(dirFH)
	if err != nil {
		return linkRes(nfs3ErrStale, fileAttr, nil, nil)
	}
	dirname := dfs.Join(dpath...)
	dirPre := statAttr(dfs, dirname)
	fail := func(status uint32) []byte { return linkRes(status, fileAttr, dirPre, dirPre) }
	switch {
	case fileAttr == nil:
		return fail(nfs3ErrStale)
	case dirPre == nil:
		return fail(nfs3ErrStale)
	case dirPre.Type != gonfs.FileTypeDirectory:
		return fail(nfs3ErrNotDir)
	case fileAttr.Type == gonfs.FileTypeDirectory:
		return fail(nfs3ErrIsDir)
	case len(name) > nameMax:
		return fail(nfs3ErrNameTooLong)
	case len(name) == 0 || string(name) == "." || string(name) == "..":
		return fail(nfs3ErrExist)
	case bytes.IndexByte(name, '/') >= 0 || bytes.IndexByte(name, 0) >= 0:
		return fail(nfs3ErrAcces)
	case !sameFS(fsys, dfs):
		return fail(nfs3ErrXDev)
	case !billy.CapabilityCheck(fsys, billy.WriteCapability):
		return fail(nfs3ErrROFS)
	}
	l, ok := fsys.(Linker)
	if !ok {
		return fail(nfs3ErrNotSupp)
	}
	newname := dfs.Join(append(dpath[:len(dpath):len(dpath)], string(name))...)
	if err := l.Link(oldname, newname); err != nil {
		s.log.Debug("nfs: LINK failed", "old", oldname, "new", newname, "err", err)
		return linkRes(billyStatus(err), statAttr(fsys, oldname), dirPre, statAttr(dfs, dirname))
	}
	return linkRes(nfs3OK, statAttr(fsys, oldname), dirPre, statAttr(dfs, dirname))
}

// linkRes encodes a LINK3res.
func linkRes(status uint32, file, dirPre, dirPost *gonfs.FileAttribute) []byte {
	var b bytes.Buffer
	b.Write(xdr.AppendUint32(nil, status))
	_ = gonfs.WritePostOpAttrs(&b, file)
	writeWcc(&b, dirPre, dirPost)
	return b.Bytes()
}

// writeWcc encodes a wcc_data (RFC 1813 §2.6): the pre-operation size and
// times from pre, the post-operation attributes post.
func writeWcc(b *bytes.Buffer, pre, post *gonfs.FileAttribute) {
	var cache *gonfs.FileCacheAttribute
	if pre != nil {
		cache = pre.AsCache()
	}
	_ = gonfs.WriteWcc(b, cache, post)
}

// statAttr returns the attributes of name (not following a final symbolic
// link), or nil.
func statAttr(fsys billy.Filesystem, name string) *gonfs.FileAttribute {
	fi, err := fsys.Lstat(name)
	if err != nil {
		return nil
	}
	return fileAttr(fi, name)
}

// sameFS reports whether a and b are the same file system (a handler may
// serve several).
func sameFS(a, b billy.Filesystem) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb {
		return false
	}
	if !ta.Comparable() {
		return true // nothing to tell them apart by: let Link decide
	}
	return a == b
}

// billyStatus maps a billy file system error to an nfsstat3 (RFC 1813 §2.6).
func billyStatus(err error) uint32 {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EPERM:
			return nfs3ErrPerm
		case syscall.EACCES:
			return nfs3ErrAcces
		case syscall.EEXIST:
			return nfs3ErrExist
		case syscall.ENOENT:
			return nfs3ErrNoEnt
		case syscall.EXDEV:
			return nfs3ErrXDev
		case syscall.ENOTDIR:
			return nfs3ErrNotDir
		case syscall.EISDIR:
			return nfs3ErrIsDir
		case syscall.EINVAL:
			return nfs3ErrInval
		case syscall.ENOSPC:
			return nfs3ErrNoSpc
		case syscall.EROFS:
			return nfs3ErrROFS
		case syscall.EMLINK:
			return nfs3ErrMLink
		case syscall.ENAMETOOLONG:
			return nfs3ErrNameTooLong
		case syscall.EDQUOT:
			return nfs3ErrDQuot
		case syscall.ENOTSUP:
			return nfs3ErrNotSupp
		}
	}
	switch {
	case errors.Is(err, ErrStaleHandle):
		return nfs3ErrStale
	case errors.Is(err, fs.ErrExist):
		return nfs3ErrExist
	case errors.Is(err, fs.ErrNotExist):
		return nfs3ErrNoEnt
	case errors.Is(err, fs.ErrPermission):
		return nfs3ErrAcces
	case errors.Is(err, errors.ErrUnsupported), errors.Is(err, billy.ErrNotSupported):
		return nfs3ErrNotSupp
	}
	return nfs3ErrIO
}
