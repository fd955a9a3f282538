package nfs

import (
	"bytes"
	"encoding/binary"

	gonfs "github.com/willscott/go-nfs"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// attrFix is what the dispatch layer keeps of a call whose go-nfs reply
// lacks attributes knfsd sends, for the Linux client's attribute cache:
//
//   - CREATE, MKDIR, SYMLINK, MKNOD (§3.3.8 to §3.3.11) that succeed:
//     go-nfs sends dir_wcc without pre_op_attr, and without it the
//     client cannot tell its own change from another's (§2.6, wcc_data),
//     so it drops the directory's cached listing and attributes and reads
//     them again. The pre-operation attributes here are the directory's
//     just before the call is handed to go-nfs; a change by another
//     client in between makes them stale, which the client then takes
//     for its own change (knfsd avoids this by holding the directory's
//     lock, which the dispatch layer cannot).
//   - SETATTR, WRITE, REMOVE, RMDIR and RENAME that fail: go-nfs sends
//     wcc_data with neither pre- nor post-operation attributes, which
//     makes the client forget the object's (or directory's) attributes
//     and ask GETATTR. Nothing changed, so the object's current
//     attributes are its post-operation attributes, as knfsd sends them.
type attrFix struct {
	proc uint32
	dir  []byte               // the directory's (or SETATTR's and WRITE's object's) handle
	to   []byte               // RENAME: the target directory's handle
	name string               // RMDIR: the name removed
	pre  *gonfs.FileAttribute // CREATE and the like: the directory before
}

// newAttrFix returns the attrFix of an NFSv3 call, or nil if its reply
// needs none or its arguments do not decode (go-nfs then answers
// GARBAGE_ARGS or an error without attributes, which is left as is).
//
//	diropargs3 (RFC 1813 §3.3.3): nfs_fh3 dir; filename3 name; the start
//	of CREATE3args, MKDIR3args, SYMLINK3args and MKNOD3args.
//	SETATTR3args, WRITE3args: nfs_fh3 object (file); ...
//	REMOVE3args, RMDIR3args: diropargs3 object;
//	RENAME3args: diropargs3 from; diropargs3 to;
func (s *Server) newAttrFix(proc uint32, args []byte) *attrFix {
	switch proc {
	case ProcCreate, ProcMkdir, ProcSymlink, ProcMknod,
		ProcSetattr, ProcWrite, ProcRemove, ProcRmdir, ProcRename:
	default:
		return nil
	}
	r := xdr.NewReader(args)
	dir, err := r.Opaque(nfs3FHSize)
	if err != nil {
		return nil
	}
	f := &attrFix{proc: proc, dir: bytes.Clone(dir)}
	switch proc {
	case ProcRmdir:
		name, err := r.String(MaxPathLen)
		if err != nil {
			return nil
		}
		f.name = string(name)
		return f
	case ProcSetattr, ProcWrite, ProcRemove:
		return f
	case ProcRename:
		if _, err := r.Opaque(MaxPathLen); err != nil {
			return nil
		}
		to, err := r.Opaque(nfs3FHSize)
		if err != nil {
			return nil
		}
		f.to = bytes.Clone(to)
		return f
	}
	fsys, p, err := s.handler.FromHandle(dir)
	if err != nil {
		return nil
	}
	if f.pre = statAttr(fsys, fsys.Join(p...)); f.pre == nil {
		return nil
	}
	return f
}

// handleAttr returns the current attributes of the file fh names, or nil.
func (s *Server) handleAttr(fh []byte) *gonfs.FileAttribute {
	fsys, p, err := s.handler.FromHandle(fh)
	if err != nil {
		return nil
	}
	return statAttr(fsys, fsys.Join(p...))
}

// nonEmptyDir reports whether name in the directory dir names is a
// directory with at least one entry.
func (s *Server) nonEmptyDir(dir []byte, name string) bool {
	fsys, p, err := s.handler.FromHandle(dir)
	if err != nil {
		return false
	}
	entries, err := fsys.ReadDir(fsys.Join(append(p, name)...))
	return err == nil && len(entries) > 0
}

// emptyWcc is a wcc_data with neither pre- nor post-operation attributes.
var emptyWcc = make([]byte, 8)

// failedWcc fills in the wcc_data of a failed SETATTR, WRITE, REMOVE,
// RMDIR or RENAME whose go-nfs reply has none: post-operation attributes
// of the object (SETATTR, WRITE) or the directories, no pre-operation
// ones (nothing changed, and the reply cannot prove what was before).
//
//	SETATTR3resfail: wcc_data obj_wcc;  WRITE3resfail: wcc_data file_wcc;
//	REMOVE3resfail, RMDIR3resfail: wcc_data dir_wcc;
//	RENAME3resfail: wcc_data fromdir_wcc; wcc_data todir_wcc;
func (s *Server) failedWcc(reply []byte, at int, f *attrFix) []byte {
	rest := reply[at:]
	n := 1
	if f.proc == ProcRename {
		n = 2
	}
	if len(rest) != 8*n {
		return reply
	}
	for i := range n {
		if !bytes.Equal(rest[8*i:8*i+8], emptyWcc) {
			return reply
		}
	}
	var b bytes.Buffer
	b.Write(reply[:at])
	writeWcc(&b, nil, s.handleAttr(f.dir))
	if f.proc == ProcRename {
		writeWcc(&b, nil, s.handleAttr(f.to))
	}
	return b.Bytes()
}

// finishAttrs adds to go-nfs's reply the attributes f calls for.
//
//	CREATE3resok (and MKDIR, SYMLINK, MKNOD): nfsstat3 status; post_op_fh3
//	obj; post_op_attr obj_attributes; wcc_data dir_wcc;
func (s *Server) finishAttrs(reply []byte, f *attrFix) []byte {
	r, off, ok := successResults(reply)
	if !ok {
		return reply
	}
	status, err := r.Uint32()
	if err != nil {
		return reply
	}
	switch f.proc {
	case ProcSetattr, ProcWrite, ProcRemove, ProcRmdir, ProcRename:
		if status == nfs3OK {
			return reply
		}
		if f.proc == ProcRmdir && status == nfs3ErrIO && s.nonEmptyDir(f.dir, f.name) {
			// go-nfs answers NFS3ERR_IO for every failed removal;
			// RFC 1813 §3.3.13: "NFS3ERR_NOTEMPTY", which the client
			// turns into ENOTEMPTY (rm -r, rmdir(2) callers test it).
			reply = bytes.Clone(reply)
			binary.BigEndian.PutUint32(reply[off:], nfs3ErrNotEmpty)
		}
		return s.failedWcc(reply, off+4, f)
	}
	if status != nfs3OK {
		return reply
	}
	if follows, err := r.Bool(); err != nil {
		return reply
	} else if follows {
		if _, err := r.Opaque(nfs3FHSize); err != nil {
			return reply
		}
	}
	if follows, err := r.Bool(); err != nil {
		return reply
	} else if follows {
		if err := r.Skip(fattr3Size); err != nil {
			return reply
		}
	}
	at := off + r.Offset()
	if follows, err := r.Bool(); err != nil || follows {
		return reply // no wcc_data, or it has pre_op_attr already
	}
	var b bytes.Buffer
	b.Write(reply[:at])
	c := f.pre.AsCache()
	w := xdr.AppendBool(nil, true)
	w = xdr.AppendUint64(w, c.Filesize)
	w = xdr.AppendUint32(w, c.Mtime.Seconds)
	w = xdr.AppendUint32(w, c.Mtime.Nseconds)
	w = xdr.AppendUint32(w, c.Ctime.Seconds)
	w = xdr.AppendUint32(w, c.Ctime.Nseconds)
	b.Write(w)
	b.Write(reply[at+4:])
	return b.Bytes()
}
