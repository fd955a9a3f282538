package transport

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Registered memory for chunks.
//
// A responder needs registered memory only while data moves: from the first
// RDMA Read of a call's Read chunks until the call is rebuilt (then the call
// is in the Go heap), and from the RDMA Writes of a reply until its Send
// completed. It takes buffers from its endpoint's pool for exactly that
// long, so that what a peer's chunks cost is bounded by the budgets of
// MemoryLimits and falls back after a burst, rather than one buffer per
// call slot that only grows: chunks a peer names cannot pin memory on an
// idle connection.

// Pool sizes: buffers are registered in multiples of chunkBufAlign, and a
// connection keeps idle for reuse at most one of them per call slot (a
// call, or a reply until its Send completes, holds at most one; without
// slots, maxCachedBufs), of at most its pool's maxIdle bytes together
// (2 × MaxRPCSize): steady traffic reuses them (no registration on the
// call path, even with every credit's reply in flight), and after a burst
// the rest is freed as it comes back. A pool that saw no use for poolTrimAfter frees
// its cache down to poolKeepIdle bytes, and after another such period the
// rest: an idle connection holds no chunk memory.
const (
	chunkBufAlign = 16 << 10
	maxCachedBufs = 16
	poolTrimAfter = time.Second
	poolKeepIdle  = 256 << 10
)

// chunkPool hands out registered buffers of one endpoint. Guarded by
// Conn.mu.
type chunkPool struct {
	vc      verbs.Conn
	maxIdle int
	maxBufs int            // most buffers cached (0: maxCachedBufs)
	cached  []verbs.Region // idle, oldest first
	idle    int            // bytes cached
	used    bool           // get was called since the last trim check
	// armTrim schedules a trim check (trimIdle) poolTrimAfter from now:
	// endpoint.armTrim. The pool arms it once, when it first caches a
	// buffer, and not again until a check finds nothing left to watch:
	// a check that finds something cached has its caller re-arm it. Re-arming on every put would move a timer,
	// and read the clock, on every RPC that moves a chunk.
	armTrim func()
	armed   bool // a trim check is scheduled
}

// get returns a registered buffer of at least n bytes: the smallest cached
// one that fits, or a new one.
func (p *chunkPool) get(n int) (verbs.Region, error) {
	size := (max(n, 1) + chunkBufAlign - 1) / chunkBufAlign * chunkBufAlign
	best := -1
	for i, r := range p.cached {
		if l := len(r.Bytes()); l >= size && (best < 0 || l < len(p.cached[best].Bytes())) {
			best = i
		}
	}
	p.used = true
	if best >= 0 {
		r := p.cached[best]
		p.cached = append(p.cached[:best], p.cached[best+1:]...)
		p.idle -= len(r.Bytes())
		return r, nil
	}
	r, err := p.vc.AllocRegion(size)
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: chunk memory: %w", err)
	}
	return r, nil
}

// put returns a buffer from get to the cache, freeing the oldest cached
// ones to make room, or frees it if it is larger than the whole cache.
func (p *chunkPool) put(r verbs.Region) {
	if r == nil {
		return
	}
	size := len(r.Bytes())
	if size == 0 || size > p.maxIdle {
		_ = r.Close()
		return
	}
	maxBufs := p.maxBufs
	if maxBufs <= 0 {
		maxBufs = maxCachedBufs
	}
	for len(p.cached) > 0 && (p.idle+size > p.maxIdle || len(p.cached) >= maxBufs) {
		old := p.cached[0]
		p.idle -= len(old.Bytes())
		_ = old.Close()
		p.cached = append(p.cached[:0], p.cached[1:]...)
	}
	p.cached = append(p.cached, r)
	p.idle += size
	if p.armTrim != nil && !p.armed {
		p.armed = true
		p.armTrim()
	}
}

// trimIdle is the trim check: if the pool was not used since the last
// check, it frees cached buffers, oldest first, down to poolKeepIdle
// bytes, or all of them if it held no more. It reports whether to check
// again, something being still cached (the caller re-arms); if not, the
// next put arms the check.
func (p *chunkPool) trimIdle() (again bool) {
	if !p.used {
		keep := poolKeepIdle
		if p.idle <= keep {
			keep = 0
		}
		for len(p.cached) > 0 && p.idle > keep {
			p.idle -= len(p.cached[0].Bytes())
			_ = p.cached[0].Close()
			p.cached = append(p.cached[:0], p.cached[1:]...)
		}
	}
	p.used = false
	p.armed = len(p.cached) > 0
	return p.armed
}

// budget bounds bytes in use: a connection's (guarded by Conn.mu) or, as
// sharedBudget, a listener's.
type budget struct {
	limit, used int
}

func (b *budget) fits(n int) bool { return b.used+n <= b.limit }

