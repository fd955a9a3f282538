package nfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-billy/v5"
	"golang.org/x/sys/unix"
)

// Dir is a billy.Filesystem over a directory of the operating system, fit
// for export: it has billy.Change (modes, owners, times), symbolic links,
// hard links (Link) and durable writes (Sync), and it keeps every name
// inside its root.
//
// Confinement is the kernel's: every name is resolved with openat2(2)
// relative to a descriptor of the root, with RESOLVE_IN_ROOT (".." and
// absolute symbolic links stop at the root, as in a chroot),
// RESOLVE_NO_MAGICLINKS (no /proc/self/fd tricks) and RESOLVE_NO_XDEV (the
// export is one file system: a mount point below the root is refused, as
// knfsd refuses it without crossmnt). The last component of Lstat, Lchown,
// Readlink, Remove, Rename, Link and Symlink is never followed. Dir needs
// Linux 5.6 or later (openat2), and /proc for Chmod, Chown and Chtimes.
//
// Names are slash-separated and relative to the root; a leading slash and
// ".." are cleaned lexically first. Dir is safe for concurrent use.
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

var (
	_ billy.Filesystem = (*Dir)(nil)
	_ billy.Change     = (*Dir)(nil)
	_ billy.Capable    = (*Dir)(nil)
)

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

// SetReadOnly makes d refuse every change with EROFS, and report no write
// capability, so that go-nfs answers NFS3ERR_ROFS (an export's "ro"). Call
// it before serving d.
func (d *Dir) SetReadOnly() { d.readOnly = true }

// writable returns the error of a change of name on a read-only Dir.
func (d *Dir) writable(op, name string) error {
	if d.readOnly {
		return &os.PathError{Op: op, Path: name, Err: unix.EROFS}
	}
	return nil
}

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

// withParent runs f on the directory holding name and its last component.
func (d *Dir) withParent(op, name string, f func(dirfd int, base string) error) error {
	dirfd, base, err := d.parent(name)
	if err != nil {
		return pathErr(op, name, err)
	}
	defer unix.Close(dirfd)
	return pathErr(op, name, f(dirfd, base))
}

// withPath runs f on a /proc/self/fd name of name, its last component
// followed inside the root: the way to chmod, chown or utimes a file
// through an O_PATH descriptor.
func (d *Dir) withPath(op, name string, f func(procPath string) error) error {
	fd, err := d.openat(name, unix.O_PATH, 0)
	if err != nil {
		return pathErr(op, name, err)
	}
	defer unix.Close(fd)
	return pathErr(op, name, f("/proc/self/fd/"+strconv.Itoa(fd)))
}

// Create creates or truncates name, opened for reading and writing.
func (d *Dir) Create(name string) (billy.File, error) {
	return d.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open opens name for reading.
func (d *Dir) Open(name string) (billy.File, error) { return d.OpenFile(name, os.O_RDONLY, 0) }

// OpenFile opens name with the flags of os.OpenFile; with O_CREATE it
// creates the missing parent directories first, as go-billy's osfs does.
// A symbolic link as last component is followed inside the root.
func (d *Dir) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		if err := d.writable("open", name); err != nil {
			return nil, err
		}
	}
	if flag&os.O_CREATE != 0 {
		if dir := path.Dir(rel(name)); dir != "." {
			if err := d.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
		}
	}
	fd, err := d.openat(name, flag, unixMode(perm))
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	return &dirFile{File: os.NewFile(uintptr(fd), filepath.Join(d.root, rel(name))), name: name}, nil
}

// Stat returns the attributes of name, a last symbolic link followed
// inside the root.
func (d *Dir) Stat(name string) (os.FileInfo, error) {
	fd, err := d.openat(name, unix.O_PATH, 0)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, pathErr("stat", name, err)
	}
	return newFileInfo(path.Base(rel(name)), &st), nil
}

