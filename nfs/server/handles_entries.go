package server

import (
	"strings"

	"golang.org/x/sys/unix"
)

// entry fills st with the attributes of the entry base of the directory
// dir (not following a symbolic link), returns its handle, the same bytes
// handle gives, and records its name in the handle index: for
// READDIRPLUS (RFC 1813 §3.3.17), an openat, an fstat and a
// name_to_handle_at relative to the directory's descriptor, where handle
// would resolve the directory from the root again for every entry.
func (h *DirHandler) entry(dir *object, base string, st *unix.Stat_t) ([]byte, error) {
	if base == "" || base == "." || base == ".." || strings.Contains(base, "/") {
		return nil, unix.EINVAL
	}
	fd, err := unix.Openat(dir.fd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	id, err := fdIdentity(fd, st)
	if err != nil {
		return nil, err
	}
	h.dir.idx.add(id.ino, dir.child(base), st.Mode&unix.S_IFMT == unix.S_IFDIR)
	return encodeHandle(h.export, id, dir.st.Ino), nil
}
