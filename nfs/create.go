package nfs

import (
	gonfs "github.com/willscott/go-nfs"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// cacheCreated gives fd, a read-write descriptor of the file CREATE made,
// to the open-file cache as fh's if fh is its file (not one that took the
// name since: the descriptor pins its inode, so the inode numbers tell)
// and a regular file, and reports whether it did.
func cacheCreated(dh *DirHandler, fh []byte, fd int) bool {
	_, id, _, err := decodeHandle(fh)
	var st unix.Stat_t
	if err != nil || unix.Fstat(fd, &st) != nil || st.Ino != id.ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	dh.files.put(dh.files.add(fh, &openFile{fd: fd, rw: true}))
	return true
}

// appendWcc appends a wcc_data (RFC 1813 §2.6): pre's wcc_attr (size,
// mtime, ctime) and post's attributes, each left out when nil.
func appendWcc(b []byte, pre, post *gonfs.FileAttribute) []byte {
	if pre == nil {
		b = xdr.AppendBool(b, false)
	} else {
		b = xdr.AppendBool(b, true)
		b = xdr.AppendUint64(b, pre.Filesize)
		b = xdr.AppendUint32(b, pre.Mtime.Seconds)
		b = xdr.AppendUint32(b, pre.Mtime.Nseconds)
		b = xdr.AppendUint32(b, pre.Ctime.Seconds)
		b = xdr.AppendUint32(b, pre.Ctime.Nseconds)
	}
	return appendPostOpAttr(b, post)
}
