package server

import (
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// entry fills st with the attributes of the entry base of the directory
// dir (not following a symbolic link), returns its handle, the same bytes
// handle gives, and records its name in the handle index: for
// READDIRPLUS (RFC 1813 §3.3.17), relative to the directory's descriptor,
// where handle would resolve the directory from the root again for every
// entry. The handle is shared (entryHandles): the caller must not modify
// it.
//
// An entry costs an fstatat when its handle is cached, under the inode's
// number and change time (ctime), which every rename, link or attribute
// change of the inode moves on. Otherwise its handle is taken by name
// (name_to_handle_at) between two fstatats that must agree on the inode
// and its change time, so that the handle and the attributes are of one
// file even if the name is renamed over meanwhile; if they do not, or
// the file system gives no handles, the entry is opened (O_PATH) and
// both are taken from the descriptor, as knfsd takes both from one
// dentry. The same inode number and change time could name two files
// only if one replaced the other within one tick of the file system's
// clock (a few ms); its handle would then be the removed file's, which
// the client finds stale (NFS3ERR_STALE) and looks up again.
func (h *DirHandler) entry(dir *object, base string, st *unix.Stat_t) ([]byte, error) {
	return h.entryAt(dir.fd, dir.st.Ino, base, dir.name, st)
}

// entryAt is entry for the directory open as dirfd, whose inode number is
// parent and whose name below the root is dirName ("." for the root; "":
// not known, the entry then not indexed). LOOKUP takes its entries this
// way too (two system calls for a cached handle, where opening the entry
// takes five).
func (h *DirHandler) entryAt(dirfd int, parent uint64, base, dirName string, st *unix.Stat_t) ([]byte, error) {
	if base == "" || base == "." || base == ".." || strings.Contains(base, "/") {
		return nil, unix.EINVAL
	}
	if err := unix.Fstatat(dirfd, base, st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	fh := h.entries.get(entryKeyOf(parent, st))
	if fh == nil {
		var err error
		if fh, err = h.makeEntryHandle(dirfd, parent, base, st); err != nil {
			return nil, err
		}
	}
	if dirName != "" {
		h.dir.idx.addChild(st.Ino, dirName, base, st.Mode&unix.S_IFMT == unix.S_IFDIR)
	}
	return fh, nil
}

// makeEntryHandle makes and caches the handle of the entry base of the
// directory dirfd (inode parent), whose attributes st holds (and are
// refreshed): see entry.
func (h *DirHandler) makeEntryHandle(dirfd int, parent uint64, base string, st *unix.Stat_t) ([]byte, error) {
	if kfh, _, err := unix.NameToHandleAt(dirfd, base, 0); err == nil {
		var after unix.Stat_t
		id, ok := kernelID(kfh, st.Ino)
		if ok && unix.Fstatat(dirfd, base, &after, unix.AT_SYMLINK_NOFOLLOW) == nil && after.Ino == st.Ino && after.Ctim == st.Ctim {
			*st = after
			fh := encodeHandle(h.export, id, parent)
			h.entries.put(entryKeyOf(parent, st), fh)
			return fh, nil
		}
	}
	fd, err := unix.Openat(dirfd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return h.handleOf(fd, parent, "", st) // which caches it; entryAt indexes the name
}

// entryHandlesMax bounds the handles a DirHandler keeps for READDIRPLUS
// (about 130 bytes each).
const entryHandlesMax = 1 << 15

// entryKey names an entry's handle: the directory it was listed in (the
// handle records its parent), the inode's number and its change time.
type entryKey struct {
	parent, ino uint64
	ctime       unix.Timespec
}

// entryKeyOf is the key of the entry of directory parent whose
// attributes st holds.
func entryKeyOf(parent uint64, st *unix.Stat_t) entryKey {
	return entryKey{parent: parent, ino: st.Ino, ctime: st.Ctim}
}

// entryHandles caches the handles READDIRPLUS, LOOKUP and CREATE made
// (entry, handleOf). When full, an eighth of them, chosen by the map's
// order, give way.
type entryHandles struct {
	mu   sync.Mutex
	m    map[entryKey][]byte
	hits uint64 // for tests
}

func (c *entryHandles) get(k entryKey) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	fh := c.m[k]
	if fh != nil {
		c.hits++
	}
	return fh
}

func (c *entryHandles) put(k entryKey, fh []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[entryKey][]byte)
	}
	if len(c.m) >= entryHandlesMax {
		drop := entryHandlesMax / 8
		for k := range c.m {
			delete(c.m, k)
			if drop--; drop == 0 {
				break
			}
		}
	}
	c.m[k] = fh
}
