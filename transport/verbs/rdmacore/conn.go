//go:build linux && cgo

package rdmacore

/*
#include <stdlib.h>
#include "cshim.h"
*/
import "C"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// maxCaps are the device-independent limits of the provider's queues;
// openQueues checks the device's.
var maxCaps = verbs.QueueCaps{SendQueue: 1 << 16, RecvQueue: 1 << 16, MaxSGE: 32, ReadDepth: 255}

// pollBatch is the most completions one ibv_poll_cq call returns.
const pollBatch = 32

// recvBit marks the wr_id of a Receive; the other bits are the request's
// sequence number on its queue.
const recvBit = 1 << 63

type connState uint8

const (
	stateResolving   connState = iota // Dial: resolving the address and route
	stateRequested                    // a connection request not yet accepted
	stateSetup                        // the queue pair exists, Setup runs
	stateConnecting                   // connect or accept sent, waiting for ESTABLISHED
	stateEstablished                  // RTS
	stateFailed                       // the queue pair is (or will be) in the error state
)

// sendSlot remembers a posted send work request until its completion is
// polled: the completion's wr_id names the slot, and the slot gives the
// user's ID and opcode (a failed completion's opcode is undefined).
type sendSlot struct {
	seq     uint64
	id      uint64
	op      verbs.Opcode
	length  int     // of an RDMA Read: the completion's ByteLen
	win     *window // of a bind: the window, to undo a bind that was not posted
	oldRKey uint32
}

type recvSlot struct {
	seq uint64
	id  uint64
}

// conn is one RC connection: a cm_id with its queue pair, completion
// queue and completion channel, on the provider's protection domain for
// the device.
//
// Everything is guarded by mu, including the calls into libibverbs that
// use the connection's C buffers, except ibv_post_send, which runs under
// sendMu alone (see PostSend); the event channel's goroutine takes mu
// for the connection's CM events. A Wait parks on the completion
// channel's fd outside mu, holding waitSem.
type conn struct {
	p    *Provider
	cm   cmID
	caps verbs.QueueCaps

	// Created by openQueues before the connection is visible to
	// anyone but Setup; freed by Close.
	dev  *device
	cc   *C.struct_ibv_comp_channel
	cq   *C.struct_ibv_cq
	qp   *C.struct_ibv_qp
	file *os.File // the completion channel's fd, on the netpoller
	rc   syscall.RawConn

	// C memory reused for every batch: the work requests as Go writes
	// them, the ibv_send_wr/ibv_recv_wr chains C builds from them, their
	// scatter/gather elements, and the completions of one poll.
	wrIn    []C.struct_rc_wr
	sendWR  []C.struct_ibv_send_wr
	sendSGE []C.struct_ibv_sge
	rwrIn   []C.struct_rc_rwr
	recvWR  []C.struct_ibv_recv_wr
	recvSGE []C.struct_ibv_sge
	wc      []C.struct_ibv_wc
	wcOut   []C.struct_rc_wc

	// events passes CM events to the goroutine running the handshake.
	events chan *cmEvent

	// sendMu serializes PostSend and guards the send C buffers (wrIn,
	// sendWR, sendSGE) and sqSeq; it is taken before mu, and held
	// without mu during ibv_post_send.
	sendMu sync.Mutex

	mu           sync.Mutex
	state        connState
	closed       bool
	err          error
	done         chan struct{}
	disconnected bool // rdma_disconnect was called
	idGone       bool // the cm_id is being destroyed
	// established is set when the connection reaches stateEstablished;
	// free keeps the regions of a connection that never did as spares.
	established bool

	sq    []sendSlot
	sqSeq uint64 // sequence number of the next send work request
	sqOut int    // posted and not yet polled
	rq    []recvSlot
	rqSeq uint64
	rqOut int
	// stash holds a completion Wait took from the completion queue to
	// see whether one was there after arming it.
	stash   [1]verbs.Completion
	stashed bool
	arms    int // ibv_req_notify_cq calls (a system call each on rxe): for the tests

	regions map[*region]struct{}
	windows map[*window]struct{}

	waitSem chan struct{} // held by the one Wait that may park
	spin    spinPolicy    // how long Wait polls first; guarded by waitSem
	woken   bool          // the completion fd's deadline was set to wake Wait
	// Guarded by waitSem: the context whose end wakes Wait (its Done
	// channel, and the stop function of its context.AfterFunc).
	waitDone <-chan struct{}
	waitStop func() bool
	// Method values made once, so that Wait does not allocate them.
	wakeFn    func()
	readEvent func(uintptr) bool

	peerPD        []byte
	local, remote *net.TCPAddr
}

