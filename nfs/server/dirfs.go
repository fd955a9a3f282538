package server

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is a directory of the operating system opened for export. The
// Server reaches every file below it by a name relative to the root, and
// the kernel keeps every such name inside the root: each is resolved with
// openat2(2) relative to a descriptor of the root, with RESOLVE_IN_ROOT
// (".." and absolute symbolic links stop at the root, as in a chroot),
// RESOLVE_NO_MAGICLINKS (no /proc/self/fd tricks) and RESOLVE_NO_XDEV (the
// export is one file system: a mount point below the root is refused, as
// knfsd refuses it without crossmnt). Names are slash-separated and
// relative to the root; a leading slash and ".." are cleaned lexically
// first. Dir needs Linux 5.6 or later (openat2), and /proc. It is safe for
// concurrent use.
type Dir struct {
	fd   int    // descriptor of the root (O_RDONLY: open_by_handle_at refuses O_PATH)
	root string // absolute path of the root, for Root
	real string // the root as /proc/self/fd names it, for open_by_handle_at
	idx  *handleIndex
	// readOnly refuses every change (SetReadOnly).
	readOnly bool
}

// resolveFlags confine every lookup of Dir to its root and its file system.
const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// DirFS opens the directory root for export. The caller closes the Dir
// when done with it.
func DirFS(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("nfs: dir %q: %w", root, err)
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("nfs: dir %q: %w", root, &os.PathError{Op: "open", Path: abs, Err: err})
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		real = abs
	}
	d := &Dir{fd: fd, root: abs, real: real, idx: newHandleIndex()}
	// Probe openat2 once, so that an old kernel fails here and not on
	// the first request.
	probe, err := d.openat(".", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("nfs: dir %q: openat2 (Linux 5.6 or later): %w", root, err)
	}
	_ = unix.Close(probe)
	return d, nil
}

// SetReadOnly exports d read-only (exports(5)'s "ro"): the Server answers
// every call that would change it NFS3ERR_ROFS, and ACCESS grants no
// MODIFY, EXTEND or DELETE. Call it before serving d.
func (d *Dir) SetReadOnly() { d.readOnly = true }

// Close releases the descriptor of the root. The Dir is unusable after.
func (d *Dir) Close() error {
	if err := unix.Close(d.fd); err != nil {
		return fmt.Errorf("nfs: close dir %q: %w", d.root, err)
	}
	return nil
}

// rel cleans a name as if rooted and returns it relative to the root,
// "." for the root itself.
func rel(name string) string {
	r := strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(name)), "/")
	if r == "" {
		return "."
	}
	return r
}

// openat opens name below the root with openat2, retrying the EAGAIN that
// RESOLVE_IN_ROOT returns when a concurrent rename raced the lookup. A
// name longer than one openat2 resolves (PATH_MAX) is walked in pieces,
// each resolved with the same flags relative to the directory before it,
// so that a file deeper than PATH_MAX below the root is reached like any
// other, and stays confined: every piece stays below the directory it
// starts from, itself below the root.
func (d *Dir) openat(name string, flags int, mode uint32) (int, error) {
	r := rel(name)
	dirfd := d.fd
	for len(r) > maxResolve {
		i := strings.LastIndexByte(r[:maxResolve+1], '/')
		if i <= 0 {
			closeOwned(d, dirfd)
			return -1, unix.ENAMETOOLONG // a component longer than PATH_MAX
		}
		fd, err := openat2(dirfd, r[:i], unix.O_PATH|unix.O_DIRECTORY, 0)
		closeOwned(d, dirfd)
		if err != nil {
			return -1, err
		}
		dirfd, r = fd, r[i+1:]
	}
	fd, err := openat2(dirfd, r, flags, mode)
	closeOwned(d, dirfd)
	return fd, err
}

// maxResolve is the longest name one openat2 resolves: PATH_MAX less its
// terminating NUL.
const maxResolve = unix.PathMax - 1

// closeOwned closes dirfd unless it is d's root.
func closeOwned(d *Dir, dirfd int) {
	if dirfd != d.fd {
		_ = unix.Close(dirfd)
	}
}

// openat2 opens name relative to dirfd with Dir's resolve flags.
func openat2(dirfd int, name string, flags int, mode uint32) (int, error) {
	if flags&(unix.O_CREAT|unix.O_TMPFILE) == 0 {
		mode = 0 // openat2 refuses a mode it would not use
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: resolveFlags}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, name, &how)
		if (err == unix.EAGAIN || err == unix.EINTR) && i < 64 {
			continue
		}
		if err != nil {
			return -1, err
		}
		return fd, nil
	}
}

// parent opens the directory holding name and returns it with the last
// component; the root's last component is ".". The caller closes dirfd.
func (d *Dir) parent(name string) (dirfd int, base string, err error) {
	r := rel(name)
	dir, base := path.Dir(r), path.Base(r)
	if r == "." {
		dir, base = ".", "."
	}
	dirfd, err = d.openat(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", err
	}
	return dirfd, base, nil
}

// pathErr wraps a system call error the way package os does, so that
// os.IsNotExist and errors.Is(err, fs.ErrNotExist) work on it.
func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: name, Err: err}
}

// Root returns the absolute path of the root.
func (d *Dir) Root() string { return d.root }
