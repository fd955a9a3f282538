package server

import (
	"crypto/sha256"
	"encoding/binary"
	"os"
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
// without "." and "..", and closes fd. Entries removed while listing are
// left out.
func listDir(fd int) ([]dirent, error) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	ents := make([]dirent, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return nil, err
		}
		ents = append(ents, dirent{name: n, ino: st.Ino, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
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
// each under its cookie verifier (RFC 1813 §3.3.16, cookieverf3), which
// the client sends back with its next call. The verifier is a hash of the
// directory's name and entry names, so a listing read again after expiry
// gets the same verifier if nothing changed. A verifier only saves reading
// the directory again: cookies do not depend on it.
const (
	listingsKept = 16
	listingTTL   = 2 * time.Second
)

type listing struct {
	verifier uint64
	path     string
	contents []dirent
	at       time.Time
}

type listings struct {
	mu   sync.Mutex
	kept []listing // oldest first
}

// keepListing returns the cookie verifier of contents, the listing of the
// directory path, and keeps the listing. A verifier is never 0, which a
// client sends when it has none.
func (h *DirHandler) keepListing(path string, contents []dirent) uint64 {
	sum := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(path)))
	sum.Write(n[:])
	sum.Write([]byte(path))
	for _, c := range contents {
		binary.BigEndian.PutUint64(n[:], uint64(len(c.name)))
		sum.Write(n[:])
		sum.Write([]byte(c.name))
	}
	v := binary.BigEndian.Uint64(sum.Sum(nil))
	if v == 0 {
		v = 1
	}
	x := &h.listings
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, l := range x.kept {
		if l.verifier == v && l.path == path {
			x.kept = append(x.kept[:i], x.kept[i+1:]...)
			break
		}
	}
	if len(x.kept) == listingsKept {
		x.kept = x.kept[1:]
	}
	x.kept = append(x.kept, listing{verifier: v, path: path, contents: contents, at: time.Now()})
	return v
}

// keptListing returns the kept listing of path with verifier, or nil.
func (h *DirHandler) keptListing(path string, verifier uint64) []dirent {
	x := &h.listings
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, l := range x.kept {
		if l.verifier == verifier && l.path == path && time.Since(l.at) < listingTTL {
			return l.contents
		}
	}
	return nil
}
