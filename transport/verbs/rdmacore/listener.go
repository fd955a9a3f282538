//go:build linux && cgo

package rdmacore

/*
#include "cshim.h"
*/
import "C"

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// listenBacklog is the rdma_listen backlog, and the number of connection
// requests a listener queues for Accept; requests beyond it are rejected
// at once, on the event channel goroutine, which so never blocks and
// spends no goroutine on a request. A request queued holds its cm_id
// only: the queue pair is created by Accept, whose context bounds the
// wait for the peer's RTU.
const listenBacklog = 128

// reqMaxAge is how long a queued request stays acceptable: one that
// waited longer is rejected by Accept instead of returned, its dialer
// having given up (the soft provider's handshake timeout; Linux's
// rdma_connect retries its REQ for about as long).
const reqMaxAge = 30 * time.Second

// Listen binds a cm_id to addr ("host:port"; port 0 picks one, an empty
// host listens on every RDMA device) and listens (rdma_listen).
func (p *Provider) Listen(addr string) (verbs.Listener, error) {
	ap, err := parseHostPort(context.Background(), addr)
	if err != nil {
		return nil, fmt.Errorf("rdmacore: listen %s: %w", addr, err)
	}
	l := &listener{p: p, reqs: make(chan *connRequest, listenBacklog), done: make(chan struct{})}
	if l.cm, err = p.newCMID(l); err != nil {
		return nil, err
	}
	ib, n := ipBytes(ap.Addr())
	if rc := C.rc_bind_addr(l.cm.id, cBytes(ib[:n]), C.int(n), C.uint16_t(ap.Port())); rc != 0 {
		p.destroyCMID(l.cm)
		return nil, fmt.Errorf("rdmacore: listen %s: rdma_bind_addr: %w", addr, bindError(syscall.Errno(rc)))
	}
	if rc := C.rc_listen(l.cm.id, listenBacklog); rc != 0 {
		p.destroyCMID(l.cm)
		return nil, fmt.Errorf("rdmacore: listen %s: rdma_listen: %w", addr, syscall.Errno(rc))
	}
	l.addr = tcpAddr(func(ip *C.uint8_t, port *C.uint16_t) C.int { return C.rc_local_addr(l.cm.id, ip, port) })
	return l, nil
}

// bindError explains rdma_bind_addr's failure for an address no RDMA
// device has.
func bindError(errno syscall.Errno) error {
	if errno == syscall.EADDRNOTAVAIL || errno == syscall.ENODEV {
		return fmt.Errorf("no RDMA device has this address: %w (%w)", errno, verbs.ErrNotSupported)
	}
	return errno
}

// listener is a listening cm_id. Connection requests arrive on the
// provider's event channel goroutine, which queues them for Accept.
type listener struct {
	p    *Provider
	cm   cmID
	addr *net.TCPAddr
	reqs chan *connRequest
	done chan struct{}

	mu     sync.Mutex
	closed bool
}

var _ verbs.Listener = (*listener)(nil)

// cmEvent queues a connection request, or rejects it if the listener is
// closed or its queue is full.
func (l *listener) cmEvent(ev *cmEvent) {
	if ev.typ != evConnectRequest {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		C.rc_reject(ev.id, nil, 0)
		C.rc_destroy_id(ev.id)
		return
	}
	r := newConnRequest(l, ev)
	select {
	case l.reqs <- r:
	default:
		_ = r.Reject(nil)
	}
}

