package server

import (
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// dirent is one entry of a directory listing: its name, inode number and
// whether it is a directory (the entry itself: a symbolic link is not
// followed).
type dirent struct {
	name string
	ino  uint64
	dir  bool
}

// listDir lists the directory open as fd (O_RDONLY), sorted by name,
// without "." and "..", and closes fd: one getdents64 per 32 KiB of
// entries (readDirents). An entry removed while listing may be listed; a
// READDIRPLUS leaves it out when it finds it gone (entry), and a READDIR
// lists it, as knfsd's does.
func listDir(fd int) ([]dirent, error) {
	defer unix.Close(fd)
	ents, err := readDirents(fd)
	if err != nil {
		return nil, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
	return ents, nil
}

// readDir lists the directory name below the root (listDir).
func (d *Dir) readDir(name string) ([]dirent, error) {
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	ents, err := listDir(fd)
	return ents, pathErr("readdir", name, err)
}

// Listings of a DirHandler: a client with a 4 KiB reply size needs
// hundreds of READDIR or READDIRPLUS calls for a directory of thousands of
// entries, so DirHandler keeps the last few listings for a short while,
// each under its directory's path and change times, and a call that
// resumes a listing (a cookie past the start) reuses the kept listing
// while the directory's ctime and mtime are those it was read at. A call
// that starts a listing reads the directory again. Cookies do not depend
// on a kept listing (see readdir.go): a listing read again resumes at the
// same place.
//
// The cookie verifier of every reply (RFC 1813 §3.3.16, cookieverf3) is
// 0, as knfsd's: the Linux client drops its directory page cache past the
// first page when the verifier of a listing's first reply differs from
// the one it holds (0 for a directory it has not listed), and so would
// fetch most of every first reply again.
const (
	listingsKept = 16
	listingTTL   = 2 * time.Second
)

// listingKey names a directory's contents at one time: its path below the
// root and its change and modification times (creates, removes and
// renames in a directory set both).
type listingKey struct {
	path         string
	ctime, mtime unix.Timespec
}

func listingKeyOf(dir *object) listingKey {
	return listingKey{path: dir.name, ctime: dir.st.Ctim, mtime: dir.st.Mtim}
}

type listing struct {
	key  listingKey
	ents []dirEntry // in cookie order (byCookie)
	at   time.Time
}

type listings struct {
	mu   sync.Mutex
	kept []listing // oldest first
}

// keepListing keeps ents, the listing of the directory key names.
func (h *DirHandler) keepListing(key listingKey, ents []dirEntry) {
	x := &h.listings
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, l := range x.kept {
		if l.key == key {
			x.kept = append(x.kept[:i], x.kept[i+1:]...)
			break
		}
	}
	if len(x.kept) == listingsKept {
		x.kept = x.kept[1:]
	}
	x.kept = append(x.kept, listing{key: key, ents: ents, at: time.Now()})
}

// keptListing returns the kept listing of the directory key names, or nil.
func (h *DirHandler) keptListing(key listingKey) []dirEntry {
	x := &h.listings
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, l := range x.kept {
		if l.key == key && time.Since(l.at) < listingTTL {
			return l.ents
		}
	}
	return nil
}
