package server

import (
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The open-file cache's limits.
const (
	// openFilesMax bounds the descriptors a DirHandler keeps open.
	openFilesMax = 256
	// openFilesSweep is the period of the cache's sweep: a descriptor that
	// no call used since the sweep before is closed, so a file stays open
	// one to two periods after its last use.
	openFilesSweep = time.Second
)

// errNotCacheable means a handle's file is not for the open-file cache (not
// a regular file or a directory, a symbolic link, or a file that cannot be
// opened): the caller takes the path by name, which reports it as it
// would without the cache.
var errNotCacheable = errors.New("nfs: file not cached")

// openFiles keeps descriptors of the files a DirHandler's READ, WRITE,
// GETATTR and COMMIT calls use open between calls, by file handle, as
// knfsd's file cache does (fs/nfsd/filecache.c). A call on a cached handle
// costs its pread, pwrite, fstat or fsync; without the cache each call
// resolves the handle (open, fstat, name_to_handle_at and close of the
// name) and opens and closes the file, five to seven more system calls,
// which a server in a TCG guest pays dearly for.
//
// A descriptor pins its inode, so a cached handle is always its own file;
// the file's removal shows as a link count of zero, which makes the handle
// stale (statOpen). Idle descriptors are closed by a sweep (one to two
// openFilesSweep periods after their last use), so the space of a removed
// file is freed soon and an idle server holds nothing open; at most
// openFilesMax are kept, the least recently used giving way.
type openFiles struct {
	mu sync.Mutex
	m  map[string]*openFile // by file handle
	// lru lists m's descriptors, the most recently used first; byIno
	// chains them by inode (openFile.sameIno). Both keep add's eviction
	// and forgetInode at a constant cost, however many are cached.
	lru   openFile // the list's sentinel: lru.next is the most recent
	byIno map[uint64]*openFile
	epoch uint64      // sweeps so far
	timer *time.Timer // the next sweep, while m is not empty
	armed bool
	max   int
	every time.Duration
	close func(fd int) error // unix.Close; tests watch it
}

// openFile is one cached descriptor.
type openFile struct {
	fd   int
	ino  uint64 // the file's inode number (from its handle)
	rw   bool   // opened read-write (else read-only)
	refs int    // calls using fd, plus one while in the cache's map
	used uint64 // the epoch of its last use
	// Its place in the cache while in m (openFiles.lru, byIno).
	key        string
	prev, next *openFile
	sameIno    *openFile
}

func newOpenFiles(max int, every time.Duration) *openFiles {
	c := &openFiles{m: make(map[string]*openFile), byIno: make(map[uint64]*openFile), max: max, every: every, close: unix.Close}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	return c
}

// touchLocked makes of, which is in m, the most recently used.
func (c *openFiles) touchLocked(of *openFile) {
	of.used = c.epoch
	if c.lru.next == of {
		return
	}
	of.prev.next, of.next.prev = of.next, of.prev
	c.linkFirstLocked(of)
}

// linkFirstLocked puts of first in the list.
func (c *openFiles) linkFirstLocked(of *openFile) {
	of.prev, of.next = &c.lru, c.lru.next
	c.lru.next.prev = of
	c.lru.next = of
}

// get returns fh's cached descriptor, one that can write if write, with a
// reference the caller gives back with put; nil if there is none.
func (c *openFiles) get(fh []byte, write bool) *openFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	of := c.m[string(fh)]
	if of == nil || (write && !of.rw) {
		return nil
	}
	of.refs++
	c.touchLocked(of)
	return of
}

// cached reports whether fh has a descriptor in the cache.
func (c *openFiles) cached(fh []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[string(fh)] != nil
}

// cachedRW reports whether fh has a cached descriptor that can write.
func (c *openFiles) cachedRW(fh []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	of := c.m[string(fh)]
	return of != nil && of.rw
}

// add caches of (just opened, no references) for fh and returns the
// descriptor to use with a reference for the caller: of, or the one
// another call cached meanwhile if it serves as well (of is then closed).
func (c *openFiles) add(fh []byte, of *openFile) *openFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := string(fh)
	if old := c.m[key]; old != nil {
		if old.rw || !of.rw {
			_ = c.close(of.fd)
			old.refs++
			c.touchLocked(old)
			return old
		}
		c.dropLocked(old)
	}
	if len(c.m) >= c.max {
		c.evictLocked()
	}
	if _, id, _, err := decodeHandle(fh); err == nil {
		of.ino = id.ino
	}
	of.refs, of.used, of.key = 2, c.epoch, key
	c.m[key] = of
	c.linkFirstLocked(of)
	of.sameIno = c.byIno[of.ino]
	c.byIno[of.ino] = of
	if !c.armed {
		c.armed = true
		if c.timer == nil {
			c.timer = time.AfterFunc(c.every, c.sweep)
		} else {
			c.timer.Reset(c.every)
		}
	}
	return of
}

