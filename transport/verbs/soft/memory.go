package soft

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// region is registered memory: an anonymous private mapping outside the Go
// heap, so that its address never moves and the garbage collector never
// scans it, as memory registered with a real NIC.
type region struct {
	c    *conn
	mem  []byte // the whole mapping, page-rounded
	size int
	iova uint64
	// closed is set under c.memMu (write) and c.mu; the data movers read
	// it under c.memMu (read) before every copy, so that no copy touches
	// unmapped memory.
	closed atomic.Bool
	// bound counts the windows bound to the region (guarded by c.mu).
	bound int
	// user: the memory is the caller's (RegisterRegion), not a mapping of
	// ours: closing the region forgets it instead of unmapping it.
	user bool
}

// release frees the region's memory if it is ours.
func (r *region) release() error {
	if r.user {
		return nil
	}
	if err := syscall.Munmap(r.mem); err != nil {
		return fmt.Errorf("soft: munmap: %w", err)
	}
	return nil
}

// Bytes returns the region's memory, or nil once it is closed.
func (r *region) Bytes() []byte {
	if r.closed.Load() {
		return nil
	}
	return r.mem[:r.size:r.size]
}

// Addr returns the address the peer names byte off of the region by: a
// per-connection virtual address, not the mapping's real one, so that no
// process address leaks to the peer.
func (r *region) Addr(off int) uint64 { return r.iova + uint64(off) }

// Close deregisters and unmaps the region. It fails while a window is
// bound to it (IBA 10.6.7.2.6).
func (r *region) Close() error { return r.c.closeRegion(r) }

// windowState is the state of a type 2 memory window (IBA 10.6.7.2).
type windowState uint8

const (
	windowFree windowState = iota
	windowValid
	windowClosed
)

// window is a type 2 memory window. Its rkey is index<<8 | key, the key
// byte being what OpBindWindow changes (verbs.BindRKey: incremented as
// ibv_inc_rkey does, or the one the work request chose).
type window struct {
	c     *conn
	index uint32
	// userRKey is what RKey reports: the rkey of the last posted bind.
	userRKey atomic.Uint32

	// accessMu orders the peer's accesses through the window against its
	// invalidation. The data movers copy one chunk at a time holding it
	// for reading, and only while gen is still the generation their rkey
	// check saw; invalidating or closing the window increments gen
	// holding it for writing. So once an invalidation has returned (and
	// before its completion is reported) no byte moves through the old
	// binding: an access still in progress is refused instead (a remote
	// access error, as an RC responder reports an rkey that no longer
	// holds). Lock order: c.memMu, c.mu, accessMu.
	accessMu sync.RWMutex
	// gen counts the bindings that ended. Written under c.mu and
	// accessMu, so either one suffices to read it.
	gen uint64

	// Guarded by c.mu: the binding the responder checks against.
	rkey   uint32
	state  windowState
	region *region
	off    int // of the bound range in region
	length int
	addr   uint64 // region.Addr(off)
	access verbs.Access
}

// RKey returns the rkey of the last posted bind (or of the unbound window).
func (w *window) RKey() uint32 { return w.userRKey.Load() }

// Close frees the window; its rkey stops working at once.
func (w *window) Close() error { return w.c.closeWindow(w) }

var (
	errRegionSize = fmt.Errorf("soft: region size must be positive: %w", verbs.ErrNotSupported)
	errRegionBusy = fmt.Errorf("soft: region has bound memory windows (IBA 10.6.7.2.6): %w", verbs.ErrNotSupported)
	errNoWindows  = fmt.Errorf("soft: out of memory window indexes: %w", verbs.ErrNotSupported)
)

// pageSize is the mapping granularity.
var pageSize = os.Getpagesize()

