//go:build linux && cgo

package rdmacore

/*
#include "cshim.h"
*/
import "C"

import (
	"context"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/internal/monotime"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Poll moves up to len(cs) completions into cs without blocking: the one
// Wait may have taken, then batches of ibv_poll_cq (one cgo call each). A
// failed completion moves the connection to the error state.
func (c *conn) Poll(cs []verbs.Completion) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, errConnClosed
	}
	n := 0
	if c.stashed && len(cs) > 0 {
		cs[0] = c.stash[0]
		c.stashed = false
		n = 1
	}
	for n < len(cs) {
		want := min(len(cs)-n, pollBatch)
		got := c.pollLocked(cs[n : n+want])
		n += got
		if got < want {
			break
		}
	}
	return n, nil
}

// pollLocked polls at most len(cs) (≤ pollBatch) completions from the
// completion queue into cs.
func (c *conn) pollLocked(cs []verbs.Completion) int {
	if c.cq == nil || len(cs) == 0 {
		return 0
	}
	got := int(C.rc_poll(c.cq, &c.wc[0], &c.wcOut[0], C.int(len(cs))))
	if got < 0 {
		c.failLocked(errCQ)
		return 0
	}
	for i := range got {
		cs[i] = c.completionLocked(&c.wcOut[i])
	}
	return got
}

// completionLocked turns a work completion into the verbs completion of
// the request its wr_id names, frees the request's slot, and fails the
// connection if the request failed: on an RC queue pair any failed
// completion means the queue pair is in the error state.
func (c *conn) completionLocked(w *C.struct_rc_wc) verbs.Completion {
	wrID := uint64(w.wr_id)
	status := wcStatus(uint32(w.status))
	var comp verbs.Completion
	if wrID&recvBit != 0 {
		seq := wrID &^ recvBit
		slot := &c.rq[seq%uint64(len(c.rq))]
		if slot.seq != seq || c.rqOut == 0 {
			c.failLocked(errBadCompletion)
			return verbs.Completion{Status: verbs.StatusOther, Op: verbs.OpRecv}
		}
		c.rqOut--
		comp = verbs.Completion{ID: slot.id, Status: status, Op: verbs.OpRecv}
		if status == verbs.StatusSuccess {
			comp.ByteLen = int(w.byte_len)
			if recvInvalidated(uint32(w.flags), c.dev.invalidateQuirk) {
				comp.Invalidated = true
				comp.InvalidatedRKey = uint32(w.invalidated_rkey)
			}
		}
	} else {
		slot := &c.sq[wrID%uint64(len(c.sq))]
		if slot.seq != wrID || c.sqOut == 0 {
			c.failLocked(errBadCompletion)
			return verbs.Completion{Status: verbs.StatusOther}
		}
		c.sqOut--
		comp = verbs.Completion{ID: slot.id, Status: status, Op: slot.op}
		if status == verbs.StatusSuccess && slot.op == verbs.OpRDMARead {
			comp.ByteLen = slot.length
		}
		slot.win = nil
	}
	if status != verbs.StatusSuccess && c.state != stateFailed {
		c.failLocked(&completionError{status: status, wcStatus: uint32(w.status), vendorErr: uint32(w.vendor_err)})
	}
	if debugCompletions && status != verbs.StatusSuccess {
		println("rdmacore debug: wr_id", wrID, "id", comp.ID, "op", comp.Op.String(), "wc status", uint32(w.status), wcStatusName(uint32(w.status)), "vendor", uint32(w.vendor_err))
	}
	return comp
}