// Accept returns the next connection request (older ones first; see
// reqMaxAge).
func (l *listener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	select {
	case <-l.done:
		return nil, errListenerClosed
	default:
	}
	for {
		select {
		case r := <-l.reqs:
			if time.Since(r.queued) > reqMaxAge {
				_ = r.Reject(nil)
				continue
			}
			return r, nil
		case <-l.done:
			return nil, errListenerClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Addr returns the listening address (with the port rdma_bind_addr chose).
func (l *listener) Addr() net.Addr { return l.addr }

// Close stops listening and rejects the requests nobody accepted.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	l.mu.Unlock()
	l.p.destroyCMID(l.cm)
	for {
		select {
		case r := <-l.reqs:
			_ = r.Reject(nil)
		default:
			return nil
		}
	}
}

// connRequest is a connection request: a new cm_id, and the connection
// that will own it if it is accepted.
type connRequest struct {
	c      *conn
	pd     []byte // as delivered: 56 bytes
	remote *net.TCPAddr
	local  *net.TCPAddr // the address the request was sent to
	// The peer's conn param: what it can take and what it wants.
	peerResponder, peerInitiator int
	queued                       time.Time // when the event arrived

	mu   sync.Mutex
	used bool
}

var _ verbs.ConnRequest = (*connRequest)(nil)

func newConnRequest(l *listener, ev *cmEvent) *connRequest {
	c := newConn(l.p, verbs.QueueCaps{}, stateRequested)
	c.cm = l.p.adoptCMID(l.cm.ch, ev.id, c)
	c.peerPD = padPrivateData(ev.privateData, verbs.ConnectPrivateDataLen)
	c.readAddrsLocked()
	// The CM reports a request's conn param from the passive side's point
	// of view (the IB CM swaps the REQ's fields, cm_format_req_event, and
	// librdmacm takes them so): initiator_depth is the peer's responder
	// resources, the most RDMA Reads we may have outstanding towards it;
	// responder_resources is the peer's initiator depth. The Linux NFS
	// client offers responder resources and an initiator depth of 0: read
	// unswapped, our initiator depth became 0 and rxe stalled every RDMA
	// Read (of a WRITE's Read chunk) forever.
	return &connRequest{
		c:             c,
		pd:            c.peerPD,
		remote:        c.remote,
		local:         c.local,
		peerResponder: int(ev.initiatorDepth),
		peerInitiator: int(ev.responderResources),
		queued:        time.Now(),
	}
}

// PrivateData returns the connect request's private data as delivered.
func (r *connRequest) PrivateData() []byte { return bytes.Clone(r.pd) }

// RemoteAddr returns the requester's address.
func (r *connRequest) RemoteAddr() net.Addr { return r.remote }

// LocalAddr returns the address the request was sent to.
func (r *connRequest) LocalAddr() net.Addr {
	if r.local == nil {
		return nil
	}
	return r.local
}

// take marks the request used.
func (r *connRequest) take() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used {
		return errRequestUsed
	}
	r.used = true
	return nil
}

// Accept creates the queue pair, runs opts.Setup and accepts (rdma_accept)
// with opts.PrivateData and read depths that the peer can take: our
// initiator depth at most its responder resources and the other way
// round. It returns once the connection is established (the peer's RTU).
// A failing Setup rejects the request.
func (r *connRequest) Accept(ctx context.Context, opts *verbs.ConnOptions) (verbs.Conn, error) {
	if opts == nil {
		opts = &verbs.ConnOptions{}
	}
	caps, err := opts.Check(true, maxCaps)
	if err != nil {
		return nil, fmt.Errorf("rdmacore: accept: %w", err)
	}
	if err := r.take(); err != nil {
		return nil, err
	}
	c := r.c
	c.caps = caps
	if err := c.accept(ctx, opts, r.peerResponder, r.peerInitiator); err != nil {
		_ = c.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rdmacore: accept: %w", ctx.Err())
		}
		return nil, fmt.Errorf("rdmacore: accept: %w", err)
	}
	return c, nil
}

func (c *conn) accept(ctx context.Context, opts *verbs.ConnOptions, peerResponder, peerInitiator int) error {
	if err := c.openQueues(); err != nil {
		C.rc_reject(c.cm.id, nil, 0)
		return err
	}
	if err := c.runSetup(opts); err != nil {
		C.rc_reject(c.cm.id, nil, 0)
		return err
	}
	a := &c.dev.attr
	initiator := min(c.caps.ReadDepth, peerResponder, int(a.max_qp_init_rd_atom))
	responder := min(c.caps.ReadDepth, peerInitiator, int(a.max_qp_rd_atom))
	pd := opts.PrivateData
	if rc := C.rc_accept(c.cm.id, cBytesVoid(pd), C.int(len(pd)), C.int(responder), C.int(initiator)); rc != 0 {
		return fmt.Errorf("rdma_accept: %w", syscall.Errno(rc))
	}
	ev, err := c.await(ctx)
	if err != nil {
		return err
	}
	if ev.typ != evEstablished {
		return fmt.Errorf("RDMA_CM_EVENT_%s (status %d): %w", cmEventName(ev.typ), ev.status, verbs.ErrDisconnected)
	}
	return nil
}

// Reject refuses the request with privateData (at most 148 bytes), and
// destroys its cm_id.
func (r *connRequest) Reject(privateData []byte) error {
	if len(privateData) > verbs.RejectPrivateDataLen {
		return errRejectPrivateData
	}
	if err := r.take(); err != nil {
		return err
	}
	rc := C.rc_reject(r.c.cm.id, cBytesVoid(privateData), C.int(len(privateData)))
	_ = r.c.Close()
	if rc != 0 {
		return fmt.Errorf("rdmacore: rdma_reject: %w", syscall.Errno(rc))
	}
	return nil
}