// AllocRegion maps size bytes of anonymous memory and registers them.
func (c *conn) AllocRegion(size int) (verbs.Region, error) {
	if size <= 0 {
		return nil, errRegionSize
	}
	n := (size + pageSize - 1) / pageSize * pageSize
	if n < size { // overflow
		return nil, errRegionSize
	}
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("soft: mmap %d bytes: %w", n, err)
	}
	r := &region{c: c, mem: mem, size: size}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = syscall.Munmap(mem)
		return nil, errConnClosed
	}
	r.iova = c.nextIOVA
	c.nextIOVA += uint64(n) + uint64(pageSize) // a guard page between regions
	c.regions[r] = struct{}{}
	c.p.registered.Add(int64(size))
	c.mu.Unlock()
	return r, nil
}

// RegisterRegion registers p, the caller's memory, as a region
// (verbs.Registrar): the peer's RDMA Writes through a window bound to it
// copy straight into p.
func (c *conn) RegisterRegion(p []byte) (verbs.Region, error) {
	if len(p) == 0 {
		return nil, errRegionSize
	}
	r := &region{c: c, mem: p, size: len(p), user: true}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errConnClosed
	}
	r.iova = c.nextIOVA
	n := (len(p) + pageSize - 1) / pageSize * pageSize
	c.nextIOVA += uint64(n) + uint64(pageSize)
	c.regions[r] = struct{}{}
	c.p.registered.Add(int64(r.size))
	return r, nil
}

var _ verbs.Registrar = (*conn)(nil)

// AllocWindow allocates an unbound type 2 memory window. Its index (the
// upper 24 bits of its rkeys) is drawn at random among those the
// connection does not use, and so is its first key byte, so that the
// peer cannot guess one window's rkeys from another's.
func (c *conn) AllocWindow() (verbs.Window, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errConnClosed
	}
	if len(c.windows) >= maxWindows {
		return nil, errNoWindows
	}
	var index uint32
	for {
		index = rand.Uint32N(maxWindows) + 1 // 0 is never an index
		if _, used := c.windows[index]; !used {
			break
		}
	}
	w := &window{c: c, index: index}
	w.rkey = index<<8 | uint32(rand.N[uint8](255)+1)
	w.userRKey.Store(w.rkey)
	c.windows[w.index] = w
	return w, nil
}

// maxWindows is the number of window indexes: 24 bits, less index 0.
const maxWindows = 1<<24 - 1

func (c *conn) closeWindow(w *window) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.state == windowClosed {
		return nil
	}
	if w.state == windowValid {
		w.region.bound--
		w.region = nil
		w.endBindingLocked()
	}
	w.state = windowClosed
	delete(c.windows, w.index)
	return nil
}

func (c *conn) closeRegion(r *region) error {
	c.memMu.Lock()
	defer c.memMu.Unlock()
	c.mu.Lock()
	if r.closed.Load() {
		c.mu.Unlock()
		return nil
	}
	if r.bound > 0 {
		c.mu.Unlock()
		return errRegionBusy
	}
	r.closed.Store(true)
	delete(c.regions, r)
	c.p.registered.Add(-int64(r.size))
	c.mu.Unlock()
	return r.release()
}

// freeMemory unmaps every region and frees every window of the
// connection. Close calls it once the reader and writer have stopped.
func (c *conn) freeMemory() error {
	c.memMu.Lock()
	defer c.memMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.windows {
		w.state = windowClosed
		w.region = nil
	}
	clear(c.windows)
	var errs []error
	for r := range c.regions {
		r.closed.Store(true)
		r.bound = 0
		c.p.registered.Add(-int64(r.size))
		if err := r.release(); err != nil {
			errs = append(errs, err)
		}
	}
	clear(c.regions)
	return errors.Join(errs...)
}

