//go:build linux && cgo

package rdmacore

/*
#include "cshim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"net/netip"
	"syscall"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// resolveTimeoutMS bounds address and route resolution (rdma_resolve_addr,
// rdma_resolve_route), as the Linux RPC-over-RDMA client does.
const resolveTimeoutMS = 5000

// IB CM reject reasons (IBA 12.6.7.2) that Dial tells apart.
const (
	rejInvalidServiceID = 8  // nothing listens on the port
	rejConsumerDefined  = 28 // the listener rejected (rdma_reject)
)

// Dial connects to addr ("host:port") from p.LocalAddr, if set: it
// resolves the address and route (rdma_resolve_addr, rdma_resolve_route),
// creates the queue pair on the device they lead to, runs opts.Setup and
// connects (rdma_connect) with opts.PrivateData, read depth
// opts.Caps.ReadDepth each way, retry_count 6 and rnr_retry_count 0.
func (p *Provider) Dial(ctx context.Context, addr string, opts *verbs.ConnOptions) (verbs.Conn, error) {
	if opts == nil {
		opts = &verbs.ConnOptions{}
	}
	caps, err := opts.Check(false, maxCaps)
	if err != nil {
		return nil, fmt.Errorf("rdmacore: dial %s: %w", addr, err)
	}
	dst, err := parseHostPort(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("rdmacore: dial %s: %w", addr, err)
	}
	var src netip.Addr
	if p.LocalAddr != "" {
		if src, err = netip.ParseAddr(p.LocalAddr); err != nil {
			return nil, fmt.Errorf("rdmacore: Provider.LocalAddr: %w", err)
		}
	}
	c := newConn(p, caps, stateResolving)
	if c.cm, err = p.newCMID(c); err != nil {
		return nil, err
	}
	if err := c.dial(ctx, src, dst, opts); err != nil {
		_ = c.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rdmacore: dial %s: %w", addr, ctx.Err())
		}
		return nil, fmt.Errorf("rdmacore: dial %s: %w", addr, err)
	}
	return c, nil
}

func (c *conn) dial(ctx context.Context, src netip.Addr, dst netip.AddrPort, opts *verbs.ConnOptions) error {
	sb, sn := ipBytes(src)
	db, dn := ipBytes(dst.Addr())
	if rc := C.rc_resolve_addr(c.cm.id, cBytes(sb[:sn]), C.int(sn), cBytes(db[:dn]), C.int(dn), C.uint16_t(dst.Port()), resolveTimeoutMS); rc != 0 {
		return fmt.Errorf("rdma_resolve_addr: %w", syscall.Errno(rc))
	}
	if err := c.expect(ctx, evAddrResolved); err != nil {
		return err
	}
	if rc := C.rc_resolve_route(c.cm.id, resolveTimeoutMS); rc != 0 {
		return fmt.Errorf("rdma_resolve_route: %w", syscall.Errno(rc))
	}
	if err := c.expect(ctx, evRouteResolved); err != nil {
		return err
	}
	if err := c.openQueues(); err != nil {
		return err
	}
	if err := c.runSetup(opts); err != nil {
		return err
	}
	a := &c.dev.attr
	initiator := min(c.caps.ReadDepth, int(a.max_qp_init_rd_atom))
	responder := min(c.caps.ReadDepth, int(a.max_qp_rd_atom))
	pd := opts.PrivateData
	if rc := C.rc_connect(c.cm.id, cBytesVoid(pd), C.int(len(pd)), C.int(responder), C.int(initiator)); rc != 0 {
		return fmt.Errorf("rdma_connect: %w", syscall.Errno(rc))
	}
	ev, err := c.await(ctx)
	if err != nil {
		return err
	}
	switch ev.typ {
	case evEstablished:
		return nil
	case evRejected:
		if ev.status == rejConsumerDefined {
			return &verbs.RejectedError{PrivateData: padPrivateData(ev.privateData, verbs.RejectPrivateDataLen)}
		}
		return fmt.Errorf("%w (RDMA_CM_EVENT_REJECTED, IB CM reason %d)", verbs.ErrRefused, ev.status)
	}
	return fmt.Errorf("RDMA_CM_EVENT_%s (status %d): %w", cmEventName(ev.typ), ev.status, verbs.ErrDisconnected)
}

// expect waits for the next CM event of the handshake and fails unless it
// is want.
func (c *conn) expect(ctx context.Context, want int) error {
	ev, err := c.await(ctx)
	if err != nil {
		return err
	}
	if ev.typ != want {
		return fmt.Errorf("RDMA_CM_EVENT_%s (status %d), want %s: %w", cmEventName(ev.typ), ev.status, cmEventName(want), eventErrno(ev.status))
	}
	return nil
}

// eventErrno is the errno of a failed event's status (librdmacm reports
// resolution failures as -errno).
func eventErrno(status int) error {
	if status < 0 {
		return syscall.Errno(-status)
	}
	return verbs.ErrDisconnected
}

// cBytesVoid returns b as the const void * of private data (nil if empty).
// C copies it during the call and keeps no reference.
func cBytesVoid(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
