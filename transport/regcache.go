package transport

import (
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// regCache keeps the registrations of callers' buffers (CallInto) on one
// endpoint for reuse, as UCX's rcache and libfabric's MR cache do: callers
// reuse their buffers (a File's read-ahead blocks, a loop's buffer), and a
// registration costs two system calls and the pinning of its pages
// (measured on rxe under TCG: 64 µs for 4 KiB, 154 µs for 256 KiB, against
// 94 µs to copy 256 KiB), where a cached one costs nothing. A buffer inside
// a cached one (a sub-slice) uses its registration.
//
// A registration exposes nothing to the peer by itself (local write and
// window binds only: the peer reaches memory only through a window bound
// for one call); it keeps the buffer pinned and alive. So the cache holds
// at most limit bytes, least recently used dropped first, and never more
// than maxRegEntries registrations; one larger than limit is not kept.
// Guarded by Conn.mu; its regions go with the endpoint's connection.
type regCache struct {
	limit   int
	entries []regEntry // least recently used first
	bytes   int        // registered in entries
}

// regEntry is one registration: base and n name the buffer (pinned, so its
// address is stable); users counts the calls exposing part of it.
type regEntry struct {
	base  uintptr
	n     int
	r     verbs.Region
	users int
}

// maxRegEntries bounds the registrations a cache keeps.
const maxRegEntries = 64

// get returns a registration holding p, and the offset of p in it: a
// cached one, or a new one (reg, false) that it keeps if it fits.
func (rc *regCache) get(reg verbs.Registrar, p []byte) (r verbs.Region, off int, cached bool, err error) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	for i := len(rc.entries) - 1; i >= 0; i-- {
		e := &rc.entries[i]
		if base >= e.base && base-e.base <= uintptr(e.n-len(p)) && len(p) <= e.n {
			e.users++
			hit := *e
			// Most recently used last.
			copy(rc.entries[i:], rc.entries[i+1:])
			rc.entries[len(rc.entries)-1] = hit
			return hit.r, int(base - hit.base), true, nil
		}
	}
	if r, err = reg.RegisterRegion(p); err != nil {
		return nil, 0, false, err
	}
	if len(p) <= rc.limit {
		rc.entries = append(rc.entries, regEntry{base: base, n: len(p), r: r, users: 1})
		rc.bytes += len(p)
		rc.evict()
	}
	return r, 0, false, nil
}

// put ends one use of r, from get: a registration not cached (or no
// longer) is closed once unused.
func (rc *regCache) put(r verbs.Region) error {
	for i := range rc.entries {
		if e := &rc.entries[i]; e.r == r {
			e.users--
			rc.evict()
			return nil
		}
	}
	return r.Close()
}

// evict closes unused registrations, least recently used first, until the
// cache is within its bounds (used ones stay until put).
func (rc *regCache) evict() {
	for i := 0; i < len(rc.entries) && (rc.bytes > rc.limit || len(rc.entries) > maxRegEntries); {
		e := rc.entries[i]
		if e.users > 0 {
			i++
			continue
		}
		_ = e.r.Close()
		rc.bytes -= e.n
		rc.entries = append(rc.entries[:i], rc.entries[i+1:]...)
	}
}

// forget drops every registration without closing it: the connection
// that held them is closed.
func (rc *regCache) forget() {
	clear(rc.entries)
	rc.entries, rc.bytes = rc.entries[:0], 0
}
