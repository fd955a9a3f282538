package nfs

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"

	gonfs "github.com/willscott/go-nfs"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// writeLocal executes an NFSv3 WRITE (RFC 1813 §3.3.7) to a file of a Dir
// in the dispatch layer: the file's descriptor from the DirHandler's
// open-file cache (or one open by name, for a file the cache does not
// take), an fstat before and after for the file's wcc_data, and the write
// at the offset, made durable for DATA_SYNC and FILE_SYNC before the reply
// says FILE_SYNC (writeTo), with the server's write verifier (finishWrite's
// rules).
// go-nfs's WRITE resolves and stats the file three times and copies the
// data through its reflective decoder, and finishWrite opens the file once
// more to sync it. ok is false when the call is not for this path (another
// file system, arguments that do not decode): it then goes to go-nfs. A
// count other than the data's length is answered GARBAGE_ARGS here.
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
	// RFC 1813 §3.3.7 has count the length of data; knfsd's
	// nfs3svc_decode_writeargs refuses any other count as garbage. (It
	// was written short, and answered NFS3_OK with the count written.)
	if count != uint32(len(data)) {
		return acceptedReply(xid, xdr.AcceptGarbageArgs, xdr.Mismatch{}), true
	}
	b := successReply(xid, nil)
	if dh, isDir := s.handler.(*DirHandler); isDir && !dh.dir.readOnly {
		if of, err := dh.openHandle(fh, true); err == nil {
			defer dh.files.put(of)
			return s.writeTo(b, cachedWrite{dh: dh, fh: fh, of: of}, "", data, offset, stable), true
		}
	}
	fsys, p, err := s.handler.FromHandle(fh)
	if err != nil {
		return nil, false // go-nfs answers NFS3ERR_STALE the same
	}
	d, isDir := fsys.(*Dir)
	if !isDir {
		return nil, false
	}
	name := d.Join(p...)
	if d.readOnly {
		b = xdr.AppendUint32(b, nfs3ErrROFS)
		return appendWcc(b, nil, statAttr(d, name)), true
	}
	// O_NONBLOCK: opening a FIFO must not wait for a reader.
	f, err := d.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		status := statusOr(err, nfs3ErrAcces)
		post := statAttr(d, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			status, post = nfs3ErrStale, nil
		case post != nil && post.Type == gonfs.FileTypeDirectory:
			status = nfs3ErrInval
		}
		b = xdr.AppendUint32(b, status)
		return appendWcc(b, post, post), true
	}
	df := f.(*dirFile)
	defer df.Close()
	return s.writeTo(b, namedWrite{df}, name, data, offset, stable), true
}

// writeTo writes data at offset to w and appends WRITE3res to b: the
// file's wcc_data from an fstat before and after, and the server's write
// verifier. For DATA_SYNC and FILE_SYNC the data is durable before the
// reply says FILE_SYNC: written with RWF_SYNC where w can
// (syncWriterAt: one system call, the range alone synced), else written
// and then fsynced.
func (s *Server) writeTo(b []byte, w writeTarget, name string, data []byte, offset uint64, stable uint32) []byte {
	fail := func(status uint32, pre, post *gonfs.FileAttribute) []byte {
		b = xdr.AppendUint32(b, status)
		return appendWcc(b, pre, post)
	}
	post := func() *gonfs.FileAttribute {
		a, _ := w.attr()
		return a
	}
	pre, err := w.attr()
	if errors.Is(err, ErrStaleHandle) {
		return fail(nfs3ErrStale, nil, nil)
	}
	if pre == nil || pre.Type != gonfs.FileTypeRegular {
		return fail(nfs3ErrInval, pre, pre)
	}
	// RFC 1813 §3.3.7 NFS3ERR_FBIG, as knfsd's nfsd3_proc_write answers an
	// offset past OFFSET_MAX (2^63-1) or data that would end past it:
	// pwrite(2) would take such an offset for a negative one (EINVAL).
	if offset > math.MaxInt64 || offset+uint64(len(data)) > math.MaxInt64 {
		return fail(uint32(nfs3.ErrFBig), pre, pre)
	}
	committed, n, err := uint32(unstable), 0, errNoSyncWrite
	if stable != unstable {
		committed = fileSync
		if sw, ok := w.(syncWriterAt); ok {
			n, err = sw.WriteAtSync(data, int64(offset))
		}
	}
	if err == errNoSyncWrite {
		n, err = w.WriteAt(data, int64(offset))
		if err == nil && stable != unstable {
			if err := w.Sync(); err != nil {
				s.log.Warn("nfs: WRITE: sync failed", "name", name, "err", err)
				return fail(nfs3ErrIO, pre, post())
			}
		}
	}
	if err != nil {
		// statusOf, not statusOr: EFBIG (an offset past the file system's
		// largest file) is NFS3ERR_FBIG, not NFS3ERR_IO.
		return fail(uint32(statusOf(err)), pre, post())
	}
	b = xdr.AppendUint32(b, nfs3OK)
	b = appendWcc(b, pre, post())
	b = xdr.AppendUint32(b, uint32(n))
	b = xdr.AppendUint32(b, committed)
	return append(b, s.verf[:]...)
}

// writeTarget is the file a WRITE writes: its attributes, the write and
// the sync.
type writeTarget interface {
	io.WriterAt
	Sync() error
	// attr returns the file's attributes; ErrStaleHandle if the file is
	// gone.
	attr() (*gonfs.FileAttribute, error)
}

// syncWriterAt is a writeTarget that can write and make durable in one
// step (fdFile.WriteAtSync): a stable WRITE then needs no Sync.
type syncWriterAt interface {
	WriteAtSync(b []byte, off int64) (int, error)
}

// cachedWrite is a WRITE's file from the open-file cache.
type cachedWrite struct {
	dh *DirHandler
	fh []byte
	of *openFile
}

func (c cachedWrite) WriteAt(b []byte, off int64) (int, error) {
	return fdFile(c.of.fd).WriteAt(b, off)
}
func (c cachedWrite) Sync() error { return unix.Fsync(c.of.fd) }

func (c cachedWrite) WriteAtSync(b []byte, off int64) (int, error) {
	return fdFile(c.of.fd).WriteAtSync(b, off)
}

func (c cachedWrite) attr() (*gonfs.FileAttribute, error) { return c.dh.openAttr(c.fh, c.of) }

// namedWrite is a WRITE's file opened by name.
type namedWrite struct{ *dirFile }

func (n namedWrite) attr() (*gonfs.FileAttribute, error) {
	fi, err := n.Stat()
	if err != nil {
		return nil, err
	}
	return fileAttr(fi, n.name), nil
}

// writeRefused answers a WRITE to a DirHandler's export that writeLocal
// did not take: GARBAGE_ARGS if its arguments do not decode, else the
// status of its handle (stale, malformed) with an empty wcc_data.
func (s *Server) writeRefused(xid uint32, args []byte) []byte {
	r := xdr.NewReader(args)
	var a nfs3.WriteArgs
	if a.Decode(&r) != nil {
		return acceptedReply(xid, xdr.AcceptGarbageArgs, xdr.Mismatch{})
	}
	res := nfs3.WriteRes{Status: nfs3.ErrStale}
	if _, err := s.dh.resolve(a.File); err != nil {
		res.Status = statusOf(err)
	}
	return res.Append(successReply(xid, nil))
}
