package gonfsd

import (
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-billy/v5"
)

// DirFS is a billy.Filesystem over a directory of the operating system,
// with billy.Change, so that go-nfs can apply the modes, owners and times
// the kernel client sets (go-billy's memfs has no Change: a CREATE with
// mode 0644 would fail with NFS3ERR_NOTSUPP). Files are real files, so a
// test can compare what the server stored with plain os calls, and
// concurrent connections need no extra lock.
//
// Names are confined to the directory lexically (cleaned as if rooted);
// symbolic links inside it are followed by the operating system. It serves
// tests, not untrusted clients.
type DirFS struct {
	root string
}

// NewDirFS returns a DirFS rooted at dir.
func NewDirFS(dir string) *DirFS { return &DirFS{root: filepath.Clean(dir)} }

var (
	_ billy.Filesystem = (*DirFS)(nil)
	_ billy.Change     = (*DirFS)(nil)
)

// path maps a file system name to the operating system's path.
func (fs *DirFS) path(name string) string {
	return filepath.Join(fs.root, filepath.Clean(string(filepath.Separator)+name))
}

func (fs *DirFS) Create(name string) (billy.File, error) {
	return fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (fs *DirFS) Open(name string) (billy.File, error) { return fs.OpenFile(name, os.O_RDONLY, 0) }

func (fs *DirFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	if flag&os.O_CREATE != 0 {
		if err := os.MkdirAll(filepath.Dir(fs.path(name)), 0o755); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(fs.path(name), flag, perm)
	if err != nil {
		return nil, err
	}
	return &dirFile{File: f, name: name}, nil
}

func (fs *DirFS) Stat(name string) (os.FileInfo, error)  { return os.Stat(fs.path(name)) }
func (fs *DirFS) Lstat(name string) (os.FileInfo, error) { return os.Lstat(fs.path(name)) }
func (fs *DirFS) Rename(from, to string) error           { return os.Rename(fs.path(from), fs.path(to)) }
func (fs *DirFS) Remove(name string) error               { return os.Remove(fs.path(name)) }
func (fs *DirFS) Join(elem ...string) string             { return filepath.Join(elem...) }
func (fs *DirFS) Symlink(target, link string) error      { return os.Symlink(target, fs.path(link)) }
func (fs *DirFS) Readlink(link string) (string, error)   { return os.Readlink(fs.path(link)) }

// Link makes newname a hard link to oldname, as link(2).
func (fs *DirFS) Link(oldname, newname string) error {
	return os.Link(fs.path(oldname), fs.path(newname))
}
func (fs *DirFS) Root() string { return fs.root }

func (fs *DirFS) MkdirAll(name string, perm os.FileMode) error {
	return os.MkdirAll(fs.path(name), perm)
}

func (fs *DirFS) TempFile(dir, prefix string) (billy.File, error) {
	f, err := os.CreateTemp(fs.path(dir), prefix)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(fs.root, f.Name())
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &dirFile{File: f, name: rel}, nil
}

func (fs *DirFS) ReadDir(name string) ([]os.FileInfo, error) {
	ents, err := os.ReadDir(fs.path(name))
	if err != nil {
		return nil, err
	}
	infos := make([]os.FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		infos = append(infos, fi)
	}
	return infos, nil
}

func (fs *DirFS) Chroot(name string) (billy.Filesystem, error) {
	return NewDirFS(fs.path(name)), nil
}

func (fs *DirFS) Chmod(name string, mode os.FileMode) error { return os.Chmod(fs.path(name), mode) }
func (fs *DirFS) Lchown(name string, uid, gid int) error    { return os.Lchown(fs.path(name), uid, gid) }
func (fs *DirFS) Chown(name string, uid, gid int) error     { return os.Chown(fs.path(name), uid, gid) }
func (fs *DirFS) Chtimes(name string, atime, mtime time.Time) error {
	return os.Chtimes(fs.path(name), atime, mtime)
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
