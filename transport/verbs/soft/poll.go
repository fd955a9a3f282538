package soft

import (
	"context"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Poll moves up to len(cs) completions into cs.
func (c *conn) Poll(cs []verbs.Completion) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, errConnClosed
	}
	var now time.Time
	n := 0
	for n < len(cs) && c.cqHead != c.cqTail {
		i := c.cqHead % uint64(len(c.cq))
		if c.cqReady != nil && !c.cqReady[i].IsZero() {
			if now.IsZero() {
				now = time.Now()
			}
			if now.Before(c.cqReady[i]) {
				break
			}
		}
		cs[n] = c.cq[i]
		if cs[n].Op == verbs.OpRecv {
			c.rqPosted--
		} else {
			c.sqPosted--
		}
		c.cqHead++
		n++
	}
	return n, nil
}

// Wait parks the calling goroutine on a channel until a completion may be
// ready, the connection is down with nothing left to poll, or ctx is done.
func (c *conn) Wait(ctx context.Context) error {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return errConnClosed
		}
		if c.cqHead != c.cqTail {
			var delay time.Duration
			if c.cqReady != nil {
				if t := c.cqReady[c.cqHead%uint64(len(c.cq))]; !t.IsZero() {
					delay = time.Until(t)
				}
			}
			c.mu.Unlock()
			if delay <= 0 {
				return nil
			}
			if err := sleepContext(ctx, delay); err != nil {
				return err
			}
			continue
		}
		var done <-chan struct{}
		switch {
		case c.state != stateError:
			done = c.done
		case !c.placing:
			err := c.err
			c.mu.Unlock()
			return err
		}
		// (In the error state while the reader is placing data, the
		// flush of the buffer it fills is still to come.)
		c.mu.Unlock()
		select {
		case <-c.notify:
			return nil
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sleepContext sleeps for d or until ctx is done (injected delays only).
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pushLocked queues a completion. The queue never overflows: it has room
// for every posted request and Receive, and their slots are freed only by
// Poll.
func (c *conn) pushLocked(comp verbs.Completion) {
	i := c.cqTail % uint64(len(c.cq))
	c.cq[i] = comp
	if c.cqReady != nil {
		c.cqReady[i] = time.Time{}
		if d := c.faults.completionDelay(); d > 0 {
			c.cqReady[i] = time.Now().Add(d)
		}
	}
	c.cqTail++
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// advanceSQLocked completes send queue entries in order, as RC requires:
// an entry's completion waits for every earlier one.
func (c *conn) advanceSQLocked() {
	for c.sqHead != c.sqTail {
		e := c.sqAt(c.sqHead)
		if !e.done {
			break
		}
		comp := verbs.Completion{ID: e.id, Status: e.status, Op: e.op}
		if e.op == verbs.OpRDMARead && e.status == verbs.StatusSuccess {
			comp.ByteLen = e.length
		}
		e.window, e.bind = nil, verbs.SGE{}
		if e.status == verbs.StatusSuccess {
			// Done with its memory: the entry, which stays in the
			// ring until reused, must not keep the regions of its
			// list (and a caller's registered buffer) alive. A
			// failed entry keeps them: the writer may still be
			// sending from them (its connection is going).
			clear(e.sgl)
			e.sgl = e.sgl[:0]
		}
		c.pushLocked(comp)
		c.sqHead++
	}
	if c.sqAck < c.sqHead {
		c.sqAck = c.sqHead
	}
}
