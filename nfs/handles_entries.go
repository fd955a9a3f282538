package nfs

import (
	"os"
	"path"
	"strings"

	gonfs "github.com/willscott/go-nfs"
	"golang.org/x/sys/unix"
)

// dirEntries reads the attributes and handles of one directory's entries
// through one descriptor of the directory, for READDIRPLUS (RFC 1813
// §3.3.17): per entry an openat, an fstat and a name_to_handle_at, where
// Dir.Lstat and DirHandler.ToHandle would each resolve the directory from
// the root again (eleven system calls an entry instead of five).
type dirEntries struct {
	h   *DirHandler
	fd  int         // O_PATH descriptor of the directory
	st  unix.Stat_t // its attributes when opened
	dir string      // its name below the root, "." for the root
}

// openEntries opens the directory dir below the root for entry.
func (h *DirHandler) openEntries(dir string) (*dirEntries, error) {
	name := rel(dir)
	fd, err := h.dir.openat(name, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, pathErr("readdir", name, err)
	}
	return &dirEntries{h: h, fd: fd, st: st, dir: name}, nil
}

func (e *dirEntries) close() { _ = unix.Close(e.fd) }

// entry returns the attributes of the entry base (not following a
// symbolic link) and its handle, the same bytes ToHandle gives, and
// records its name in the handler's index.
func (e *dirEntries) entry(base string) (os.FileInfo, []byte, error) {
	name := path.Join(e.dir, base)
	if base == "" || base == "." || base == ".." || strings.Contains(base, "/") {
		return nil, nil, pathErr("lstat", name, unix.EINVAL)
	}
	fd, err := unix.Openat(e.fd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, pathErr("lstat", name, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	id, err := fdIdentity(fd, &st)
	if err != nil {
		return nil, nil, pathErr("lstat", name, err)
	}
	e.h.dir.idx.add(id.ino, name, st.Mode&unix.S_IFMT == unix.S_IFDIR)
	return newFileInfo(base, &st), encodeHandle(e.h.export, id, e.st.Ino), nil
}

// attr returns the directory's own attributes, as of openEntries.
func (e *dirEntries) attr() *gonfs.FileAttribute {
	return statFileAttr(&e.st)
}
