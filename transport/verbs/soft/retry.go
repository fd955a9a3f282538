package soft

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Defaults of the requester's transport timer (IBA 9.7.6.1.3), as an RC
// queue pair set up through librdmacm gets them.
const (
	// DefaultAckTimeout is Provider.AckTimeout's default: the local ACK
	// timeout 18 of the QP attributes, 4.096 µs × 2^18 ≈ 1.07 s. Longer
	// than the 14 (67 ms) librdmacm gives hardware: the soft peer is a
	// process on a shared host, which a loaded machine (100 connections
	// under the race detector) can leave without a time slice for half
	// a second while it is perfectly alive.
	DefaultAckTimeout = 4096 * time.Nanosecond << 18
	// DefaultRetryCount is Provider.RetryCount's default: retry_count 6,
	// what the rdmacore provider asks librdmacm for (7 means "forever"
	// to rxe).
	DefaultRetryCount = 6
)

var errRetryExceeded = fmt.Errorf("soft: peer did not answer within the transport retries: %w: %w",
	verbs.ErrDisconnected, verbs.ErrRetryExceeded)

// ackTimeout returns the provider's ACK timeout, or 0 for none.
func (p *Provider) ackTimeout() time.Duration {
	switch {
	case p.AckTimeout < 0:
		return 0
	case p.AckTimeout == 0:
		return DefaultAckTimeout
	}
	return p.AckTimeout
}

// retryCount returns the provider's transport retry count.
func (p *Provider) retryCount() int {
	switch {
	case p.RetryCount < 0:
		return 0
	case p.RetryCount == 0:
		return DefaultRetryCount
	}
	return p.RetryCount
}

// retryState is the requester's transport timer of one connection: while
// a request the peer has not answered is outstanding, it ticks every ACK
// timeout; a tick that finds no progress on the oldest such request since
// the previous one counts as a retry, and the tick after RetryCount of
// them fails the request with StatusRetryExceeded and the queue pair with
// it (IBV_WC_RETRY_EXC_ERR). Progress is the oldest request's answer
// (an ACK, or its RDMA Read Response starting), bytes of it the writer
// hands to the stream (it is still being transmitted: the peer reads),
// or bytes of its Read Response placed. TCP retransmits for us, so a
// tick retransmits nothing: it only counts.
type retryState struct {
	timeout time.Duration // 0: no timer
	limit   int
	timer   *time.Timer
	armed   bool
	misses  int
	last    progressMark
	// txIdx is 1 + the send queue index of the request the writer is
	// transmitting (0: none), txBytes the bytes of payload it wrote;
	// rxBytes counts the bytes the reader placed, rxResponse is set
	// while they are a Read Response's (guarded by mu).
	txIdx, txBytes, rxBytes atomic.Uint64
	rxResponse              bool
}

// progressMark is what a tick compares with the previous one.
type progressMark struct {
	oldest  uint64
	tx, rx  uint64
	txValid bool
	rxValid bool
}

// armRetryLocked starts the timer if it is not running: a request to the
// peer was just handed to the writer.
func (c *conn) armRetryLocked() {
	r := &c.retry
	if r.timeout == 0 || r.armed {
		return
	}
	r.armed, r.misses = true, 0
	r.last = progressMark{oldest: ^uint64(0)}
	if r.timer == nil {
		r.timer = time.AfterFunc(r.timeout, c.retryTick)
		return
	}
	r.timer.Reset(r.timeout)
}

// stopRetryLocked stops the timer (the queue pair left RTS).
func (c *conn) stopRetryLocked() {
	if c.retry.timer != nil {
		c.retry.timer.Stop()
	}
	c.retry.armed = false
}

// retryTick is the timer's function.
func (c *conn) retryTick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &c.retry
	if !r.armed || c.state != stateEstablished {
		r.armed = false
		return
	}
	idx, ok := c.oldestOutstandingLocked()
	if !ok {
		r.armed = false // re-armed by the next request transmitted
		return
	}
	m := progressMark{oldest: idx}
	if r.txIdx.Load() == idx+1 {
		m.tx, m.txValid = r.txBytes.Load(), true
	}
	if r.rxResponse {
		m.rx, m.rxValid = r.rxBytes.Load(), true
	}
	if m != r.last {
		r.last, r.misses = m, 0
		r.timer.Reset(r.timeout)
		return
	}
	r.misses++
	if r.misses <= r.limit {
		r.timer.Reset(r.timeout)
		return
	}
	r.armed = false
	e := c.sqAt(idx)
	e.done, e.status = true, verbs.StatusRetryExceeded
	c.failLocked(errRetryExceeded)
}

// oldestOutstandingLocked returns the send queue index of the oldest
// request handed to the writer that the peer has not answered.
func (c *conn) oldestOutstandingLocked() (uint64, bool) {
	for i := c.sqHead; i != c.sqTx; i++ {
		if e := c.sqAt(i); !e.done && e.remote() {
			return i, true
		}
	}
	return 0, false
}
