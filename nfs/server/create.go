package server

import (
	"golang.org/x/sys/unix"
)

// createdObject makes fd, the read-write descriptor of the regular file
// CREATE made as the entry name of dir, an object with its handle (made
// in dir, its name recorded in the handle index) and its attributes now;
// fd stays open, the caller's. The descriptor is the file, whatever took
// its name since. ok is false if its identity cannot be read.
func (h *DirHandler) createdObject(dir *object, name string, fd int) (o *object, ok bool) {
	o = &object{dh: h, fd: -1, name: dir.child(name)}
	id, err := fdIdentity(fd, &o.st)
	if err != nil || o.st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false
	}
	o.fh = encodeHandle(h.export, id, dir.st.Ino)
	h.dir.idx.add(id.ino, o.name, false)
	return o, true
}
