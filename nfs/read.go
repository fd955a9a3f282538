package nfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/go-git/go-billy/v5"
	gonfs "github.com/willscott/go-nfs"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// read executes an NFSv3 READ (RFC 1813 §3.3.6) and returns the whole
// reply, the data read straight into it: go-nfs v0.0.4 reads into a
// buffer of its own, copies it through its reflective XDR encoder into a
// growing bytes.Buffer and then through the session's pipe, three copies
// and two goroutine hand-offs for each 1 MiB. ok is false if the
// arguments do not decode. The count is capped so that the reply fits a
// message (FSINFO's rtmax says as much).
//
//	READ3args: nfs_fh3 file; offset3 offset; count3 count;
//	READ3resok: post_op_attr file_attributes; count3 count; bool eof;
//	            opaque data<>;
//	READ3resfail: post_op_attr file_attributes;
func (s *Server) read(xid uint32, args []byte) (reply []byte, ok bool) {
	r := xdr.NewReader(args)
	fh, offset, count, err := decodeFileRange(&r)
	if err != nil {
		return nil, false
	}
	fail := func(status uint32, attr *gonfs.FileAttribute) ([]byte, bool) {
		b := successReply(xid, nil)
		b = xdr.AppendUint32(b, status)
		return appendPostOpAttr(b, attr), true
	}
	fsys, p, err := s.handler.FromHandle(fh)
	if err != nil {
		return fail(nfs3ErrStale, nil)
	}
	name := fsys.Join(p...)
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	var f billy.File
	if _, isDir := fsys.(*Dir); isDir {
		f, err = fsys.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	} else {
		f, err = fsys.Open(name)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail(nfs3ErrStale, nil)
		}
		return fail(statusOr(err, nfs3ErrAcces), statAttr(fsys, name))
	}
	defer f.Close()
	var info os.FileInfo
	if st, ok := f.(interface{ Stat() (os.FileInfo, error) }); ok {
		info, err = st.Stat()
	} else {
		info, err = fsys.Stat(name)
	}
	if err != nil {
		return fail(statusOr(err, nfs3ErrIO), nil)
	}
	attr := gonfs.ToFileAttribute(info, name)
	if info.IsDir() {
		return fail(nfs3ErrIsDir, attr)
	}
	size := info.Size()
	if limit := uint32(s.maxMsg - replyHeaderMax - statusSize - postOpAttrMax - 16); count > limit {
		count = limit &^ 4095
	}
	n := uint32(0)
	if int64(offset) < size && offset <= uint64(size) {
		n = count
		if rest := uint64(size) - offset; rest < uint64(n) {
			n = uint32(rest)
		}
	}
	b := successReply(xid, nil)
	b = append(make([]byte, 0, len(b)+4+postOpAttrMax+12+int(n)+3), b...)
	b = xdr.AppendUint32(b, nfs3OK)
	b = appendPostOpAttr(b, attr)
	hdr := len(b)
	b = b[:hdr+12+int(n)]
	got, err := f.ReadAt(b[hdr+12:], int64(offset))
	if err != nil && !errors.Is(err, io.EOF) {
		return fail(statusOr(err, nfs3ErrIO), attr)
	}
	eof := errors.Is(err, io.EOF) || offset+uint64(got) >= uint64(size)
	b = b[:hdr]
	b = xdr.AppendUint32(b, uint32(got))
	b = xdr.AppendBool(b, eof)
	b = xdr.AppendUint32(b, uint32(got))
	b = b[:len(b)+got]
	if pad := padded4(got) - got; pad > 0 {
		b = append(b, make([]byte, pad)...)
	}
	return b, true
}

// statusOr is the NFSv3 status of a system call error, or def when it has
// none.
func statusOr(err error, def uint32) uint32 {
	if st := statusOf(err); st != nfs3ErrIO {
		return st
	}
	return def
}
