package soft

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Faults injects failures into the connections of a Provider, for the
// tests of the layers above (the RPC-over-RDMA transport must survive
// each of them). Set Provider.Faults before dialing or listening; every
// connection of the provider then shares it, so give each side its own
// Provider to aim at one side. The zero value injects nothing; the
// methods may be called at any time from any goroutine.
//
// Faults change what the provider does, never what it reports: a dropped
// link looks like a peer that vanished (the oldest unanswered work request
// fails with StatusRetryExceeded, the rest are flushed, Done closes on
// both sides), a delayed completion is one the hardware was slow to
// write, and a corrupted length is a Receive completion whose ByteLen
// lies (within the posted buffer, as a NIC's could not exceed it).
type Faults struct {
	mu           sync.Mutex
	conns        map[*conn]struct{}
	corrupt      func(n int) int
	failSends    int
	failSendErr  error
	failRecvs    int
	failRecvErr  error
	dropAtSend   int
	delayNanos   atomic.Int64
	dropsPending atomic.Bool // fast check for dropAtSend
	stalled      atomic.Bool
}

// StallResponders makes every connection of the provider, live or made
// from now on, a peer that stopped answering: as a responder it reads the
// peer's requests (Sends, RDMA Writes, RDMA Reads) and executes,
// acknowledges and refuses none of them, for as long as it lives. Its own
// requests still go out and their answers are still taken, and a
// disconnect still reaches it. The peer's requests so fail once its
// transport timer expires (Provider.AckTimeout, RetryCount).
func (f *Faults) StallResponders() {
	f.stalled.Store(true)
	f.mu.Lock()
	conns := make([]*conn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		c.dropping = true
		c.mu.Unlock()
	}
}

// Drop breaks the link of every live connection of the provider now,
// without a disconnect: both sides see the peer vanish.
func (f *Faults) Drop() {
	f.mu.Lock()
	conns := make([]*conn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	for _, c := range conns {
		_ = c.nc.Close()
	}
}

// DropAtSend arranges for the link of a connection to break instead of
// carrying the n-th Send (or Send With Invalidate) that any connection of
// the provider transmits from now on (n ≥ 1; 0 cancels): the message is
// lost and its work request fails with StatusRetryExceeded.
func (f *Faults) DropAtSend(n int) {
	f.mu.Lock()
	f.dropAtSend = max(n, 0)
	f.dropsPending.Store(f.dropAtSend > 0)
	f.mu.Unlock()
}

// DelayCompletions holds every completion queued from now on for d before
// Poll returns it (0 stops delaying). Completions keep their order.
func (f *Faults) DelayCompletions(d time.Duration) { f.delayNanos.Store(int64(max(d, 0))) }

// CorruptNextRecvLength makes the next successful Receive completion of
// any connection report fn(ByteLen) instead of ByteLen, clamped to the
// size of the posted Receive. fn runs on the provider's reader goroutine
// with the connection locked: it must not call into the connection.
func (f *Faults) CorruptNextRecvLength(fn func(n int) int) {
	f.mu.Lock()
	f.corrupt = fn
	f.mu.Unlock()
}

// errInjected is what a failed post returns when no error was given.
var errInjected = errors.New("soft: post failed by fault injection")

// FailPostSend makes the next n calls of PostSend fail with err (or a
// generic error if err is nil), posting nothing.
func (f *Faults) FailPostSend(n int, err error) {
	if err == nil {
		err = errInjected
	}
	f.mu.Lock()
	f.failSends, f.failSendErr = max(n, 0), err
	f.mu.Unlock()
}

// FailPostRecv makes the next n calls of PostRecv fail with err (or a
// generic error if err is nil), posting nothing.
func (f *Faults) FailPostRecv(n int, err error) {
	if err == nil {
		err = errInjected
	}
	f.mu.Lock()
	f.failRecvs, f.failRecvErr = max(n, 0), err
	f.mu.Unlock()
}

func (f *Faults) register(c *conn) {
	f.mu.Lock()
	if f.conns == nil {
		f.conns = make(map[*conn]struct{})
	}
	f.conns[c] = struct{}{}
	f.mu.Unlock()
}

func (f *Faults) unregister(c *conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

func (f *Faults) completionDelay() time.Duration { return time.Duration(f.delayNanos.Load()) }

func (f *Faults) takeDropAtSend() bool {
	if !f.dropsPending.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dropAtSend == 0 {
		return false
	}
	f.dropAtSend--
	if f.dropAtSend > 0 {
		return false
	}
	f.dropsPending.Store(false)
	return true
}

func (f *Faults) corruptRecvLength(n, capacity int) int {
	f.mu.Lock()
	fn := f.corrupt
	f.corrupt = nil
	f.mu.Unlock()
	if fn == nil {
		return n
	}
	return min(max(fn(n), 0), capacity)
}

func (f *Faults) takePostSendFailure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSends == 0 {
		return nil
	}
	f.failSends--
	return f.failSendErr
}

func (f *Faults) takePostRecvFailure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRecvs == 0 {
		return nil
	}
	f.failRecvs--
	return f.failRecvErr
}
