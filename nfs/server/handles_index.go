package server

import (
	"strings"
	"sync"
)

// handleIndex maps inode numbers of a Dir to a name of each (relative to
// the root, "." for the root), so that a handle, which holds an inode and
// not a name, resolves to the name the server works on. It is a cache of the
// tree, not a source of truth: every name it returns is checked against
// the file before use, and a miss is answered by looking at the file
// system again. It is unbounded: one entry per file a client was given a
// handle for or a walk passed, about 100 bytes each.
type handleIndex struct {
	mu     sync.Mutex
	byIno  map[uint64]indexEntry
	byPath map[string]uint64
	// gone holds inodes a full walk did not find, or the kernel said
	// were gone (open_by_handle_at), so that a client repeating a stale
	// handle costs no walk. A new handle for a reused inode takes it out.
	gone map[uint64]struct{}

	walkMu sync.Mutex // one full walk at a time
	walks  int        // full walks done, for tests
}

type indexEntry struct {
	path string
	dir  bool
}

// maxGone bounds handleIndex.gone; it starts afresh when full.
const maxGone = 1 << 16

func newHandleIndex() *handleIndex {
	return &handleIndex{byIno: map[uint64]indexEntry{}, byPath: map[string]uint64{}, gone: map[uint64]struct{}{}}
}

// add records that ino is named p.
func (x *handleIndex) add(ino uint64, p string, dir bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.addLocked(ino, p, dir)
}

// addChild records that ino is named base in the directory named dir
// ("." for the root): add of their join, which it makes only when the
// index does not hold that name for ino already (a directory listed
// again: READDIRPLUS and LOOKUP index each entry they answer).
func (x *handleIndex) addChild(ino uint64, dir, base string, isDir bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.byIno[ino]; ok && e.dir == isDir && isChildName(e.path, dir, base) && x.byPath[e.path] == ino {
		if len(x.gone) > 0 {
			delete(x.gone, ino)
		}
		return
	}
	x.addLocked(ino, childName(dir, base), isDir)
}

// childName is the name below the root of the entry base (one component)
// of the directory named dir ("." for the root).
func childName(dir, base string) string {
	if dir == "." {
		return base
	}
	return dir + "/" + base
}

// isChildName reports whether p is childName(dir, base), without making
// it.
func isChildName(p, dir, base string) bool {
	if dir == "." {
		return p == base
	}
	return len(p) == len(dir)+1+len(base) && p[len(dir)] == '/' && p[:len(dir)] == dir && p[len(dir)+1:] == base
}

func (x *handleIndex) addLocked(ino uint64, p string, dir bool) {
	if old, ok := x.byIno[ino]; ok && old.path != p && x.byPath[old.path] == ino {
		delete(x.byPath, old.path)
	}
	if other, ok := x.byPath[p]; ok && other != ino {
		delete(x.byIno, other)
	}
	x.byIno[ino] = indexEntry{path: p, dir: dir}
	x.byPath[p] = ino
	delete(x.gone, ino)
}

// lookup returns the recorded name of ino.
func (x *handleIndex) lookup(ino uint64) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.byIno[ino]
	return e.path, ok
}

// isGone reports whether ino is known to be gone.
func (x *handleIndex) isGone(ino uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.gone[ino]
	return ok
}

// markGone records that ino has no name left.
func (x *handleIndex) markGone(ino uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.markGoneLocked(ino)
}

func (x *handleIndex) markGoneLocked(ino uint64) {
	if len(x.gone) >= maxGone {
		clear(x.gone)
	}
	x.gone[ino] = struct{}{}
	if e, ok := x.byIno[ino]; ok {
		if x.byPath[e.path] == ino {
			delete(x.byPath, e.path)
		}
		delete(x.byIno, ino)
	}
}

// forget drops the entry of ino if it still says p.
func (x *handleIndex) forget(ino uint64, p string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.byIno[ino]; ok && e.path == p {
		delete(x.byIno, ino)
		if x.byPath[p] == ino {
			delete(x.byPath, p)
		}
	}
}

// renamed moves the entry of from, and of everything below it when it is
// a directory, to to. Renaming a directory costs a pass over the index.
func (x *handleIndex) renamed(from, to string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if other, ok := x.byPath[to]; ok {
		delete(x.byIno, other) // replaced; its handle resolves afresh
		delete(x.byPath, to)
	}
	ino, ok := x.byPath[from]
	if !ok {
		return
	}
	e := x.byIno[ino]
	delete(x.byPath, from)
	x.byIno[ino] = indexEntry{path: to, dir: e.dir}
	x.byPath[to] = ino
	if !e.dir {
		return
	}
	prefix := from + "/"
	for i, c := range x.byIno {
		if strings.HasPrefix(c.path, prefix) {
			np := to + "/" + c.path[len(prefix):]
			if x.byPath[c.path] == i {
				delete(x.byPath, c.path)
			}
			x.byIno[i] = indexEntry{path: np, dir: c.dir}
			x.byPath[np] = i
		}
	}
}

// removed drops the entry of p, a name REMOVE or RMDIR took.
func (x *handleIndex) removed(p string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if ino, ok := x.byPath[p]; ok {
		delete(x.byPath, p)
		if x.byIno[ino].path == p {
			delete(x.byIno, ino)
		}
	}
}