var _ verbs.Conn = (*conn)(nil)

// newConn returns a connection in state, without a cm_id yet.
func newConn(p *Provider, caps verbs.QueueCaps, state connState) *conn {
	c := &conn{
		p:       p,
		caps:    caps,
		events:  make(chan *cmEvent, 8),
		state:   state,
		done:    make(chan struct{}),
		regions: make(map[*region]struct{}),
		windows: make(map[*window]struct{}),
		waitSem: make(chan struct{}, 1),
		spin:    newSpinPolicy(p.pollBeforeWait(), p.pollBeforeWaitMax()),
	}
	c.wakeFn = c.wake
	c.readEvent = c.getEvent
	return c
}

// openQueues creates the queue pair and what it needs, once the cm_id is
// bound to a device: the device's protection domain, a completion channel
// whose fd the netpoller watches, one completion queue for both queues
// (sized so that it never overflows: every work request is signaled and
// at most SendQueue + RecvQueue are outstanding), and the C buffers.
func (c *conn) openQueues() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.p.openDevice(C.rc_id_verbs(c.cm.id))
	if err != nil {
		return err
	}
	c.dev = d
	a := &d.attr
	q := c.caps
	if q.SendQueue > int(a.max_qp_wr) || q.RecvQueue > int(a.max_qp_wr) || q.MaxSGE > int(a.max_sge) ||
		q.SendQueue+q.RecvQueue > int(a.max_cqe) {
		return fmt.Errorf("%w (device limits: %d work requests, %d SGEs, %d CQEs)", errCaps, a.max_qp_wr, a.max_sge, a.max_cqe)
	}
	var cerr C.int
	if c.cc = C.rc_create_comp_channel(d.ctx, &cerr); c.cc == nil {
		return fmt.Errorf("rdmacore: ibv_create_comp_channel: %w", syscall.Errno(cerr))
	}
	if c.file, err = pollable(int(C.rc_comp_channel_fd(c.cc)), "ibv_comp_channel"); err != nil {
		return fmt.Errorf("rdmacore: completion channel: %w", err)
	}
	if c.rc, err = c.file.SyscallConn(); err != nil {
		return fmt.Errorf("rdmacore: completion channel: %w", err)
	}
	if c.cq = C.rc_create_cq(d.ctx, C.int(q.SendQueue+q.RecvQueue), c.cc, &cerr); c.cq == nil {
		return fmt.Errorf("rdmacore: ibv_create_cq: %w", syscall.Errno(cerr))
	}
	if rc := C.rc_create_qp(c.cm.id, d.pd, c.cq, C.int(q.SendQueue), C.int(q.RecvQueue), C.int(q.MaxSGE)); rc != 0 {
		return fmt.Errorf("rdmacore: rdma_create_qp: %w", syscall.Errno(rc))
	}
	c.qp = C.rc_id_qp(c.cm.id)
	ok := true
	alloc := func(n int, size uintptr) unsafe.Pointer {
		p := C.calloc(C.size_t(max(n, 1)), C.size_t(size))
		if p == nil {
			ok = false
		}
		return p
	}
	sgeSize := unsafe.Sizeof(C.struct_ibv_sge{})
	c.wrIn = cSlice[C.struct_rc_wr](alloc(q.SendQueue, unsafe.Sizeof(C.struct_rc_wr{})), q.SendQueue)
	c.sendWR = cSlice[C.struct_ibv_send_wr](alloc(q.SendQueue, unsafe.Sizeof(C.struct_ibv_send_wr{})), q.SendQueue)
	c.sendSGE = cSlice[C.struct_ibv_sge](alloc(q.SendQueue*q.MaxSGE, sgeSize), q.SendQueue*q.MaxSGE)
	c.rwrIn = cSlice[C.struct_rc_rwr](alloc(q.RecvQueue, unsafe.Sizeof(C.struct_rc_rwr{})), q.RecvQueue)
	c.recvWR = cSlice[C.struct_ibv_recv_wr](alloc(q.RecvQueue, unsafe.Sizeof(C.struct_ibv_recv_wr{})), q.RecvQueue)
	c.recvSGE = cSlice[C.struct_ibv_sge](alloc(q.RecvQueue*q.MaxSGE, sgeSize), q.RecvQueue*q.MaxSGE)
	c.wc = cSlice[C.struct_ibv_wc](alloc(pollBatch, unsafe.Sizeof(C.struct_ibv_wc{})), pollBatch)
	c.wcOut = cSlice[C.struct_rc_wc](alloc(pollBatch, unsafe.Sizeof(C.struct_rc_wc{})), pollBatch)
	if !ok {
		return fmt.Errorf("rdmacore: allocating work request buffers: %w", syscall.ENOMEM)
	}
	c.sq = make([]sendSlot, q.SendQueue)
	c.rq = make([]recvSlot, q.RecvQueue)
	return nil
}