// put gives back a reference from get or add.
func (c *openFiles) put(of *openFile) {
	c.mu.Lock()
	c.unrefLocked(of)
	c.mu.Unlock()
}

// forget drops fh's descriptor from the cache if it is of (nil: whatever
// it is); calls using it keep it until they put it.
func (c *openFiles) forget(fh []byte, of *openFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[string(fh)]; old != nil && (of == nil || old == of) {
		c.dropLocked(old)
	}
}

// forgetInode drops the descriptors of the inode ino (a file unlinked:
// its space is freed once no descriptor holds it); calls using them keep
// them until they put them.
func (c *openFiles) forgetInode(ino uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for of := c.byIno[ino]; of != nil; {
		next := of.sameIno
		c.dropLocked(of)
		of = next
	}
}

// dropLocked takes of, which is in m, out of the cache.
func (c *openFiles) dropLocked(of *openFile) {
	delete(c.m, of.key)
	of.prev.next, of.next.prev = of.next, of.prev
	of.prev, of.next = nil, nil
	if first := c.byIno[of.ino]; first == of {
		if of.sameIno == nil {
			delete(c.byIno, of.ino)
		} else {
			c.byIno[of.ino] = of.sameIno
		}
	} else {
		for p := first; p != nil; p = p.sameIno { // of is in the chain
			if p.sameIno == of {
				p.sameIno = of.sameIno
				break
			}
		}
	}
	of.sameIno = nil
	c.unrefLocked(of)
}

func (c *openFiles) unrefLocked(of *openFile) {
	of.refs--
	if of.refs == 0 {
		_ = c.close(of.fd)
	}
}

// evictLocked drops the least recently used descriptor.
func (c *openFiles) evictLocked() {
	if lru := c.lru.prev; lru != &c.lru {
		c.dropLocked(lru)
	}
}

// sweep closes the descriptors no call used since the last sweep, and
// arms the next while any are left.
func (c *openFiles) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	// From the least recently used: the list is in order of use, so of
	// epochs too.
	for of := c.lru.prev; of != &c.lru && of.used < c.epoch; {
		prev := of.prev
		c.dropLocked(of)
		of = prev
	}
	c.epoch++
	if len(c.m) == 0 {
		c.armed = false
		return
	}
	c.timer.Reset(c.every)
}

