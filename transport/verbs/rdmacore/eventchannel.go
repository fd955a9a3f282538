//go:build linux && cgo

package rdmacore

/*
#cgo LDFLAGS: -libverbs -lrdmacm
#include <stdlib.h>
#include "cshim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// RDMA-CM event types (enum rdma_cm_event_type; cshim.c checks them).
const (
	evAddrResolved    = 0
	evAddrError       = 1
	evRouteResolved   = 2
	evRouteError      = 3
	evConnectRequest  = 4
	evConnectResponse = 5
	evConnectError    = 6
	evUnreachable     = 7
	evRejected        = 8
	evEstablished     = 9
	evDisconnected    = 10
	evDeviceRemoval   = 11
	evAddrChange      = 14
	evTimewaitExit    = 15
)

// cmEventName names an event type as rdma_event_str does.
func cmEventName(t int) string {
	switch t {
	case evAddrResolved:
		return "ADDR_RESOLVED"
	case evAddrError:
		return "ADDR_ERROR"
	case evRouteResolved:
		return "ROUTE_RESOLVED"
	case evRouteError:
		return "ROUTE_ERROR"
	case evConnectRequest:
		return "CONNECT_REQUEST"
	case evConnectResponse:
		return "CONNECT_RESPONSE"
	case evConnectError:
		return "CONNECT_ERROR"
	case evUnreachable:
		return "UNREACHABLE"
	case evRejected:
		return "REJECTED"
	case evEstablished:
		return "ESTABLISHED"
	case evDisconnected:
		return "DISCONNECTED"
	case evDeviceRemoval:
		return "DEVICE_REMOVAL"
	case evAddrChange:
		return "ADDR_CHANGE"
	case evTimewaitExit:
		return "TIMEWAIT_EXIT"
	}
	return fmt.Sprintf("event(%d)", t)
}

// cmEvent is an RDMA-CM event, copied out of librdmacm and acknowledged.
type cmEvent struct {
	typ    int
	status int
	key    uint64
	// id is the event's cm_id; for a connection request, the new one.
	id *C.struct_rdma_cm_id
	// The peer's conn param (CONNECT_REQUEST, ESTABLISHED, REJECTED).
	responderResources, initiatorDepth uint8
	privateData                        []byte
}

// cmSink receives the events of one cm_id, on the event channel's
// goroutine. It must not block.
type cmSink interface {
	cmEvent(ev *cmEvent)
}

// eventChannel is a provider's RDMA-CM event channel. Its file descriptor
// is non-blocking and its one goroutine parks on the Go netpoller until an
// event arrives; it hands each event to the sink registered for the event's
// cm_id. The channel lives while cm_ids exist on it (refs, guarded by the
// provider's mutex); the goroutine destroys it after the last one.
type eventChannel struct {
	p      *Provider
	ch     *C.struct_rdma_event_channel
	file   *os.File // a duplicate of the channel's fd, registered with the netpoller
	rc     syscall.RawConn
	ev     *C.struct_rc_event // the goroutine's event buffer (C memory)
	getErr C.int              // what the last rc_get_event returned
	refs   int                // cm_ids on the channel; guarded by p.state.mu

	mu      sync.Mutex
	sinks   map[uint64]cmSink
	nextKey uint64
}

// newEventChannel creates an event channel and starts its goroutine.
func newEventChannel(p *Provider) (*eventChannel, error) {
	var cerr C.int
	ch := C.rc_create_event_channel(&cerr)
	if ch == nil {
		return nil, noDeviceError("rdma_create_event_channel", syscall.Errno(cerr))
	}
	file, err := pollable(int(ch.fd), "rdma_cm")
	if err != nil {
		C.rdma_destroy_event_channel(ch)
		return nil, fmt.Errorf("rdmacore: event channel: %w", err)
	}
	rc, err := file.SyscallConn()
	if err != nil {
		_ = file.Close()
		C.rdma_destroy_event_channel(ch)
		return nil, fmt.Errorf("rdmacore: event channel: %w", err)
	}
	e := &eventChannel{
		p:     p,
		ch:    ch,
		file:  file,
		rc:    rc,
		ev:    (*C.struct_rc_event)(C.calloc(1, C.sizeof_struct_rc_event)),
		sinks: make(map[uint64]cmSink),
	}
	go e.loop()
	return e, nil
}

// pollable makes fd non-blocking and returns a duplicate of it as an
// *os.File registered with the Go netpoller. The duplicate shares the open
// file description (and so its readiness and O_NONBLOCK) with fd, and
// closing it leaves fd to its owner (librdmacm, libibverbs).
func pollable(fd int, name string) (*os.File, error) {
	d := int(C.rc_dup_nonblock(C.int(fd)))
	if d < 0 {
		return nil, fmt.Errorf("dup %s fd: %w", name, syscall.Errno(-d))
	}
	f := os.NewFile(uintptr(d), name)
	// A deadline can be set only on a file the netpoller serves: fail
	// rather than fall back to blocking an OS thread per waiter.
	if err := f.SetReadDeadline(noDeadline); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s fd is not pollable: %w", name, err)
	}
	return f, nil
}

// loop reads events until the file is closed (no cm_id is left), then
// destroys the channel.
func (e *eventChannel) loop() {
	defer func() {
		C.rdma_destroy_event_channel(e.ch)
		C.free(unsafe.Pointer(e.ev))
	}()
	read := e.getEvent
	for {
		if err := e.rc.Read(read); err != nil {
			return
		}
		if e.getErr != 0 {
			continue // a failed read (ENOMEM); the event stays queued
		}
		e.dispatch(e.copyEvent())
	}
}

// getEvent reads one event into e.ev, if there is one; its result is in
// e.getErr. It runs on the channel's goroutine only.
func (e *eventChannel) getEvent(uintptr) bool {
	e.getErr = C.rc_get_event(e.ch, e.ev)
	return e.getErr != C.EAGAIN && e.getErr != C.EINTR
}

func (e *eventChannel) copyEvent() *cmEvent {
	c := e.ev
	ev := &cmEvent{
		typ:                int(c._type),
		status:             int(c.status),
		key:                uint64(c.key),
		id:                 c.id,
		responderResources: uint8(c.responder_resources),
		initiatorDepth:     uint8(c.initiator_depth),
	}
	if n := int(c.private_data_len); n > 0 {
		ev.privateData = C.GoBytes(unsafe.Pointer(&c.private_data[0]), C.int(n))
	}
	return ev
}

// dispatch hands ev to its sink. A connection request for a listener that
// is gone is rejected here.
func (e *eventChannel) dispatch(ev *cmEvent) {
	e.mu.Lock()
	sink := e.sinks[ev.key]
	e.mu.Unlock()
	if sink != nil {
		sink.cmEvent(ev)
		return
	}
	if ev.typ == evConnectRequest {
		C.rc_reject(ev.id, nil, 0)
		C.rc_destroy_id(ev.id)
	}
}

// register returns a new key for sink.
func (e *eventChannel) register(sink cmSink) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nextKey++
	e.sinks[e.nextKey] = sink
	return e.nextKey
}

func (e *eventChannel) unregister(key uint64) {
	e.mu.Lock()
	delete(e.sinks, key)
	e.mu.Unlock()
}

// acquire returns the provider's event channel, creating it if needed,
// with one more reference: one per cm_id.
func (p *Provider) acquire() (*eventChannel, error) {
	s := &p.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		ch, err := newEventChannel(p)
		if err != nil {
			return nil, err
		}
		s.ch = ch
	}
	s.ch.refs++
	return s.ch, nil
}

// addRef takes one more reference on e, which must hold one already.
func (p *Provider) addRef(e *eventChannel) {
	p.state.mu.Lock()
	e.refs++
	p.state.mu.Unlock()
}

// release drops a reference; after the last one the channel's goroutine
// destroys it.
func (p *Provider) release(e *eventChannel) {
	s := &p.state
	s.mu.Lock()
	defer s.mu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	if s.ch == e {
		s.ch = nil
	}
	_ = e.file.Close() // wakes the goroutine, which destroys the channel
}

// cmID is a cm_id on a provider's event channel, with its key.
type cmID struct {
	ch  *eventChannel
	key uint64
	id  *C.struct_rdma_cm_id
}

// newCMID creates a cm_id in the TCP port space whose events go to sink.
func (p *Provider) newCMID(sink cmSink) (cmID, error) {
	ch, err := p.acquire()
	if err != nil {
		return cmID{}, err
	}
	key := ch.register(sink)
	var id *C.struct_rdma_cm_id
	if rc := C.rc_create_id(ch.ch, &id, C.uint64_t(key)); rc != 0 {
		ch.unregister(key)
		p.release(ch)
		return cmID{}, noDeviceError("rdma_create_id", syscall.Errno(rc))
	}
	return cmID{ch: ch, key: key, id: id}, nil
}

// adoptCMID takes over the cm_id of a connection request (created by
// librdmacm on the listener's channel) for sink.
func (p *Provider) adoptCMID(ch *eventChannel, id *C.struct_rdma_cm_id, sink cmSink) cmID {
	p.addRef(ch)
	key := ch.register(sink)
	C.rc_set_key(id, C.uint64_t(key))
	return cmID{ch: ch, key: key, id: id}
}

// destroy destroys the cm_id and drops its reference on the channel.
func (p *Provider) destroyCMID(c cmID) {
	C.rc_destroy_id(c.id)
	c.ch.unregister(c.key)
	p.release(c.ch)
}

// noDeviceError wraps the failure of the first librdmacm call: without an
// RDMA device (or without the rdma_cm kernel module) the provider cannot
// work at all.
func noDeviceError(call string, errno syscall.Errno) error {
	if errors.Is(errno, syscall.ENODEV) || errors.Is(errno, syscall.ENOENT) || errors.Is(errno, syscall.ENXIO) {
		return fmt.Errorf("rdmacore: no RDMA device (%s: %w): %w", call, errno, verbs.ErrNotSupported)
	}
	return fmt.Errorf("rdmacore: %s: %w", call, errno)
}
