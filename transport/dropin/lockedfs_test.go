package dropin_test

import (
	"os"
	"sync"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
)

// newMemFS returns go-billy's memfs made safe for concurrent use. go-nfs
// serves each connection in a goroutine of its own, and memfs has no lock
// on its maps (the race detector sees it with two connections, on TCP as
// well): the file system behind go-nfs is the test's, not go-nfs's, so it is
// the one that gets a lock.
func newMemFS() billy.Filesystem {
	return &lockedFS{mu: new(sync.Mutex), fs: memfs.New()}
}

// lockedFS serialises every call on a billy.Filesystem and on its files.
type lockedFS struct {
	mu *sync.Mutex
	fs billy.Filesystem
}

func (l *lockedFS) file(f billy.File, err error) (billy.File, error) {
	if err != nil {
		return nil, err
	}
	return &lockedFile{mu: l.mu, f: f}, nil
}

func (l *lockedFS) Create(name string) (billy.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.file(l.fs.Create(name))
}

func (l *lockedFS) Open(name string) (billy.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.file(l.fs.Open(name))
}

func (l *lockedFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.file(l.fs.OpenFile(name, flag, perm))
}

func (l *lockedFS) TempFile(dir, prefix string) (billy.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.file(l.fs.TempFile(dir, prefix))
}

func (l *lockedFS) Stat(name string) (os.FileInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fs.Stat(name)
}

func (l *lockedFS) Lstat(name string) (os.FileInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fs.Lstat(name)
}

func (l *lockedFS) Rename(from, to string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fs.Rename(from, to)
}

func (l *lockedFS) Remove(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fs.Remove(name)
}

func (l *lockedFS) Join(elem ...string) string { return l.fs.Join(elem...) }

func (l *lockedFS) ReadDir(path string) ([]os.FileInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fs.ReadDir(path)
}

func (l *lockedFS) MkdirAll(name string, perm os.FileMode) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fs.MkdirAll(name, perm)
}

func (l *lockedFS) Symlink(target, link string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fs.Symlink(target, link)
}

func (l *lockedFS) Readlink(link string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fs.Readlink(link)
}

func (l *lockedFS) Chroot(path string) (billy.Filesystem, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs, err := l.fs.Chroot(path)
	if err != nil {
		return nil, err
	}
	return &lockedFS{mu: l.mu, fs: fs}, nil
}

func (l *lockedFS) Root() string { return l.fs.Root() }

// Capabilities passes on memfs's capabilities (go-nfs checks for writes).
func (l *lockedFS) Capabilities() billy.Capability { return billy.Capabilities(l.fs) }

// lockedFile is a file of a lockedFS.
type lockedFile struct {
	mu *sync.Mutex
	f  billy.File
}

func (f *lockedFile) Name() string { return f.f.Name() }

func (f *lockedFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.f.Write(p)
}

func (f *lockedFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.f.Read(p)
}

func (f *lockedFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.f.ReadAt(p, off)
}

func (f *lockedFile) Seek(off int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.f.Seek(off, whence)
}

func (f *lockedFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.f.Close()
}

func (f *lockedFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.f.Truncate(size)
}

func (f *lockedFile) Lock() error   { return f.f.Lock() }
func (f *lockedFile) Unlock() error { return f.f.Unlock() }