// Wait parks the calling goroutine on the Go netpoller until a completion
// may be ready, the connection is down with nothing left to poll, or ctx
// is done.
//
// It arms the completion queue (ibv_req_notify_cq) and then polls once, so
// that a completion that arrived before the arming is not missed (it is
// kept for the next Poll); only then does it wait for the completion
// channel's fd to become readable, and consume the event
// (ibv_get_cq_event, ibv_ack_cq_events). Once woken by an event it polls
// before it arms again: the completion that raised the event is found
// without arming (a system call on Soft-RoCE), and the queue is armed
// only on the way to the next sleep. The connection's failure, Close
// and ctx wake it by setting the fd's read deadline in the past. One Wait
// parks at a time; others queue for it.
//
// The watch on ctx (context.AfterFunc) is kept from one Wait to the next
// while they use the same context, so that a polling loop allocates
// nothing.
func (c *conn) Wait(ctx context.Context) error {
	select {
	case c.waitSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.waitSem }()
	if d := ctx.Done(); d != nil && d != c.waitDone {
		if c.waitStop != nil {
			c.waitStop()
		}
		c.waitStop = context.AfterFunc(ctx, c.wakeFn)
		c.waitDone = d
	}
	// The Wait's gap, from here to the completion it finds, for the spin
	// policy; the clock is read only where the policy adapts.
	adaptive := c.spin.adaptive()
	var start time.Time
	if adaptive {
		start = monotime.Now()
	}
	found := func() {
		if adaptive {
			c.spin.observe(time.Since(start))
		}
	}
	if c.pollFirst(ctx, start, c.spin.limit()) {
		found()
		return nil
	}
	woke := false // by an event: the queue is disarmed, so look before arming
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return errConnClosed
		}
		if c.woken {
			c.woken = false
			_ = c.file.SetReadDeadline(noDeadline)
		}
		if c.stashed {
			c.mu.Unlock()
			found()
			return nil
		}
		if c.state == stateFailed && c.sqOut == 0 && c.rqOut == 0 {
			err := c.err
			c.mu.Unlock()
			return err
		}
		if err := ctx.Err(); err != nil {
			c.mu.Unlock()
			return err
		}
		if c.cq == nil {
			c.mu.Unlock()
			return errNotEstablished
		}
		// Arm, then look; once woken, look first and arm only to sleep.
		n := 0
		if woke {
			n = c.pollLocked(c.stash[:])
		}
		if n == 0 {
			c.arms++
			if rc := C.rc_req_notify(c.cq); rc != 0 {
				c.failLocked(errCQ)
				c.mu.Unlock()
				continue
			}
			n = c.pollLocked(c.stash[:])
		}
		if n > 0 {
			c.stashed = true
			c.mu.Unlock()
			found()
			return nil
		}
		c.mu.Unlock()
		// Returns after an event, or with an error once woken (deadline)
		// or closed; the loop looks again either way.
		woke = c.rc.Read(c.readEvent) == nil
	}
}

// pollBeforeWait returns the provider's PollBeforeWait with the default
// applied (0 for none).
func (p *Provider) pollBeforeWait() time.Duration {
	return durationOr(p.PollBeforeWait, DefaultPollBeforeWait)
}

// pollBeforeWaitMax returns the provider's PollBeforeWaitMax with the
// default applied (0 for none: polling for PollBeforeWait only).
func (p *Provider) pollBeforeWaitMax() time.Duration {
	return durationOr(p.PollBeforeWaitMax, DefaultPollBeforeWaitMax)
}

// durationOr returns d, def when d is 0, and 0 when d is negative (off).
func durationOr(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// pollFirst polls the completion queue for up to spin from start (the
// spin policy's limit: PollBeforeWait, or longer while recent Waits were
// short), yielding between polls, and reports whether it found a
// completion (kept for the next Poll). It gives up at once when anything
// but a completion needs Wait's attention: the connection's close or
// failure, a wake-up, or ctx's end.
//
// Between two polls it yields twice: the goroutine (runtime.Gosched, so
// that what the last completions woke in this process runs), then the OS
// thread (sched_yield, so that any other thread waiting for this CPU runs:
// the peer process that will send the awaited message, a kernel thread of
// the NIC's). A spinning thread that yields only to goroutines keeps its
// CPU until the kernel's scheduler preempts it, and on a machine with few
// CPUs the peer it waits for is often the thread it keeps out. With CPUs
// to spare, sched_yield returns at once.
//
// It reads the clock only every spinClockEvery polls: under an emulator
// the clock may cost more than a poll (in the project's TCG VM the guest's
// clocksource is the HPET, and every time.Now is a system call).
func (c *conn) pollFirst(ctx context.Context, start time.Time, spin time.Duration) bool {
	if spin <= 0 {
		return false
	}
	if start.IsZero() {
		start = monotime.Now()
	}
	for i := 1; ; i++ {
		c.mu.Lock()
		if c.closed || c.woken || c.state == stateFailed || c.cq == nil || ctx.Err() != nil {
			c.mu.Unlock()
			return false
		}
		if c.stashed || c.pollLocked(c.stash[:]) > 0 {
			c.stashed = true
			c.mu.Unlock()
			return true
		}
		c.mu.Unlock()
		if i%spinClockEvery == 0 && time.Since(start) >= spin {
			return false
		}
		runtime.Gosched()
		yieldThread()
	}
}

// yieldThread gives the calling OS thread's CPU to another runnable
// thread, if any (sched_yield). A raw system call: it does not block, and
// the spin holds its processor (P) anyway. A variable for the tests.
var yieldThread = func() { _, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// spinClockEvery is how many polls pollFirst makes between two readings of
// the clock.
const spinClockEvery = 16

// getEvent consumes one completion event, if there is one (as
// c.readEvent, the function the completion channel's RawConn.Read runs).
func (c *conn) getEvent(uintptr) bool {
	return C.rc_get_cq_event(c.cc) != C.EAGAIN
}

// wake makes a parked Wait look at the connection again.
func (c *conn) wake() {
	c.mu.Lock()
	c.wakeLocked()
	c.mu.Unlock()
}

func (c *conn) wakeLocked() {
	if c.file != nil {
		c.woken = true
		_ = c.file.SetReadDeadline(aLongTimeAgo)
	}
}

var debugCompletions = os.Getenv("RDMACORE_DEBUG") != ""
