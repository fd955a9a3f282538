package nfs

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/go-git/go-billy/v5"
	gonfs "github.com/willscott/go-nfs"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// getattr executes an NFSv3 GETATTR (RFC 1813 §3.3.1) in the dispatch
// layer, as go-nfs would (the file's Lstat), without the round trip
// through go-nfs's pipe and reflective encoder. ok is false if the
// arguments do not decode.
//
//	GETATTR3args: nfs_fh3 object;  GETATTR3resok: fattr3 obj_attributes;
func (s *Server) getattr(xid uint32, args []byte) (reply []byte, ok bool) {
	r := xdr.NewReader(args)
	fh, err := r.Opaque(nfs3FHSize)
	if err != nil {
		return nil, false
	}
	b := successReply(xid, nil)
	if dh, isDir := s.handler.(*DirHandler); isDir {
		if of, err := dh.openHandle(fh, false); err == nil {
			defer dh.files.put(of)
			attr, err := dh.openAttr(fh, of)
			if err != nil {
				return xdr.AppendUint32(b, statusOr(err, nfs3ErrIO)), true
			}
			b = xdr.AppendUint32(b, nfs3OK)
			return appendFattr3(b, attr), true
		}
	}
	fsys, p, err := s.handler.FromHandle(fh)
	if err != nil {
		return xdr.AppendUint32(b, nfs3ErrStale), true
	}
	name := fsys.Join(p...)
	fi, err := fsys.Lstat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return xdr.AppendUint32(b, nfs3ErrStale), true
		}
		return xdr.AppendUint32(b, statusOr(err, nfs3ErrIO)), true
	}
	b = xdr.AppendUint32(b, nfs3OK)
	return appendFattr3(b, fileAttr(fi, name)), true
}

// lookup executes an NFSv3 LOOKUP (RFC 1813 §3.3.3) in the dispatch
// layer: the name's handle and attributes and the directory's attributes,
// the directory's attributes in a failure too (go-nfs sends none, and the
// client then revalidates its cached directory). With a DirHandler the
// directory is opened once for the directory's attributes and the name's
// attributes and handle (DirHandler.openEntries). "." is the directory
// itself, ".." its parent, and the export root's own parent (go-nfs
// answers NFS3ERR_ACCES). ok is false if the arguments do not decode.
//
//	LOOKUP3args: diropargs3 what (nfs_fh3 dir; filename3 name);
//	LOOKUP3resok: nfs_fh3 object; post_op_attr obj_attributes;
//	              post_op_attr dir_attributes;
//	LOOKUP3resfail: post_op_attr dir_attributes;
func (s *Server) lookup(xid uint32, args []byte) (reply []byte, ok bool) {
	r := xdr.NewReader(args)
	dirFH, nameb, err := decodeDirOp(&r)
	if err != nil {
		return nil, false
	}
	fname := string(nameb)
	b := successReply(xid, nil)
	fail := func(status uint32, dirAttr *gonfs.FileAttribute) ([]byte, bool) {
		b = xdr.AppendUint32(b, status)
		return appendPostOpAttr(b, dirAttr), true
	}
	fsys, p, err := s.handler.FromHandle(dirFH)
	if err != nil {
		return fail(nfs3ErrStale, nil)
	}
	dirName := fsys.Join(p...)
	success := func(fh []byte, attr, dirAttr *gonfs.FileAttribute) ([]byte, bool) {
		b = xdr.AppendUint32(b, nfs3OK)
		b = xdr.AppendOpaque(b, fh)
		b = appendPostOpAttr(b, attr)
		return appendPostOpAttr(b, dirAttr), true
	}
	if dh, ok := s.handler.(*DirHandler); ok && fsys == billy.Filesystem(dh.dir) &&
		fname != "." && fname != ".." && validName(fname) {
		de, err := dh.openEntries(dirName)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fail(nfs3ErrStale, nil)
			}
			return fail(statusOr(err, nfs3ErrNotDir), statAttr(fsys, dirName))
		}
		defer de.close()
		dirAttr := de.attr()
		if dirAttr.Type != gonfs.FileTypeDirectory {
			return fail(nfs3ErrNotDir, dirAttr)
		}
		fi, fh, err := de.entry(fname)
		if err != nil {
			return fail(statusOr(err, nfs3ErrNoEnt), dirAttr)
		}
		return success(fh, fileAttr(fi, fsys.Join(append(p[:len(p):len(p)], fname)...)), dirAttr)
	}

	dirAttr := statAttr(fsys, dirName)
	switch {
	case dirAttr == nil:
		return fail(nfs3ErrStale, nil)
	case dirAttr.Type != gonfs.FileTypeDirectory:
		return fail(nfs3ErrNotDir, dirAttr)
	}
	var ep []string
	switch {
	case fname == ".":
		ep = p
	case fname == "..":
		ep = p
		if len(p) > 0 {
			ep = p[:len(p)-1]
		}
	case len(fname) > nameMax:
		return fail(nfs3ErrNameTooLong, dirAttr)
	case !validName(fname):
		return fail(nfs3ErrAcces, dirAttr)
	default:
		ep = append(p[:len(p):len(p)], fname)
	}
	name := fsys.Join(ep...)
	attr := statAttr(fsys, name)
	if attr == nil {
		return fail(nfs3ErrNoEnt, dirAttr)
	}
	fh := s.handler.ToHandle(fsys, ep)
	if fh == nil {
		return fail(nfs3ErrNoEnt, dirAttr)
	}
	return success(fh, attr, dirAttr)
}

// validName reports whether name can be one component of a path: not
// empty, no "/" and no NUL (knfsd answers NFS3ERR_ACCES to the others),
// at most nameMax bytes.
func validName(name string) bool {
	return name != "" && len(name) <= nameMax && !strings.ContainsAny(name, "/\x00")
}
