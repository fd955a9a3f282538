package transport

import (
	"errors"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// regCache keeps the registrations of callers' buffers (CallInto,
// WriteMsgDirect, Config.CallBuffers) on one endpoint for reuse, as UCX's
// rcache and libfabric's MR cache do: callers reuse their buffers (a
// File's read-ahead blocks, a loop's buffer, an RPC server's pool), and a
// registration costs two system calls and the pinning of its pages, more
// than copying a buffer of a few hundred KiB, where a cached one costs
// nothing. A buffer inside
// a cached one (a sub-slice) uses its registration.
//
// A registration exposes nothing to the peer by itself (local write and
// window binds only: the peer reaches memory only through a window bound
// for one call); it keeps the buffer pinned and alive. So the cache holds
// at most limit bytes, least recently used dropped first, and never more
// than maxRegEntries registrations; one larger than limit is not kept.
// A registration not used for a whole regTrimAfter period is dropped
// (trimIdle), so that an idle connection holds none.
//
// A responder also bounds what it holds registered at once, in use or
// cached: max bytes on the connection (MemoryLimits.Registered) and the
// Listener's meter over all its connections
// (MemoryLimits.ListenerRegistered). A registration beyond either first
// evicts this connection's unused cached ones, least recently used first;
// if it still does not fit, get fails with errRegLimit and the caller
// copies instead (the call is pulled into, or the reply staged in, the
// endpoint's pool memory under MemoryLimits' budgets). A refusal for the
// Listener's bound has every connection's next trim check release its
// unused cached registrations.
//
// Guarded by Conn.mu; its regions go with the endpoint's connection.
type regCache struct {
	limit   int
	max     int        // bytes registered at once, in use or cached (0: no bound)
	shared  *regMeter  // the Listener's (nil: none)
	entries []regEntry // least recently used first
	bytes   int        // registered in entries
	// loose are registrations in use but not cached (larger than
	// limit), and looseBytes their bytes.
	loose      []verbs.Region
	looseBytes int
	// seenRefused is shared.refused at the last trim check.
	seenRefused uint64
	// armTrim schedules trimIdle regTrimAfter from now; the cache arms
	// it once when it first caches something, and its caller re-arms it
	// while something is left: never per call.
	armTrim func()
	armed   bool
}

// regEntry is one registration: base and n name the buffer (pinned, so its
// address is stable); users counts the calls exposing part of it; used
// says it was taken or given back since the last trim check.
type regEntry struct {
	base  uintptr
	n     int
	r     verbs.Region
	users int
	used  bool
}

// maxRegEntries bounds the registrations a cache keeps.
const maxRegEntries = 64

// regTrimAfter is the period of a cache's trim check: a registration
// unused for a whole period is dropped, within two periods of its last
// use.
const regTrimAfter = 2 * time.Second

// errRegLimit: a registration would exceed MemoryLimits.Registered or
// ListenerRegistered; the caller copies instead.
var errRegLimit = errors.New("rpcrdma: registered memory limit reached")

// regMeter counts the bytes of callers' buffers a Listener's connections
// hold registered, in use or cached, within limit. refused counts the
// registrations it refused: a connection's trim check that sees it moved
// releases all its unused cached registrations, recently used or not, so
// that the room goes to the connections that need it now rather than
// stay with those that took it first.
type regMeter struct {
	limit   int64
	used    atomic.Int64
	refused atomic.Uint64
}

// take adds n bytes if they fit.
func (m *regMeter) take(n int) bool {
	if m == nil {
		return true
	}
	for {
		u := m.used.Load()
		if u+int64(n) > m.limit {
			return false
		}
		if m.used.CompareAndSwap(u, u+int64(n)) {
			return true
		}
	}
}

// release gives back n bytes of take.
func (m *regMeter) release(n int) {
	if m != nil && n != 0 {
		m.used.Add(-int64(n))
	}
}

// inUse returns the bytes taken.
func (m *regMeter) inUse() int64 {
	if m == nil {
		return 0
	}
	return m.used.Load()
}

// total returns the bytes the cache holds registered, in use or cached.
func (rc *regCache) total() int { return rc.bytes + rc.looseBytes }

// get returns a registration holding p, and the offset of p in it: a
// cached one, or a new one (reg, false) that it keeps if it fits. It
// fails with errRegLimit when a new one would exceed max or the
// Listener's meter even once the unused cached ones are evicted.
func (rc *regCache) get(reg verbs.Registrar, p []byte) (r verbs.Region, off int, cached bool, err error) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	for i := len(rc.entries) - 1; i >= 0; i-- {
		e := &rc.entries[i]
		if base >= e.base && base-e.base <= uintptr(e.n-len(p)) && len(p) <= e.n {
			e.users++
			e.used = true
			hit := *e
			// Most recently used last.
			copy(rc.entries[i:], rc.entries[i+1:])
			rc.entries[len(rc.entries)-1] = hit
			return hit.r, int(base - hit.base), true, nil
		}
	}
	n := len(p)
	if !rc.reserve(n) {
		return nil, 0, false, errRegLimit
	}
	if r, err = reg.RegisterRegion(p); err != nil {
		rc.shared.release(n)
		return nil, 0, false, err
	}
	if n <= rc.limit {
		rc.entries = append(rc.entries, regEntry{base: base, n: n, r: r, users: 1, used: true})
		rc.bytes += n
		rc.evict()
		if !rc.armed && rc.armTrim != nil {
			rc.armed = true
			rc.armTrim()
		}
	} else {
		rc.loose = append(rc.loose, r)
		rc.looseBytes += n
	}
	return r, 0, false, nil
}