// Lstat returns the attributes of name itself, a symbolic link not
// followed.
func (d *Dir) Lstat(name string) (os.FileInfo, error) {
	var st unix.Stat_t
	err := d.withParent("lstat", name, func(dirfd int, base string) error {
		return unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return nil, err
	}
	return newFileInfo(path.Base(rel(name)), &st), nil
}

// Rename renames from to to, replacing to as rename(2) does; neither last
// component is followed.
func (d *Dir) Rename(from, to string) error {
	if d.readOnly {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: unix.EROFS}
	}
	fdir, fbase, err := d.parent(from)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	defer unix.Close(fdir)
	tdir, tbase, err := d.parent(to)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	defer unix.Close(tdir)
	if err := unix.Renameat(fdir, fbase, tdir, tbase); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	d.idx.renamed(rel(from), rel(to))
	return nil
}

// Remove removes the file, symbolic link or empty directory name.
func (d *Dir) Remove(name string) error {
	if err := d.writable("remove", name); err != nil {
		return err
	}
	var st unix.Stat_t
	err := d.withParent("remove", name, func(dirfd int, base string) error {
		if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		err := unix.Unlinkat(dirfd, base, 0)
		if err == unix.EISDIR {
			err = unix.Unlinkat(dirfd, base, unix.AT_REMOVEDIR)
		}
		return err
	})
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Nlink <= 1 {
		d.idx.markGone(st.Ino) // its last name: its handles are stale
	} else {
		d.idx.removed(rel(name))
	}
	return nil
}

// Link makes newname a hard link to oldname; a symbolic link oldname is
// linked itself, not followed.
func (d *Dir) Link(oldname, newname string) error {
	if d.readOnly {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: unix.EROFS}
	}
	odir, obase, err := d.parent(oldname)
	if err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	defer unix.Close(odir)
	ndir, nbase, err := d.parent(newname)
	if err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	defer unix.Close(ndir)
	if err := unix.Linkat(odir, obase, ndir, nbase, 0); err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	return nil
}

// Sync flushes the data and metadata of the file or directory name to
// stable storage (fsync(2)), for WRITE with FILE_SYNC and for COMMIT.
func (d *Dir) Sync(name string) error {
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err == unix.EACCES {
		fd, err = d.openat(name, unix.O_WRONLY|unix.O_NONBLOCK, 0)
	}
	if err != nil {
		return pathErr("sync", name, err)
	}
	defer unix.Close(fd)
	return pathErr("sync", name, unix.Fsync(fd))
}

// Join joins names with slashes.
func (d *Dir) Join(elem ...string) string { return path.Join(elem...) }

// Root returns the absolute path of the root.
func (d *Dir) Root() string { return d.root }

// Symlink creates the symbolic link link holding target verbatim: the
// client resolves it, and Dir follows it only inside the root.
func (d *Dir) Symlink(target, link string) error {
	if err := d.writable("symlink", link); err != nil {
		return err
	}
	return d.withParent("symlink", link, func(dirfd int, base string) error {
		return unix.Symlinkat(target, dirfd, base)
	})
}

// Readlink returns the target of the symbolic link link.
func (d *Dir) Readlink(link string) (string, error) {
	var target string
	err := d.withParent("readlink", link, func(dirfd int, base string) error {
		for size := 256; ; size *= 2 {
			buf := make([]byte, size)
			n, err := unix.Readlinkat(dirfd, base, buf)
			if err != nil {
				return err
			}
			if n < size {
				target = string(buf[:n])
				return nil
			}
		}
	})
	return target, err
}

