//go:build linux && cgo

package rdmacore

/*
#include "cshim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"syscall"
	"time"
)

// rxeVendorID is the vendor_id rxe reports (RXE_VENDOR_ID).
const rxeVendorID = 0xffffff

// Deadlines of the netpoller-registered files.
var (
	noDeadline   time.Time
	aLongTimeAgo = time.Unix(1, 0)
)

// providerState is the provider's shared state: the event channel and
// the devices in use.
type providerState struct {
	mu      sync.Mutex
	ch      *eventChannel
	devices map[*C.struct_ibv_context]*device
	spares  sparePool
}

// device is an RDMA device (a verbs context opened by librdmacm) with the
// provider's protection domain on it, shared by the provider's
// connections on that device and released with the last one.
type device struct {
	ctx  *C.struct_ibv_context
	pd   *C.struct_ibv_pd
	attr C.struct_rc_devattr
	refs int
	// invalidateQuirk: Receive completions report a remote invalidation
	// with the kernel's IB_WC_WITH_INVALIDATE bit (1 << 2) instead of
	// IBV_WC_WITH_INV (1 << 3). rxe copies the kernel's wc_flags into the
	// completions of user-space queues unchanged; on other devices that
	// bit is IBV_WC_IP_CSUM_OK and says nothing about invalidation.
	invalidateQuirk bool
}

// openDevice returns the provider's device for ctx, with one more
// reference.
func (p *Provider) openDevice(ctx *C.struct_ibv_context) (*device, error) {
	if ctx == nil {
		return nil, fmt.Errorf("rdmacore: the cm_id has no device: %w", errNotBound)
	}
	s := &p.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.devices[ctx]; d != nil {
		d.refs++
		return d, nil
	}
	d := &device{ctx: ctx, refs: 1}
	if rc := C.rc_query_device(ctx, &d.attr); rc != 0 {
		return nil, fmt.Errorf("rdmacore: ibv_query_device: %w", syscall.Errno(rc))
	}
	var cerr C.int
	if d.pd = C.rc_alloc_pd(ctx, &cerr); d.pd == nil {
		return nil, fmt.Errorf("rdmacore: ibv_alloc_pd: %w", syscall.Errno(cerr))
	}
	d.invalidateQuirk = uint32(d.attr.vendor_id) == rxeVendorID
	if s.devices == nil {
		s.devices = make(map[*C.struct_ibv_context]*device)
	}
	s.devices[ctx] = d
	return d, nil
}

// retainDevice adds a reference to d, which the caller holds one of.
func (p *Provider) retainDevice(d *device) {
	s := &p.state
	s.mu.Lock()
	defer s.mu.Unlock()
	d.refs++
}

// closeDevice drops a reference to d; the last one frees its protection
// domain.
func (p *Provider) closeDevice(d *device) {
	s := &p.state
	s.mu.Lock()
	defer s.mu.Unlock()
	d.refs--
	if d.refs > 0 {
		return
	}
	delete(s.devices, d.ctx)
	C.rc_dealloc_pd(d.pd)
}