// reserve makes room for a new registration of n bytes within max and
// takes them from the Listener's meter, evicting unused cached
// registrations, least recently used first, as needed.
func (rc *regCache) reserve(n int) bool {
	for i := 0; ; {
		sharedFull := false
		if rc.max <= 0 || rc.total()+n <= rc.max {
			if rc.shared.take(n) {
				return true
			}
			sharedFull = true
		}
		// Evict the next unused entry, or give up.
		for i < len(rc.entries) && rc.entries[i].users > 0 {
			i++
		}
		if i == len(rc.entries) {
			if sharedFull {
				rc.shared.refused.Add(1)
			}
			return false
		}
		rc.drop(i)
	}
}

// drop closes and removes entry i, unused.
func (rc *regCache) drop(i int) {
	e := rc.entries[i]
	_ = e.r.Close()
	rc.bytes -= e.n
	rc.shared.release(e.n)
	rc.entries = slices.Delete(rc.entries, i, i+1) // zeroes the tail: no stale reference
}

// put ends one use of r, from get: a registration not cached (or no
// longer) is closed once unused.
func (rc *regCache) put(r verbs.Region) error {
	for i := range rc.entries {
		if e := &rc.entries[i]; e.r == r {
			e.users--
			e.used = true
			rc.evict()
			return nil
		}
	}
	for i, l := range rc.loose {
		if l == r {
			rc.loose = slices.Delete(rc.loose, i, i+1)
			n := len(r.Bytes())
			rc.looseBytes -= n
			rc.shared.release(n)
			break
		}
	}
	return r.Close()
}

// evict closes unused registrations, least recently used first, until the
// cache is within its bounds (used ones stay until put).
func (rc *regCache) evict() {
	for i := 0; i < len(rc.entries) && (rc.bytes > rc.limit || len(rc.entries) > maxRegEntries); {
		if rc.entries[i].users > 0 {
			i++
			continue
		}
		rc.drop(i)
	}
}

// trimIdle is the trim check: it closes the unused registrations not
// taken or given back since the last check (all the unused ones if the
// Listener's meter refused a registration since), and reports whether
// anything is left to watch (the caller then re-arms the check); if not,
// the next registration cached arms it.
func (rc *regCache) trimIdle() (again bool) {
	pressed := false
	if rc.shared != nil {
		n := rc.shared.refused.Load()
		pressed, rc.seenRefused = n != rc.seenRefused, n
	}
	for i := 0; i < len(rc.entries); {
		if e := &rc.entries[i]; e.users == 0 && (!e.used || pressed) {
			rc.drop(i)
			continue
		}
		rc.entries[i].used = false
		i++
	}
	rc.armed = len(rc.entries) > 0
	return rc.armed
}

// forget drops every registration without closing it: the connection
// that held them is closed (which deregistered them). The Listener's
// meter gets their bytes back.
func (rc *regCache) forget() {
	rc.shared.release(rc.total())
	clear(rc.entries)
	rc.entries, rc.bytes = rc.entries[:0], 0
	clear(rc.loose)
	rc.loose, rc.looseBytes = rc.loose[:0], 0
	rc.armed = false
}
