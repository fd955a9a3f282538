package nfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	gonfs "github.com/willscott/go-nfs"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// writeLocal executes an NFSv3 WRITE (RFC 1813 §3.3.7) to a file of a Dir
// in the dispatch layer: one open, an fstat before and after for the
// file's wcc_data, the write at the offset, and for DATA_SYNC and
// FILE_SYNC an fsync of the same descriptor before the reply says
// FILE_SYNC, with the server's write verifier (finishWrite's rules).
// go-nfs's WRITE resolves and stats the file three times and copies the
// data through its reflective decoder, and finishWrite opens the file once
// more to sync it. ok is false when the call is not for this path (another
// file system, arguments that do not decode): it then goes to go-nfs.
//
//	WRITE3args: nfs_fh3 file; offset3 offset; count3 count;
//	            stable_how stable; opaque data<>;
//	WRITE3resok: wcc_data file_wcc; count3 count; stable_how committed;
//	             writeverf3 verf;
//	WRITE3resfail: wcc_data file_wcc;
func (s *Server) writeLocal(xid uint32, args []byte) (reply []byte, ok bool) {
	r := xdr.NewReader(args)
	fh, offset, count, err := decodeFileRange(&r)
	if err != nil {
		return nil, false
	}
	stable, err := r.Uint32()
	if err != nil || stable > fileSync {
		return nil, false
	}
	data, err := r.Opaque(s.maxMsg)
	if err != nil {
		return nil, false
	}
	fsys, p, err := s.handler.FromHandle(fh)
	if err != nil {
		return nil, false // go-nfs answers NFS3ERR_STALE the same
	}
	d, isDir := fsys.(*Dir)
	if !isDir {
		return nil, false
	}
	b := successReply(xid, nil)
	fail := func(status uint32, pre, post *gonfs.FileAttribute) ([]byte, bool) {
		b = xdr.AppendUint32(b, status)
		return appendWcc(b, pre, post), true
	}
	name := d.Join(p...)
	if d.readOnly {
		return fail(nfs3ErrROFS, nil, statAttr(d, name))
	}
	if count < uint32(len(data)) {
		data = data[:count]
	}
	// O_NONBLOCK: opening a FIFO must not wait for a reader.
	f, err := d.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail(nfs3ErrStale, nil, nil)
		}
		post := statAttr(d, name)
		if post != nil && post.Type == gonfs.FileTypeDirectory {
			return fail(nfs3ErrInval, post, post)
		}
		return fail(statusOr(err, nfs3ErrAcces), post, post)
	}
	df := f.(*dirFile)
	defer df.Close()
	stat := func() *gonfs.FileAttribute {
		fi, err := df.Stat()
		if err != nil {
			return nil
		}
		return gonfs.ToFileAttribute(fi, name)
	}
	pre := stat()
	if pre == nil || pre.Type != gonfs.FileTypeRegular {
		return fail(nfs3ErrInval, pre, pre)
	}
	n, err := df.WriteAt(data, int64(offset))
	if err != nil {
		return fail(statusOr(err, nfs3ErrIO), pre, stat())
	}
	committed := uint32(unstable)
	if stable != unstable {
		if err := df.Sync(); err != nil {
			s.log.Warn("nfs: WRITE: sync failed", "name", name, "err", err)
			return fail(nfs3ErrIO, pre, stat())
		}
		committed = fileSync
	}
	b = xdr.AppendUint32(b, nfs3OK)
	b = appendWcc(b, pre, stat())
	b = xdr.AppendUint32(b, uint32(n))
	b = xdr.AppendUint32(b, committed)
	return append(b, s.verf[:]...), true
}
