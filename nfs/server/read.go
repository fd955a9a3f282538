package server

import (
	"errors"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// read executes an NFSv3 READ (RFC 1813 §3.3.6) and returns the whole
// reply, the data read straight into it, in a pooled buffer (rb, nil if
// the reply is not pooled) that sendPooled gives back once the reply is
// sent: over RDMA the data then goes to the client's Write chunk from
// where it was read. The file is read through its descriptor in the
// open-file cache; a directory is NFS3ERR_ISDIR, any other file that is
// not a regular file NFS3ERR_INVAL, as from knfsd. The count is capped so
// that the reply fits a message (FSINFO's rtmax says as much). ok is false
// if the arguments do not decode.
func (s *Server) read(c *call, args []byte) (reply []byte, rb *replyBuf, ok bool) {
	xid := c.xid
	r := xdr.NewReader(args)
	var a nfs3.ReadArgs
	if a.Decode(&r) != nil {
		return nil, nil, false
	}
	res := nfs3.ReadRes{}
	fail := func(err error) ([]byte, *replyBuf, bool) {
		putReplyBuf(rb, reply)
		res.Status = statusOf(err)
		return res.Append(c.successReply()), nil, true
	}
	var st unix.Stat_t
	of, err := c.dh.openHandle(a.File, false)
	if err != nil {
		if errors.Is(err, errNotCacheable) {
			// Not a regular file or a directory (or one that cannot be
			// opened): its attributes, and no data.
			if err = c.dh.statHandle(a.File, &st); err == nil {
				res.FileAttr = nfs3.PostOpAttr{Set: true, Attr: c.dh.fattr(&st)}
				err = nfs3.ErrInval
				if st.Mode&unix.S_IFMT == unix.S_IFREG {
					err = unix.EACCES
				}
			}
		}
		return fail(err)
	}
	defer c.dh.files.put(of)
	if err := c.dh.statOpen(a.File, of, &st); err != nil {
		return fail(err)
	}
	res.FileAttr = nfs3.PostOpAttr{Set: true, Attr: c.dh.fattr(&st)}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return fail(nfs3.ErrIsDir)
	}
	count := a.Count
	if limit := uint32(s.maxMsg - nfs.ReplyHeaderMax - nfs.StatusSize - nfs.PostOpAttrMax - 16); count > limit {
		count = limit &^ 4095
	}
	size, offset := st.Size, a.Offset
	n := uint32(0)
	if int64(offset) < size && offset <= uint64(size) {
		n = count
		if rest := uint64(size) - offset; rest < uint64(n) {
			n = uint32(rest)
		}
	}
	reply, rb = getReplyBuf(nfs.ReplyHeaderMax + 4 + nfs.PostOpAttrMax + 12 + int(n) + 3)
	reply = appendSuccessHeader(reply, xid)
	// The head with the largest data first, for its length; the data is
	// read in place behind it, and the head appended again with what was
	// read.
	hdr := len(reply)
	res.Count, res.Data = n, reply[:0] // Data's length only is encoded
	b := res.AppendHead(reply)
	data := b[len(b) : len(b)+int(n)]
	var got int
	if c.nowait && !c.dh.inMemory {
		got, err = preadNoWait(of.fd, data, int64(offset), size)
		if err == errWouldBlock {
			putReplyBuf(rb, reply)
			c.wouldBlock = true
			return nil, nil, true
		}
	} else {
		got, err = fdFile(of.fd).ReadAt(data, int64(offset))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	res.Count, res.EOF, res.Data = uint32(got), errors.Is(err, io.EOF) || offset+uint64(got) >= uint64(size), data[:got]
	b = res.AppendHead(b[:hdr])
	b = b[:len(b)+got]
	return append(b, make([]byte, xdr.Padding(got))...), rb, true
}

// errWouldBlock: a call executed on the polling goroutine would wait on
// the disk (call.nowait); it answered nothing and is to be executed again
// elsewhere (inlineCalls).
var errWouldBlock = errors.New("nfs: call would wait on the disk")

// preadNoWait reads len(b) bytes at off of the file fd (size bytes long)
// only if the page cache holds them: preadv2(2) with RWF_NOWAIT. A file
// system that cannot tell (EOPNOTSUPP), data not cached (EAGAIN), or a
// short read before the file's end give errWouldBlock; reaching the end
// gives io.EOF, as fdFile.ReadAt.
func preadNoWait(fd int, b []byte, off, size int64) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	for {
		n, _, e := unix.Syscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1,
			uintptr(off), 0, unix.RWF_NOWAIT)
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN || e == unix.EOPNOTSUPP:
			return 0, errWouldBlock
		case e != 0:
			return 0, &os.PathError{Op: "read", Path: "", Err: e}
		case int(n) == len(b):
			return int(n), nil
		case off+int64(n) >= size:
			return int(n), io.EOF
		}
		return 0, errWouldBlock
	}
}
