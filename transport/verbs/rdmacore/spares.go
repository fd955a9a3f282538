//go:build linux && cgo

package rdmacore

/*
#include "cshim.h"
*/
import "C"

import (
	"sync"
	"syscall"
	"time"
)

// spare is a region kept registered after its connection closed without
// ever being established: its mapping, zeroed, and its memory region on
// dev's protection domain. It holds a reference to dev, so that the
// protection domain outlives it.
type spare struct {
	dev   *device
	mem   []byte
	size  int
	mr    *C.struct_ibv_mr
	lkey  uint32
	base  uint64
	since time.Time // when it became spare
}

// spareKey is what a spare can serve: an AllocRegion of size bytes by a
// connection on dev.
type spareKey struct {
	dev  *device
	size int
}

// sparePool holds the provider's spare regions, at most SpareLimit bytes
// of them, each for at most SpareIdle.
//
// Lock order: conn.mu, then sparePool.mu, then providerState.mu
// (closeDevice), which sparePool never holds while it deregisters.
type sparePool struct {
	mu sync.Mutex
	// free lists the spares of each key, oldest first; AllocRegion takes
	// the newest, so that the oldest age out.
	free  map[spareKey][]*spare
	bytes int64
	// timer runs trimSpares while the pool is not empty; nil when it is.
	timer *time.Timer
	// idleFor is how long a spare stays unused before it is freed; zero
	// means SpareIdle (tests set it with SetSpareIdle).
	idleFor time.Duration
}

// idle returns how long a spare stays unused before it is freed. Called
// with s.mu held.
func (s *sparePool) idle() time.Duration {
	if s.idleFor > 0 {
		return s.idleFor
	}
	return SpareIdle
}

// keepSpare makes r, a region of c, which closes without having been
// established, a spare, and reports whether it did; the caller frees a
// region not kept. A region of the caller's memory (RegisterRegion) is
// never kept, nor one that would take the pool over SpareLimit. c's queue
// pair is destroyed: nothing writes r any more. Called by c's free, which
// still holds its reference to c.dev.
func (p *Provider) keepSpare(c *conn, r *region) bool {
	if r.pin != nil || c.dev == nil || int64(r.size) > SpareLimit {
		return false
	}
	s := &p.state.spares
	s.mu.Lock()
	room := s.bytes+int64(r.size) <= SpareLimit
	if room {
		s.bytes += int64(r.size) // reserved while r is zeroed
	}
	s.mu.Unlock()
	if !room {
		return false
	}
	clear(r.mem) // the next connection sees nothing of this one's peer
	p.retainDevice(c.dev)
	sp := &spare{dev: c.dev, mem: r.mem, size: r.size, mr: r.mr, lkey: r.lkey, base: r.base, since: time.Now()}
	r.mr = nil
	r.closed.Store(true)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free == nil {
		s.free = make(map[spareKey][]*spare)
	}
	k := spareKey{c.dev, r.size}
	s.free[k] = append(s.free[k], sp)
	p.spareBytes.Store(s.bytes)
	if s.timer == nil {
		s.timer = time.AfterFunc(s.idle(), p.trimSpares)
	}
	return true
}

// takeSpare removes and returns the newest spare of size bytes on dev, or
// nil. The spare's reference to dev passes to the caller, which drops it
// (closeDevice) once its connection holds its own.
func (p *Provider) takeSpare(dev *device, size int) *spare {
	s := &p.state.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	k := spareKey{dev, size}
	list := s.free[k]
	if len(list) == 0 {
		return nil
	}
	sp := list[len(list)-1]
	list[len(list)-1] = nil
	if list = list[:len(list)-1]; len(list) == 0 {
		delete(s.free, k)
	} else {
		s.free[k] = list
	}
	s.bytes -= int64(size)
	p.spareBytes.Store(s.bytes)
	return sp
}

// trimSpares, run by the pool's timer, frees the spares unused for
// SpareIdle and arms the timer for the next one to age out, if any.
func (p *Provider) trimSpares() {
	s := &p.state.spares
	now := time.Now()
	var old []*spare
	var next time.Time
	s.mu.Lock()
	idle := s.idle()
	for k, list := range s.free {
		i := 0
		for i < len(list) && now.Sub(list[i].since) >= idle {
			old = append(old, list[i])
			s.bytes -= int64(list[i].size)
			i++
		}
		if i == len(list) {
			delete(s.free, k)
			continue
		}
		rest := append(list[:0], list[i:]...)
		clear(list[len(rest):])
		s.free[k] = rest
		if next.IsZero() || rest[0].since.Before(next) {
			next = rest[0].since
		}
	}
	p.spareBytes.Store(s.bytes)
	if next.IsZero() {
		s.timer = nil
	} else {
		s.timer = time.AfterFunc(next.Add(idle).Sub(now), p.trimSpares)
	}
	s.mu.Unlock()
	for _, sp := range old {
		p.freeSpare(sp)
	}
}

// freeSpare deregisters and unmaps sp and drops its reference to its
// device. If ibv_dereg_mr fails, the memory stays mapped and counted as
// registered, and the device referenced: the memory region still uses
// both.
func (p *Provider) freeSpare(sp *spare) {
	if rc := C.rc_dereg_mr(sp.mr); rc != 0 {
		return
	}
	p.registered.Add(-int64(sp.size))
	_ = syscall.Munmap(sp.mem)
	p.closeDevice(sp.dev)
}
