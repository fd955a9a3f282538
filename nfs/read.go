package nfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/go-git/go-billy/v5"
	gonfs "github.com/willscott/go-nfs"
	"golang.org/x/sys/unix"

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
func (s *Server) read(xid uint32, args []byte) (reply []byte, rb *replyBuf, ok bool) {
	r := xdr.NewReader(args)
	fh, offset, count, err := decodeFileRange(&r)
	if err != nil {
		return nil, nil, false
	}
	fail := func(status uint32, attr *gonfs.FileAttribute) ([]byte, *replyBuf, bool) {
		putReplyBuf(rb, reply)
		b := successReply(xid, nil)
		b = xdr.AppendUint32(b, status)
		return appendPostOpAttr(b, attr), nil, true
	}
	f, info, name, release, status, failAttr := s.openRead(fh)
	if status != nfs3OK {
		return fail(status, failAttr)
	}
	defer release()
	attr := fileAttr(info, name)
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
	reply, rb = getReplyBuf(replyHeaderMax + 4 + postOpAttrMax + 12 + int(n) + 3)
	reply = appendSuccessHeader(reply, xid)
	b := reply
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
	return b, rb, true
}

// openRead opens fh's file for READ and returns it with its attributes,
// its name and what to call when done with it: the open-file cache's
// descriptor for a DirHandler's regular files and directories, or the
// handler's file system's file by name. A failure is the status to answer
// and the attributes to send with it.
func (s *Server) openRead(fh []byte) (f io.ReaderAt, info os.FileInfo, name string, release func(), status uint32, attr *gonfs.FileAttribute) {
	if dh, isDir := s.handler.(*DirHandler); isDir {
		if of, err := dh.openHandle(fh, false); err == nil {
			var st unix.Stat_t
			if err := dh.statOpen(fh, of, &st); err != nil {
				dh.files.put(of)
				return nil, nil, "", nil, statusOr(err, nfs3ErrIO), nil
			}
			return fdFile(of.fd), newFileInfo("", &st), "", func() { dh.files.put(of) }, nfs3OK, nil
		}
	}
	fsys, p, err := s.handler.FromHandle(fh)
	if err != nil {
		return nil, nil, "", nil, nfs3ErrStale, nil
	}
	name = fsys.Join(p...)
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	var bf billy.File
	if _, isDir := fsys.(*Dir); isDir {
		bf, err = fsys.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	} else {
		bf, err = fsys.Open(name)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, "", nil, nfs3ErrStale, nil
		}
		return nil, nil, "", nil, statusOr(err, nfs3ErrAcces), statAttr(fsys, name)
	}
	if st, ok := bf.(interface{ Stat() (os.FileInfo, error) }); ok {
		info, err = st.Stat()
	} else {
		info, err = fsys.Stat(name)
	}
	if err != nil {
		_ = bf.Close()
		return nil, nil, "", nil, statusOr(err, nfs3ErrIO), nil
	}
	return bf, info, name, func() { _ = bf.Close() }, nfs3OK, nil
}

// statusOr is the NFSv3 status of a system call error, or def when it has
// none.
func statusOr(err error, def uint32) uint32 {
	if st := billyStatus(err); st != nfs3ErrIO {
		return st
	}
	return def
}
