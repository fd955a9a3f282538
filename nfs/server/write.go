package server

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"math"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// newWriteVerifier returns a write verifier (RFC 1813 §3.3.7, writeverf3)
// that differs at every server start: the start time in nanoseconds mixed
// with random bits, so that two servers started in the same nanosecond
// still differ.
func newWriteVerifier() [8]byte {
	var v [8]byte
	_, _ = rand.Read(v[:])
	binary.BigEndian.PutUint64(v[:], binary.BigEndian.Uint64(v[:])^uint64(time.Now().UnixNano()))
	return v
}

// write executes an NFSv3 WRITE (RFC 1813 §3.3.7) through the file's
// descriptor in the open-file cache: an fstat before and after for the
// file's wcc_data, and the write at the offset, made durable for
// DATA_SYNC and FILE_SYNC before the reply says FILE_SYNC (writeTo), with
// the server's write verifier. A read-only export answers NFS3ERR_ROFS,
// a file that is not a regular file NFS3ERR_INVAL (a directory too, as
// from knfsd), data past the largest offset NFS3ERR_FBIG, each with the
// file's attributes. ok is false if the arguments do not decode, or if
// count is not the data's length.
//
//	WRITE3args: nfs_fh3 file; offset3 offset; count3 count;
//	            stable_how stable; opaque data<>;
func (s *Server) write(c *call, args []byte) (reply []byte, ok bool) {
	r := xdr.NewReader(args)
	fh, offset, count, err := decodeFileRange(&r)
	if err != nil {
		return nil, false
	}
	stable, err := r.Uint32()
	if err != nil || stable > uint32(nfs3.FileSync) {
		return nil, false
	}
	data, err := r.Opaque(s.maxMsg)
	// RFC 1813 §3.3.7 has count the length of data; knfsd's
	// nfs3svc_decode_writeargs refuses any other count as garbage.
	if err != nil || count != uint32(len(data)) {
		return nil, false
	}
	b := c.successReply()
	res := nfs3.WriteRes{}
	if c.readOnly() {
		var st unix.Stat_t
		if res.Status = statusOf(c.dh.statHandle(fh, &st)); res.Status == nfs3.OK {
			res.Status, res.Wcc.After = nfs3.ErrROFS, nfs3.PostOpAttr{Set: true, Attr: c.dh.fattr(&st)}
		}
		return res.Append(b), true
	}
	of, err := c.dh.openHandle(fh, true)
	if err == nil {
		defer c.dh.files.put(of)
		return s.writeTo(b, openWrite{dh: c.dh, fh: fh, of: of}, data, offset, nfs3.StableHow(stable)), true
	}
	var st unix.Stat_t
	if errors.Is(err, errNotCacheable) {
		// Not a regular file (or one that cannot be opened for
		// writing): its attributes, and nothing written.
		if err = c.dh.statHandle(fh, &st); err == nil {
			res.Wcc = nfs3.WccData{Before: preOpOf(&st), After: nfs3.PostOpAttr{Set: true, Attr: c.dh.fattr(&st)}}
			err = nfs3.ErrInval
			if st.Mode&unix.S_IFMT == unix.S_IFREG {
				err = unix.EACCES
			}
		}
	}
	res.Status = statusOf(err)
	return res.Append(b), true
}