// len returns the number of cached descriptors.
func (c *openFiles) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// openHandle returns a descriptor of fh's file, a regular file or a
// directory, that can read and, if write, write: cached, or opened now and
// cached. The caller gives it back with h.files.put. Errors are those of
// resolve (a stale, foreign or bad handle) or errNotCacheable.
func (h *DirHandler) openHandle(fh []byte, write bool) (*openFile, error) {
	if of := h.files.get(fh, write); of != nil {
		return of, nil
	}
	name, err := h.resolve(fh)
	if err != nil {
		return nil, err
	}
	_, id, _, _ := decodeHandle(fh) // resolve decoded it
	// The name may have been given to another file since resolve checked
	// it, and only regular files and directories are opened (an open of a
	// device or a FIFO may do more than a GETATTR should): the identity
	// and type are checked on an O_PATH descriptor, which is then reopened
	// through /proc, the same inode.
	opath, err := h.dir.openat(name, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, errNotCacheable
	}
	defer unix.Close(opath)
	var st unix.Stat_t
	got, err := fdIdentity(opath, &st)
	t := st.Mode & unix.S_IFMT
	if err != nil || !got.equal(id) || (t != unix.S_IFREG && t != unix.S_IFDIR) {
		return nil, errNotCacheable
	}
	proc := "/proc/self/fd/" + strconv.Itoa(opath)
	rw := t == unix.S_IFREG && !h.dir.readOnly
	if write && !rw {
		return nil, errNotCacheable
	}
	flags := unix.O_RDONLY
	if rw {
		flags = unix.O_RDWR
	}
	fd, err := unix.Open(proc, flags|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil && rw && !write {
		rw = false
		fd, err = unix.Open(proc, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	}
	if err != nil {
		return nil, errNotCacheable
	}
	return h.files.add(fh, &openFile{fd: fd, rw: rw}), nil
}

// cacheDir puts a descriptor of o, fh's directory just resolved and
// checked (openObject), in the open-file cache if it has none, so that
// the LOOKUPs that follow in it run on the poll loop (inlineCalls). A file
// that is not a directory is left out.
func (h *DirHandler) cacheDir(fh []byte, o *object) {
	if !o.isDir() || h.files.cached(fh) {
		return
	}
	fd, err := unix.Open(o.proc(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	h.files.put(h.files.add(fh, &openFile{fd: fd}))
}

// recheck keeps fh's cached descriptor after a change to its file's mode,
// owner or group only if the server could still open the file with the
// access the descriptor has (read, and write if rw): a faccessat as the
// process, whose file system identity the calling goroutine's thread has
// (the kernel's check of an open, capabilities included). Otherwise it
// drops it, so that the next call opens the file with the access the new
// mode gives (an unprivileged server, a file made read-only). A server
// whose opens the mode does not limit (root, CAP_DAC_OVERRIDE) keeps it.
func (h *DirHandler) recheck(fh []byte) {
	of := h.files.get(fh, false)
	if of == nil {
		return
	}
	defer h.files.put(of)
	mode := uint32(unix.R_OK)
	if of.rw {
		mode |= unix.W_OK
	}
	if unix.Faccessat2(of.fd, "", mode, unix.AT_EACCESS|unix.AT_EMPTY_PATH) != nil {
		h.files.forget(fh, of)
	}
}

// statOpen fills st with the attributes of of, fh's file. A file removed
// since it was opened (no link left) makes fh stale, and leaves the cache.
func (h *DirHandler) statOpen(fh []byte, of *openFile, st *unix.Stat_t) error {
	if err := unix.Fstat(of.fd, st); err != nil {
		return err
	}
	if st.Nlink == 0 {
		h.files.forget(fh, of)
		return ErrStaleHandle
	}
	return nil
}

// fdFile reads and writes a descriptor at offsets (pread, pwrite) as
// os.File's ReadAt and WriteAt do: all of b, or an error (io.EOF for a
// read that reaches the end of the file).
type fdFile int

func (f fdFile) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pread(int(f), b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &os.PathError{Op: "read", Path: "", Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

func (f fdFile) WriteAt(b []byte, off int64) (int, error) { return f.writeAll(b, off, unix.Pwrite) }

// writeAll writes all of b at off with write (pwrite or pwritev2),
// retrying on EINTR and going on after a short write.
func (f fdFile) writeAll(b []byte, off int64, write func(fd int, b []byte, off int64) (int, error)) (int, error) {
	n := 0
	for n < len(b) {
		m, err := write(int(f), b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &os.PathError{Op: "write", Path: "", Err: err}
		}
		if m == 0 {
			return n, io.ErrShortWrite
		}
		n += m
	}
	return n, nil
}

// WriteAtSync is WriteAt for a stable WRITE: each pwritev2 with RWF_SYNC
// writes its part and makes it durable, data and metadata (O_SYNC's file
// integrity, what FILE_SYNC asks: RFC 1813 §3.3.7), before it returns, so
// that the write and its sync are one system call, and the sync covers the
// range written and not every dirty page of the file as fsync does (knfsd
// writes stable WRITEs with RWF_SYNC too: fs/nfsd/vfs.c, nfsd_vfs_write).
// It returns errNoSyncWrite, having written nothing, where the kernel has
// no RWF_SYNC (before Linux 4.7): the caller then writes and fsyncs.
func (f fdFile) WriteAtSync(b []byte, off int64) (int, error) {
	if noSyncWrite.Load() {
		return 0, errNoSyncWrite
	}
	n, err := f.writeAll(b, off, pwriteSync)
	if n == 0 && (errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)) {
		noSyncWrite.Store(true)
		return 0, errNoSyncWrite
	}
	return n, err
}

// pwriteSync is pwritev2(fd, [b], off, RWF_SYNC); a variable for the
// tests.
var pwriteSync = func(fd int, b []byte, off int64) (int, error) {
	return unix.Pwritev2(fd, [][]byte{b}, off, unix.RWF_SYNC)
}

// noSyncWrite is set once the kernel has refused RWF_SYNC.
var noSyncWrite atomic.Bool

// errNoSyncWrite is WriteAtSync's answer where the kernel cannot write
// with RWF_SYNC.
var errNoSyncWrite = errors.New("nfs: pwritev2 with RWF_SYNC not supported")
