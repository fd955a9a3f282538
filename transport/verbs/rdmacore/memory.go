//go:build linux && cgo

package rdmacore

/*
#include "cshim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// region is registered memory: an anonymous private mapping outside the Go
// heap (never moved, never scanned by the garbage collector), registered
// with ibv_reg_mr for local write and as the target of window binds
// (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND). Remote rights live on the
// windows bound to it, never on the region.
type region struct {
	c    *conn
	mem  []byte // the whole mapping, page-rounded
	size int
	mr   *C.struct_ibv_mr
	lkey uint32
	base uint64 // the mapping's virtual address: the iova of the MR
	// closed is set under c.mu; Bytes reads it without.
	closed atomic.Bool
	// pin is set for the caller's memory (RegisterRegion): it keeps the
	// Go object in place, and reachable, while the NIC may write it; the
	// region then unpins it instead of unmapping.
	pin *runtime.Pinner
}

// Bytes returns the region's memory, or nil once it is closed.
func (r *region) Bytes() []byte {
	if r.closed.Load() {
		return nil
	}
	return r.mem[:r.size:r.size]
}

// Addr returns the virtual address of byte off of the region, which is
// how the peer names it in RDMA Read and Write (the MR is registered at
// its virtual address).
func (r *region) Addr(off int) uint64 { return r.base + uint64(off) }

// Close deregisters and unmaps the region. It fails while a window is
// bound to it (IBA 10.6.7.2.6: ibv_dereg_mr fails, rxe_dereg_mr with
// EINVAL) and then leaves the region as it was.
func (r *region) Close() error {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.closed.Load() || c.idGone {
		return nil // the connection frees it
	}
	if rc := C.rc_dereg_mr(r.mr); rc != 0 {
		if rc == C.EINVAL || rc == C.EBUSY {
			return fmt.Errorf("%w: ibv_dereg_mr: %w", errRegionBusy, syscall.Errno(rc))
		}
		return fmt.Errorf("rdmacore: ibv_dereg_mr: %w", syscall.Errno(rc))
	}
	r.mr = nil
	delete(c.regions, r)
	c.p.registered.Add(-int64(r.size))
	return r.unmap()
}

// free deregisters and unmaps the region as its connection closes.
func (r *region) free() error {
	var err error
	if rc := C.rc_dereg_mr(r.mr); rc != 0 {
		err = fmt.Errorf("rdmacore: ibv_dereg_mr: %w", syscall.Errno(rc))
	}
	r.mr = nil
	r.c.p.registered.Add(-int64(r.size))
	return errors.Join(err, r.unmap())
}

func (r *region) unmap() error {
	r.closed.Store(true)
	if r.pin != nil {
		r.pin.Unpin()
		return nil
	}
	if err := syscall.Munmap(r.mem); err != nil {
		return fmt.Errorf("rdmacore: munmap: %w", err)
	}
	return nil
}

// pageSize is the mapping granularity.
var pageSize = os.Getpagesize()

// AllocRegion maps size bytes of anonymous memory, excluded from fork
// (MADV_DONTFORK: a child must not share, or copy on write, pages the NIC
// writes), and registers exactly size bytes of it; or it takes a spare
// region of that size on the connection's device (SpareLimit), zeroed.
func (c *conn) AllocRegion(size int) (verbs.Region, error) {
	if size <= 0 {
		return nil, errRegionSize
	}
	n := (size + pageSize - 1) / pageSize * pageSize
	if n < size { // overflow
		return nil, errRegionSize
	}
	c.mu.Lock()
	if c.closed || c.dev == nil {
		c.mu.Unlock()
		return nil, errConnClosed
	}
	if sp := c.p.takeSpare(c.dev, size); sp != nil {
		r := &region{c: c, mem: sp.mem, size: size, mr: sp.mr, lkey: sp.lkey, base: sp.base}
		c.regions[r] = struct{}{}
		c.mu.Unlock()
		c.p.closeDevice(sp.dev) // the spare's reference: c holds its own
		return r, nil
	}
	c.mu.Unlock()
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("rdmacore: mmap %d bytes: %w", n, err)
	}
	if err := syscall.Madvise(mem, syscall.MADV_DONTFORK); err != nil {
		_ = syscall.Munmap(mem)
		return nil, fmt.Errorf("rdmacore: madvise: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.dev == nil {
		_ = syscall.Munmap(mem)
		return nil, errConnClosed
	}
	var cerr C.int
	mr := C.rc_reg_mr(c.dev.pd, unsafe.Pointer(&mem[0]), C.size_t(size), &cerr)
	if mr == nil {
		_ = syscall.Munmap(mem)
		return nil, fmt.Errorf("rdmacore: ibv_reg_mr of %d bytes: %w", size, syscall.Errno(cerr))
	}
	r := &region{c: c, mem: mem, size: size, mr: mr, lkey: uint32(C.rc_mr_lkey(mr)), base: uint64(uintptr(unsafe.Pointer(&mem[0])))}
	c.regions[r] = struct{}{}
	c.p.registered.Add(int64(size))
	return r, nil
}

// RegisterRegion registers p, the caller's memory (verbs.Registrar): it
// pins p's Go object (runtime.Pinner: cgo lets C keep a pointer to pinned
// memory, and the garbage collector neither moves nor frees it) and
// registers exactly p with ibv_reg_mr for local write and window binds,
// as AllocRegion's regions are. The NIC then writes the peer's data
// straight into p. No MADV_DONTFORK: that works on whole pages, which p
// shares with other Go objects; a Go program forks only to exec, and
// kernels since 5.8 copy pinned pages for a forked child anyway.
func (c *conn) RegisterRegion(p []byte) (verbs.Region, error) {
	if len(p) == 0 {
		return nil, errRegionSize
	}
	pin := new(runtime.Pinner)
	pin.Pin(&p[0])
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.dev == nil {
		pin.Unpin()
		return nil, errConnClosed
	}
	var cerr C.int
	mr := C.rc_reg_mr(c.dev.pd, unsafe.Pointer(&p[0]), C.size_t(len(p)), &cerr)
	if mr == nil {
		pin.Unpin()
		return nil, fmt.Errorf("rdmacore: ibv_reg_mr of %d bytes of caller memory: %w", len(p), syscall.Errno(cerr))
	}
	r := &region{c: c, mem: p, size: len(p), mr: mr, lkey: uint32(C.rc_mr_lkey(mr)), base: uint64(uintptr(unsafe.Pointer(&p[0]))), pin: pin}
	c.regions[r] = struct{}{}
	c.p.registered.Add(int64(len(p)))
	return r, nil
}

var _ verbs.Registrar = (*conn)(nil)

// window is a type 2 memory window (ibv_alloc_mw(IBV_MW_TYPE_2)). Its rkey
// is what the last posted bind gave it (verbs.BindRKey of the previous one).
type window struct {
	c      *conn
	mw     *C.struct_ibv_mw
	rkey   atomic.Uint32
	closed bool // guarded by c.mu
}

// RKey returns the rkey of the last posted bind, or of the unbound window.
func (w *window) RKey() uint32 { return w.rkey.Load() }

// Close frees the window (ibv_dealloc_mw); its rkey stops working.
func (w *window) Close() error {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.closed || c.idGone {
		return nil
	}
	delete(c.windows, w)
	if rc := w.dealloc(); rc != 0 {
		return fmt.Errorf("rdmacore: ibv_dealloc_mw: %w", syscall.Errno(rc))
	}
	return nil
}

func (w *window) dealloc() C.int {
	w.closed = true
	return C.rc_dealloc_mw(w.mw)
}

// AllocWindow allocates an unbound type 2 memory window.
func (c *conn) AllocWindow() (verbs.Window, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.dev == nil {
		return nil, errConnClosed
	}
	var cerr C.int
	mw := C.rc_alloc_mw(c.dev.pd, &cerr)
	if mw == nil {
		return nil, fmt.Errorf("rdmacore: ibv_alloc_mw(IBV_MW_TYPE_2): %w", syscall.Errno(cerr))
	}
	w := &window{c: c, mw: mw}
	w.rkey.Store(uint32(C.rc_mw_rkey(mw)))
	c.windows[w] = struct{}{}
	return w, nil
}
