package server

import (
	"golang.org/x/sys/unix"
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