// cSlice views n elements of C memory at p (nil if p is nil).
func cSlice[T any](p unsafe.Pointer, n int) []T {
	if p == nil {
		return nil
	}
	return unsafe.Slice((*T)(p), max(n, 1))[:n:max(n, 1)]
}

// cFree frees the C memory behind s.
func cFree[T any](s []T) {
	if cap(s) > 0 {
		C.free(unsafe.Pointer(unsafe.SliceData(s)))
	}
}

// runSetup moves the connection to stateSetup and runs opts.Setup.
func (c *conn) runSetup(opts *verbs.ConnOptions) error {
	c.mu.Lock()
	c.state = stateSetup
	c.mu.Unlock()
	if opts.Setup != nil {
		if err := opts.Setup(c); err != nil {
			return fmt.Errorf("rdmacore: setup: %w", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errConnClosed
	}
	c.state = stateConnecting
	return nil
}

// await returns the next CM event of the handshake.
func (c *conn) await(ctx context.Context) (*cmEvent, error) {
	select {
	case ev := <-c.events:
		return ev, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// cmEvent handles an event of the connection's cm_id (on the event
// channel's goroutine): during the handshake it goes to await; once
// established, a disconnect (the peer's rdma_disconnect, or the IB CM
// giving up on it), a device removal or an address change fails the
// connection.
func (c *conn) cmEvent(ev *cmEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idGone {
		return
	}
	switch c.state {
	case stateEstablished:
		switch ev.typ {
		case evDisconnected:
			c.failLocked(errPeerDisconnected)
		case evDeviceRemoval:
			c.failLocked(errDeviceRemoved)
		case evAddrChange:
			c.failLocked(errAddrChange)
		}
		return
	case stateFailed:
		if ev.typ == evDisconnected && !c.closed {
			c.disconnectLocked() // answer the peer's DREQ
		}
		return
	case stateConnecting:
		if ev.typ == evEstablished {
			c.state = stateEstablished
			c.established = true
			if c.peerPD == nil { // the active side: the accept's private data
				c.peerPD = padPrivateData(ev.privateData, verbs.AcceptPrivateDataLen)
			}
			c.readAddrsLocked()
		}
	}
	select {
	case c.events <- ev:
	default:
	}
}

// readAddrsLocked records the cm_id's addresses.
func (c *conn) readAddrsLocked() {
	c.local = tcpAddr(func(ip *C.uint8_t, port *C.uint16_t) C.int { return C.rc_local_addr(c.cm.id, ip, port) })
	c.remote = tcpAddr(func(ip *C.uint8_t, port *C.uint16_t) C.int { return C.rc_peer_addr(c.cm.id, ip, port) })
}

// failLocked moves the connection to the error state: Done closes, Wait
// wakes, and, if it was established, rdma_disconnect moves the queue pair
// to the error state (flushing every outstanding work request and
// Receive) and tells the peer, whose queue pair may not know (rxe: an RNR
// or an access error fails one side only).
func (c *conn) failLocked(cause error) {
	if c.state == stateFailed {
		return
	}
	established := c.state == stateEstablished
	c.state = stateFailed
	c.err = cause
	close(c.done)
	if established {
		c.disconnectLocked()
	}
	c.wakeLocked()
}

func (c *conn) disconnectLocked() {
	if c.disconnected || c.idGone {
		return
	}
	c.disconnected = true
	C.rc_disconnect(c.cm.id)
}

// PeerPrivateData returns the peer's private data as delivered.
func (c *conn) PeerPrivateData() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.peerPD)
}

// Done is closed when the connection fails or is closed.
func (c *conn) Done() <-chan struct{} { return c.done }

// Err tells why the connection is down, or returns nil.
func (c *conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// LocalAddr returns the local address of the cm_id.
func (c *conn) LocalAddr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.local == nil {
		return &net.TCPAddr{}
	}
	return c.local
}

// RemoteAddr returns the peer's address.
func (c *conn) RemoteAddr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.remote == nil {
		return &net.TCPAddr{}
	}
	return c.remote
}

// Close disconnects (rdma_disconnect), waits for a parked Wait to leave,
// and destroys the windows, queue pair, regions, completion queue and
// channel and the cm_id, in that order.
func (c *conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.failLocked(errConnClosed)
	file := c.file
	c.mu.Unlock()
	if file != nil {
		_ = file.Close() // a parked Wait returns
	}
	c.waitSem <- struct{}{}
	defer func() { <-c.waitSem }()
	if c.waitStop != nil {
		c.waitStop()
		c.waitStop, c.waitDone = nil, nil
	}
	return c.free()
}

// free destroys everything the connection holds.
func (c *conn) free() error {
	// A PostSend that got past its check of c.closed may still be in
	// ibv_post_send: wait for it before the queue pair and the C
	// buffers go.
	c.sendMu.Lock()
	//lint:ignore SA2001 an empty critical section: a barrier
	c.sendMu.Unlock()
	c.mu.Lock()
	c.idGone = true
	regions, windows := c.regions, c.windows
	c.regions, c.windows = nil, nil
	spares := !c.established
	c.mu.Unlock()

	var errs []error
	// Windows first: rxe holds a reference on the queue pair for every
	// bound type 2 window (rxe_bind_mw) and rxe_destroy_qp waits for them
	// (a kernel warning after a long timeout).
	for w := range windows {
		w.dealloc()
	}
	if c.qp != nil {
		C.rc_destroy_qp(c.cm.id)
	}
	// The queue pair is gone: nothing writes the regions any more. Those
	// of a connection that was never established become spares.
	for r := range regions {
		if spares && c.p.keepSpare(c, r) {
			continue
		}
		if err := r.free(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.cq != nil {
		if rc := C.rc_destroy_cq(c.cq); rc != 0 {
			errs = append(errs, fmt.Errorf("rdmacore: ibv_destroy_cq: %w", syscall.Errno(rc)))
		}
	}
	if c.cc != nil {
		if rc := C.rc_destroy_comp_channel(c.cc); rc != 0 {
			errs = append(errs, fmt.Errorf("rdmacore: ibv_destroy_comp_channel: %w", syscall.Errno(rc)))
		}
	}
	cFree(c.wrIn)
	cFree(c.sendWR)
	cFree(c.sendSGE)
	cFree(c.rwrIn)
	cFree(c.recvWR)
	cFree(c.recvSGE)
	cFree(c.wc)
	cFree(c.wcOut)
	if c.cm.id != nil {
		c.p.destroyCMID(c.cm)
	}
	if c.dev != nil {
		c.p.closeDevice(c.dev)
	}
	return errors.Join(errs...)
}