// writeTo writes data at offset to w and appends WRITE3res to b: the
// file's wcc_data from an fstat before and after, and the server's write
// verifier. For DATA_SYNC and FILE_SYNC the data is durable before the
// reply says FILE_SYNC: written with RWF_SYNC (fdFile.WriteAtSync: one
// system call, the range alone synced), else, where the kernel cannot,
// written and then fsynced.
func (s *Server) writeTo(b []byte, w openWrite, data []byte, offset uint64, stable nfs3.StableHow) []byte {
	res := nfs3.WriteRes{}
	var pre unix.Stat_t
	if err := w.stat(&pre); err != nil {
		res.Status = statusOf(err)
		return res.Append(b)
	}
	res.Wcc.Before = preOpOf(&pre)
	if pre.Mode&unix.S_IFMT != unix.S_IFREG {
		res.Status, res.Wcc.After = nfs3.ErrInval, nfs3.PostOpAttr{Set: true, Attr: w.dh.fattr(&pre)}
		return res.Append(b)
	}
	// NFS3ERR_FBIG, as knfsd's nfsd3_proc_write answers an offset past
	// OFFSET_MAX (2^63-1) or data that would end past it: pwrite(2) would
	// take such an offset for a negative one (EINVAL).
	if offset > math.MaxInt64 || offset+uint64(len(data)) > math.MaxInt64 {
		res.Status, res.Wcc.After = nfs3.ErrFBig, nfs3.PostOpAttr{Set: true, Attr: w.dh.fattr(&pre)}
		return res.Append(b)
	}
	f := fdFile(w.of.fd)
	committed, n, err := nfs3.Unstable, 0, errNoSyncWrite
	if stable != nfs3.Unstable {
		committed = nfs3.FileSync
		n, err = f.WriteAtSync(data, int64(offset))
	}
	if err == errNoSyncWrite {
		n, err = f.WriteAt(data, int64(offset))
		if err == nil && stable != nfs3.Unstable {
			if err = unix.Fsync(w.of.fd); err != nil {
				s.log.Warn("nfs: WRITE: sync failed", "handle", w.fh, "err", err)
				err = nfs3.ErrIO
			}
		}
	}
	res.Wcc.After = w.post()
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b)
	}
	res.Count, res.Committed, res.Verf = uint32(n), committed, s.verf
	return res.Append(b)
}

// openWrite is the file of a WRITE or COMMIT: its descriptor in the
// open-file cache.
type openWrite struct {
	dh *DirHandler
	fh []byte
	of *openFile
}

// stat fills st with the file's attributes; ErrStaleHandle if the file
// is gone.
func (w openWrite) stat(st *unix.Stat_t) error { return w.dh.statOpen(w.fh, w.of, st) }

// post returns the file's attributes now (none if they cannot be read).
func (w openWrite) post() nfs3.PostOpAttr {
	var st unix.Stat_t
	if w.stat(&st) != nil {
		return nfs3.PostOpAttr{}
	}
	return nfs3.PostOpAttr{Set: true, Attr: w.dh.fattr(&st)}
}

// commit executes an NFSv3 COMMIT (RFC 1813 §3.3.21): it syncs the whole
// file (the offset and count are a hint knfsd also widens) through its
// descriptor in the open-file cache, and returns the server's write
// verifier, the one its WRITE replies carry. A file that is neither a
// regular file nor a directory is NFS3ERR_INVAL. ok is false if the
// arguments do not decode.
func (s *Server) commit(c *call, args []byte) (reply []byte, ok bool) {
	r := xdr.NewReader(args)
	var a nfs3.CommitArgs
	if a.Decode(&r) != nil {
		return nil, false
	}
	b := c.successReply()
	res := nfs3.CommitRes{}
	of, err := c.dh.openHandle(a.File, false)
	if err != nil {
		var st unix.Stat_t
		if errors.Is(err, errNotCacheable) {
			if err = c.dh.statHandle(a.File, &st); err == nil {
				attr := nfs3.PostOpAttr{Set: true, Attr: c.dh.fattr(&st)}
				res.Wcc = nfs3.WccData{Before: preOpOf(&st), After: attr}
				err = nfs3.ErrInval
				if st.Mode&unix.S_IFMT == unix.S_IFREG {
					err = unix.EACCES
				}
			}
		}
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer c.dh.files.put(of)
	w := openWrite{dh: c.dh, fh: a.File, of: of}
	var pre unix.Stat_t
	if err := w.stat(&pre); err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	res.Wcc.Before = preOpOf(&pre)
	if err := unix.Fsync(of.fd); err != nil {
		s.log.Warn("nfs: COMMIT: sync failed", "handle", a.File, "err", err)
		res.Status = statusOf(err)
	}
	res.Wcc.After = w.post()
	res.Verf = s.verf
	return res.Append(b), true
}
