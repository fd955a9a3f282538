package nfs

import (
	"bytes"

	gonfs "github.com/willscott/go-nfs"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// attrFix is what the dispatch layer keeps of a call whose go-nfs reply
// lacks attributes knfsd sends, for the Linux client's attribute cache:
//
//   - LOOKUP (RFC 1813 §3.3.3) that fails: go-nfs sends no dir_attributes,
//     so the client cannot tell whether its cached directory (and the
//     negative dentry it makes) is still good and asks GETATTR later.
//   - CREATE, MKDIR, SYMLINK, MKNOD (§3.3.8 to §3.3.11) that succeed:
//     go-nfs sends dir_wcc without pre_op_attr, and without it the
//     client cannot tell its own change from another's (§2.6, wcc_data),
//     so it drops the directory's cached listing and attributes and reads
//     them again. The pre-operation attributes here are the directory's
//     just before the call is handed to go-nfs; a change by another
//     client in between makes them stale, which the client then takes
//     for its own change (knfsd avoids this by holding the directory's
//     lock, which the dispatch layer cannot).
type attrFix struct {
	proc uint32
	dir  []byte               // the directory's handle
	pre  *gonfs.FileAttribute // CREATE and the like: the directory before
}

// newAttrFix returns the attrFix of an NFSv3 call, or nil if its reply
// needs none or its arguments do not decode (go-nfs then answers
// GARBAGE_ARGS or an error without attributes, which is left as is).
//
//	diropargs3 (RFC 1813 §3.3.3): nfs_fh3 dir; filename3 name; the start
//	of LOOKUP3args, CREATE3args, MKDIR3args, SYMLINK3args and MKNOD3args.
func (s *Server) newAttrFix(proc uint32, args []byte) *attrFix {
	switch proc {
	case ProcLookup, ProcCreate, ProcMkdir, ProcSymlink, ProcMknod:
	default:
		return nil
	}
	r := xdr.NewReader(args)
	dir, err := r.Opaque(nfs3FHSize)
	if err != nil {
		return nil
	}
	f := &attrFix{proc: proc, dir: bytes.Clone(dir)}
	if proc != ProcLookup {
		fsys, p, err := s.handler.FromHandle(dir)
		if err != nil {
			return nil
		}
		if f.pre = statAttr(fsys, fsys.Join(p...)); f.pre == nil {
			return nil
		}
	}
	return f
}

// dirAttr returns the current attributes of f's directory, or nil.
func (s *Server) dirAttr(f *attrFix) *gonfs.FileAttribute {
	fsys, p, err := s.handler.FromHandle(f.dir)
	if err != nil {
		return nil
	}
	return statAttr(fsys, fsys.Join(p...))
}

// finishAttrs adds to go-nfs's reply the attributes f calls for.
//
//	LOOKUP3resfail: nfsstat3 status; post_op_attr dir_attributes;
//	CREATE3resok (and MKDIR, SYMLINK, MKNOD): nfsstat3 status; post_op_fh3
//	obj; post_op_attr obj_attributes; wcc_data dir_wcc;
func (s *Server) finishAttrs(reply []byte, f *attrFix) []byte {
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	if err != nil || rh.Stat != xdr.MsgAccepted || rh.AcceptStat != xdr.AcceptSuccess {
		return reply
	}
	r := xdr.NewReader(reply[off:])
	status, err := r.Uint32()
	if err != nil {
		return reply
	}
	if f.proc == ProcLookup {
		if status == nfs3OK || r.Len() != 4 {
			return reply
		}
		if follows, err := r.Bool(); err != nil || follows {
			return reply
		}
		attr := s.dirAttr(f)
		if attr == nil {
			return reply
		}
		var b bytes.Buffer
		b.Write(reply[:off+4])
		_ = gonfs.WritePostOpAttrs(&b, attr)
		return b.Bytes()
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