// MkdirAll creates the directory name and any missing parents with mode
// perm; existing directories are left as they are.
func (d *Dir) MkdirAll(name string, perm os.FileMode) error {
	if err := d.writable("mkdir", name); err != nil {
		return err
	}
	r := rel(name)
	if r == "." {
		return nil
	}
	parts := strings.Split(r, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		err := d.withParent("mkdir", sub, func(dirfd int, base string) error {
			return unix.Mkdirat(dirfd, base, unixMode(perm))
		})
		if err != nil && errors.Is(err, fs.ErrExist) {
			if fi, serr := d.Stat(sub); serr == nil && fi.IsDir() {
				continue
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tempSeq makes TempFile's names differ within a process.
var tempSeq atomic.Uint64

// TempFile creates a new file in dir with a name beginning with prefix,
// opened for reading and writing; its Name is relative to the root.
func (d *Dir) TempFile(dir, prefix string) (billy.File, error) {
	if err := d.writable("tempfile", dir); err != nil {
		return nil, err
	}
	seed := uint64(time.Now().UnixNano())
	for i := 0; i < 10000; i++ {
		n := (seed + tempSeq.Add(1)*0x9e3779b97f4a7c15) % 1e10
		name := path.Join(rel(dir), prefix+strconv.FormatUint(n, 10))
		f, err := d.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, pathErr("tempfile", path.Join(dir, prefix), unix.EEXIST)
}

// ReadDir lists the directory name sorted by name, with the attributes of
// each entry itself (symbolic links not followed). Entries removed while
// listing are left out.
func (d *Dir) ReadDir(name string) ([]os.FileInfo, error) {
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(d.root, rel(name)))
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("nfs: readdir %q: %w", name, err)
	}
	sort.Strings(names)
	infos := make([]os.FileInfo, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return nil, pathErr("readdir", path.Join(name, n), err)
		}
		infos = append(infos, newFileInfo(n, &st))
	}
	return infos, nil
}

// Chroot returns a Dir rooted at the directory name, confined to it.
func (d *Dir) Chroot(name string) (billy.Filesystem, error) {
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, pathErr("chroot", name, err)
	}
	r := rel(name)
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		real = filepath.Join(d.real, r)
	}
	return &Dir{fd: fd, root: filepath.Join(d.root, r), real: real, idx: newHandleIndex(), readOnly: d.readOnly}, nil
}

// Capabilities reports read, write, seek and truncate; Dir's files do not
// lock.
func (d *Dir) Capabilities() billy.Capability {
	if d.readOnly {
		return billy.ReadCapability | billy.SeekCapability
	}
	return billy.WriteCapability | billy.ReadCapability | billy.ReadAndWriteCapability |
		billy.SeekCapability | billy.TruncateCapability
}

// Chmod sets the permission bits of name (a symbolic link followed inside
// the root).
func (d *Dir) Chmod(name string, mode os.FileMode) error {
	if err := d.writable("chmod", name); err != nil {
		return err
	}
	return d.withPath("chmod", name, func(p string) error { return unix.Chmod(p, unixMode(mode)) })
}

// Lchown sets the owner and group of name itself.
func (d *Dir) Lchown(name string, uid, gid int) error {
	if err := d.writable("lchown", name); err != nil {
		return err
	}
	return d.withParent("lchown", name, func(dirfd int, base string) error {
		return unix.Fchownat(dirfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// Chown sets the owner and group of name (a symbolic link followed inside
// the root).
func (d *Dir) Chown(name string, uid, gid int) error {
	if err := d.writable("chown", name); err != nil {
		return err
	}
	return d.withPath("chown", name, func(p string) error { return unix.Chown(p, uid, gid) })
}

// Chtimes sets the access and modification times of name (a symbolic link
// followed inside the root).
func (d *Dir) Chtimes(name string, atime, mtime time.Time) error {
	if err := d.writable("chtimes", name); err != nil {
		return err
	}
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	return d.withPath("chtimes", name, func(p string) error { return unix.UtimesNano(p, ts) })
}

// dirFile is an *os.File named as the file system named it (go-nfs looks
// files up again by Name).
type dirFile struct {
	*os.File
	name string
}

func (f *dirFile) Name() string  { return f.name }
func (f *dirFile) Lock() error   { return nil }
func (f *dirFile) Unlock() error { return nil }
