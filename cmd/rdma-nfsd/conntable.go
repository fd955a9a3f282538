package main

import (
	"net"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport"
)

// maxConnsKept bounds the connections the table keeps, open and closed
// (the oldest go first).
const maxConnsKept = 256

// connTable keeps the RDMA connections, for their counters: an open
// connection itself, a closed one as a connEntry that holds only its
// addresses, times and final Stats (some 1 KiB), not the Conn. The table
// keeps the last maxConnsKept.
type connTable struct {
	mu    sync.Mutex
	conns []*connEntry
}

// connEntry is one connection of the table.
type connEntry struct {
	remote, local net.Addr
	opened        time.Time

	mu     sync.Mutex
	c      *transport.Conn // nil once closed
	closed time.Time       // when it was seen closed
	stats  transport.Stats // final, once closed
}

// add enters c, and drops its entry's reference to it once it is closed.
func (t *connTable) add(c *transport.Conn) {
	e := &connEntry{remote: c.RemoteAddr(), local: c.LocalAddr(), opened: time.Now(), c: c}
	t.mu.Lock()
	if len(t.conns) == maxConnsKept {
		t.conns = append(t.conns[:0], t.conns[1:]...)
	}
	t.conns = append(t.conns, e)
	t.mu.Unlock()
	go func() {
		<-c.Closed()
		st := c.Stats()
		e.mu.Lock()
		e.c, e.stats, e.closed = nil, st, time.Now()
		e.mu.Unlock()
	}()
}

// snapshot returns the entries, oldest first.
func (t *connTable) snapshot() []*connEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*connEntry(nil), t.conns...)
}

// RemoteAddr returns the peer's address.
func (e *connEntry) RemoteAddr() net.Addr { return e.remote }

// LocalAddr returns the local address.
func (e *connEntry) LocalAddr() net.Addr { return e.local }

// Stats returns the connection's counters: the final ones once it is
// closed.
func (e *connEntry) Stats() transport.Stats {
	e.mu.Lock()
	c, st := e.c, e.stats
	e.mu.Unlock()
	if c != nil {
		return c.Stats()
	}
	return st
}

// Times returns when the connection was entered and, if it is closed,
// when it was seen closed (the zero Time while open).
func (e *connEntry) Times() (opened, closed time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.opened, e.closed
}