// sharedBudget is a budget of a Listener, shared by its connections.
//
// Half of it is kept for first shares: bytes a connection takes beyond
// its first floor bytes (one message, MaxRPCSize) must leave that half
// free. Connections whose calls or replies a peer never lets finish (a
// peer that stops answering our RDMA Reads or Writes, until the queue
// pair's retries run out) so hold all the extra bytes there are with a
// handful of connections, but each of the others still finds one
// message's worth: it takes as many stuck connections as half the budget
// holds messages to stop the others' large I/O, rather than budget ÷
// MemoryLimits.Calls of them.
//
// A connection that finds no room queues, first shares and extra bytes
// in queues of their own, each served in order: while connections wait in
// a queue, only its first may take bytes of that kind, so that none is
// starved by others that keep finding room first. The first of each is
// told (its retry runs on a goroutine of its own, never under the
// budget's lock) when bytes are released; once served, it tells the next.
type sharedBudget struct {
	mu      sync.Mutex
	b       budget
	floor   int // a connection's first share
	reserve int // bytes only first shares may take
	first   []budgetWaiter
	extra   []budgetWaiter
}

type budgetWaiter struct {
	c     *Conn
	retry func()
}

// newSharedBudget returns a budget of limit bytes whose first shares are
// of floor bytes.
func newSharedBudget(limit, floor int) *sharedBudget {
	return &sharedBudget{b: budget{limit: limit}, floor: floor, reserve: limit / 2}
}

// acquire takes n bytes for c, which holds held bytes of the budget, or
// queues c (once) with retry and fails.
func (s *sharedBudget) acquire(c *Conn, held, n int, retry func()) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	q, other, limit := &s.extra, &s.first, s.b.limit-s.reserve
	if held+n <= s.floor {
		q, other, limit = &s.first, &s.extra, s.b.limit
	}
	next := s.removeLocked(other, c)
	head := len(*q) > 0 && (*q)[0].c == c
	ok := (len(*q) == 0 || head) && s.b.used+n <= limit
	if ok {
		s.b.used += n
		if head {
			*q = append((*q)[:0], (*q)[1:]...)
			if len(*q) > 0 && s.b.used < limit {
				next = append(next, (*q)[0].retry)
			}
		}
	} else if !head && !queued(*q, c) {
		*q = append(*q, budgetWaiter{c, retry})
	}
	s.mu.Unlock()
	for _, f := range next {
		go f()
	}
	return ok
}

func queued(q []budgetWaiter, c *Conn) bool {
	for _, w := range q {
		if w.c == c {
			return true
		}
	}
	return false
}

// removeLocked takes c out of q and returns the retry of the new first
// waiter if c was first.
func (s *sharedBudget) removeLocked(q *[]budgetWaiter, c *Conn) []func() {
	for i, w := range *q {
		if w.c == c {
			*q = append((*q)[:i], (*q)[i+1:]...)
			if i == 0 && len(*q) > 0 {
				return []func(){(*q)[0].retry}
			}
			return nil
		}
	}
	return nil
}

// release gives back n bytes and tells the first waiting connection of
// each queue.
func (s *sharedBudget) release(n int) {
	if s == nil || n == 0 {
		return
	}
	s.mu.Lock()
	s.b.used -= n
	var next [2]func()
	if len(s.first) > 0 {
		next[0] = s.first[0].retry
	}
	if len(s.extra) > 0 {
		next[1] = s.extra[0].retry
	}
	s.mu.Unlock()
	for _, f := range next {
		if f != nil {
			go f()
		}
	}
}

// forget takes c out of the queues (it no longer waits: it is closing, or
// its own connection's budget is what it waits for), telling the next
// connection if c was first.
func (s *sharedBudget) forget(c *Conn) {
	if s == nil {
		return
	}
	s.mu.Lock()
	next := append(s.removeLocked(&s.first, c), s.removeLocked(&s.extra, c)...)
	s.mu.Unlock()
	for _, f := range next {
		go f()
	}
}

// inUse returns the bytes taken.
func (s *sharedBudget) inUse() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.used
}

// bufCache keeps Go heap buffers of messages for reuse, at most maxIdle
// bytes of them, so that a burst of large messages does not leave every call
// slot holding a large buffer. Guarded by Conn.mu.
type bufCache struct {
	maxIdle int
	bufs    [][]byte // idle, oldest first
	idle    int
}

// get returns an empty buffer with room for n bytes if one is cached: the
// smallest that fits; otherwise nil (append allocates).
func (b *bufCache) get(n int) []byte {
	best := -1
	for i, buf := range b.bufs {
		if cap(buf) >= n && (best < 0 || cap(buf) < cap(b.bufs[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	buf := b.bufs[best]
	b.bufs = slices.Delete(b.bufs, best, best+1)
	b.idle -= cap(buf)
	return buf[:0]
}

// put caches buf, dropping the oldest cached buffers to make room.
func (b *bufCache) put(buf []byte) {
	size := cap(buf)
	if size == 0 || size > b.maxIdle {
		return
	}
	for len(b.bufs) > 0 && len(b.bufs) == maxCachedBufs {
		b.trim(b.idle - cap(b.bufs[0]))
	}
	b.trim(b.maxIdle - size)
	b.bufs = append(b.bufs, buf[:0])
	b.idle += size
}

// trim drops cached buffers, oldest first, down to keep bytes; the slice
// keeps no reference to a dropped one (slices.Delete zeroes its tail).
func (b *bufCache) trim(keep int) {
	for len(b.bufs) > 0 && b.idle > keep {
		b.idle -= cap(b.bufs[0])
		b.bufs = slices.Delete(b.bufs, 0, 1)
	}
}