// checkSGL validates a scatter/gather list against this connection's
// regions (the lkey check of a real NIC) and returns its total length; ok
// is false if an element names a foreign or closed region or lies outside
// its region. PostSend checks the total against MaxMessageSize. Called
// with c.mu held.
func (c *conn) checkSGL(sgl []verbs.SGE) (total int, ok bool) {
	for _, s := range sgl {
		r, isRegion := s.Region.(*region)
		if !isRegion || r == nil || r.c != c || r.closed.Load() ||
			s.Offset < 0 || s.Length < 0 || s.Offset > r.size-s.Length {
			return 0, false
		}
		total += s.Length // at most maxSGE region sizes: no overflow
	}
	return total, true
}

// bindLocked executes an OpBindWindow: the checks are those of rxe_bind_mw
// for a type 2 window (o10-37.2.30: the window must be free; o10-37.2.40:
// the length must not be zero; C10-75: the range must lie in the region).
func (c *conn) bindLocked(e *sqEntry) bool {
	w := e.window
	if w == nil || w.state != windowFree {
		return false
	}
	r, isRegion := e.bind.Region.(*region)
	if !isRegion || r == nil || r.c != c || r.closed.Load() || e.bind.Length <= 0 ||
		e.bind.Offset < 0 || e.bind.Offset > r.size-e.bind.Length ||
		e.access&^(verbs.AccessRemoteRead|verbs.AccessRemoteWrite) != 0 {
		return false
	}
	w.rkey = e.newRKey
	w.state = windowValid
	w.region = r
	w.off = e.bind.Offset
	w.length = e.bind.Length
	w.addr = r.Addr(e.bind.Offset)
	w.access = e.access
	r.bound++
	return true
}

// invalidateLocked invalidates the window named by rkey, locally
// (OpLocalInvalidate) or for the peer's Send With Invalidate. As in
// rxe_invalidate_mw, the rkey must be the window's current one; a window
// that is already free stays free.
func (c *conn) invalidateLocked(rkey uint32) bool {
	w := c.windows[rkey>>8]
	if w == nil || w.rkey != rkey {
		return false
	}
	if w.state == windowValid {
		w.region.bound--
		w.region = nil
		w.state = windowFree
		w.endBindingLocked()
	}
	return true
}

// endBindingLocked ends the window's current binding for the data movers:
// it waits for a chunk being copied through the window (a bounded copy
// between memory and a stream buffer, never I/O) and makes every later
// chunk of an access checked against the binding fail. Called with c.mu
// held.
func (w *window) endBindingLocked() {
	w.accessMu.Lock()
	w.gen++
	w.accessMu.Unlock()
}

// windowAccess is a remote access that passed the rkey check: the window
// and binding generation it was checked against, and where it lands.
type windowAccess struct {
	w   *window // nil for a zero-length access, which names no memory
	gen uint64
	r   *region
	off int
}

// lookupLocked checks a remote access of length bytes at addr under rkey
// needing the given right, as rxe_lookup_mw and the responder's bounds
// check do, and returns the window, its binding's generation, and the
// region and offset the access lands at.
func (c *conn) lookupLocked(rkey uint32, addr uint64, length uint32, need verbs.Access) (windowAccess, bool) {
	w := c.windows[rkey>>8]
	if w == nil || w.rkey != rkey || w.state != windowValid || w.access&need == 0 {
		return windowAccess{}, false
	}
	if addr < w.addr || uint64(length) > uint64(w.length) || addr-w.addr > uint64(w.length)-uint64(length) {
		return windowAccess{}, false
	}
	return windowAccess{w: w, gen: w.gen, r: w.region, off: w.off + int(addr-w.addr)}, true
}

// begin takes the window's access lock for one chunk of the access and
// reports whether the binding the access was checked against still holds.
// Call end after the chunk, whatever begin returned. An access without a
// window always holds.
func (a *windowAccess) begin() bool {
	if a.w == nil {
		return true
	}
	a.w.accessMu.RLock()
	return a.w.gen == a.gen
}

// end releases what begin took.
func (a *windowAccess) end() {
	if a.w != nil {
		a.w.accessMu.RUnlock()
	}
}
