package transport

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The requester's handling of a lost connection (ReconnectPolicy): the
// calls in flight are retransmitted on a new connection or failed, and a
// call without a reply for CallTimeout drops the connection.

// ErrCallTimeout is the cause of a connection dropped because a call had no
// reply within ReconnectPolicy.CallTimeout.
var ErrCallTimeout = errors.New("rpcrdma: call timed out: dropping the connection")

// watchCalls drops the connection when a call sent on it has had no reply
// for CallTimeout, so that the reconnection retransmits or fails it.
//
// It counts ticks of a quarter of CallTimeout (at least 10 ms) rather than
// reading the clock for every call: a call records the tick count when its
// Send is posted, and is stuck once more than ceil(CallTimeout/tick) ticks
// have passed since. That is never before CallTimeout and at most one
// tick after it (a tick the runtime drops only makes it later).
func (s *requester) watchCalls() {
	c := s.c
	defer c.bg.Done()
	timeout := c.cfg.Reconnect.CallTimeout
	tick := max(timeout/4, 10*time.Millisecond)
	limit := uint64((timeout + tick - 1) / tick)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			c.lock()
			s.ticks++
			ep := c.ep
			stuck := false
			for i := range s.calls {
				call := &s.calls[i]
				// Calls sent on an earlier connection wait for their
				// retransmission; only this connection's count.
				if ep != nil && call.busy && !call.replied &&
					call.sentGen == ep.gen && s.ticks-call.sentTick > limit {
					stuck = true
					break
				}
			}
			c.unlock()
			if stuck {
				c.stats.callTimeouts.Add(1)
				c.cfg.Logger.Warn("rpcrdma: call without reply: reconnecting", "timeout", timeout)
				c.endpointDied(ep, ErrCallTimeout)
			}
		}
	}
}

// connLostLocked copies the replies' data out of ep's chunk memory, then
// closes ep's connection before its calls are failed or resent: that
// deregisters the callers' buffers registered on it (CallInto), so that
// no late RDMA Write of the peer reaches a buffer whose call has
// returned. The queue pair may still be alive (a call timeout): only
// closing it stops the peer. With Conn.ep nil, no completion of ep is
// handled meanwhile.
func (s *requester) connLostLocked(ep *endpoint, err error) {
	c := s.c
	s.materializeLocked()
	c.unlock()
	_ = ep.vc.Close()
	c.lock()
	s.lostLocked(ep, err)
}

// materializeLocked copies the data of every reply still in the chunk
// memory out of it, before the connection and its memory go; data placed
// in the caller's buffer stays there.
func (s *requester) materializeLocked() {
	for slot := range s.calls {
		if call := &s.calls[slot]; !call.placed {
			call.materialize()
		}
	}
}

// forgetPlacedLocked forgets the callers' buffers registered on ep, whose
// connection is closed (which deregistered them), and wakes the CallIntos
// waiting for that.
func (s *requester) forgetPlacedLocked(ep *endpoint) {
	for slot := range s.calls {
		if call := &s.calls[slot]; call.placedOn == ep {
			call.placedOn = nil
			wake(call.done)
		}
		ep.chunkMem[slot].dataRegion, ep.chunkMem[slot].argRegion = nil, nil
	}
	ep.regs.forget()
}

// lostLocked handles the loss of the requester's connection ep: the calls
// in flight are queued for retransmission on a new connection, which a
// goroutine of its own dials (reconnect), or failed with err.
func (s *requester) lostLocked(ep *endpoint, err error) {
	c := s.c
	// connLostLocked closed ep's connection, which deregistered the
	// callers' buffers registered on it.
	s.forgetPlacedLocked(ep)
	for slot := range s.calls {
		call := &s.calls[slot]
		call.sending = false
		// A reply's data still in the chunk memory was copied out
		// (materializeLocked): the memory goes with the connection.
		if call.busy && call.replied && !call.queued {
			// Its reply is complete but waits for a Local Invalidate, or
			// never got one because posting it failed: the connection is
			// gone and its memory with it, so the reply goes to Read now.
			call.invPending = 0
			s.queueReplyLocked(slot)
		}
		if !call.busy {
			s.maybeFreeCallLocked(slot)
		}
	}
	if !c.cfg.Reconnect.Enabled || c.closed {
		c.eof = errors.Is(err, verbs.ErrDisconnected)
		c.failLocked(err)
		s.failDirectCallsLocked(err)
		return
	}
	// Calls in flight: retransmit them on the new connection, or fail them.
	// Every call still waiting for a retransmission from an earlier loss
	// is busy and unanswered, so it is queued again below: start from an
	// empty queue, or such a call would be queued (and sent) twice.
	s.resend.reset()
	for slot := range s.calls {
		call := &s.calls[slot]
		if !call.busy || call.replied {
			continue
		}
		if c.cfg.Reconnect.Retransmit && !call.abandoned {
			s.resend.push(slot)
			continue
		}
		call.replied = true
		delete(s.byXID, call.xid)
		s.failCallLocked(call, callLost(call.xid, err))
		s.queueReplyLocked(slot)
	}
	// Close waits for the reconnection goroutine (c.bg): it is added here,
	// under c.mu with c.closed false, so always before Close's Wait.
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		s.reconnect()
	}()
}

// reconnect dials again with backoff and installs the new endpoint.
func (s *requester) reconnect() {
	c := s.c
	backoff := c.cfg.Reconnect.Backoff
	var err error
	for attempt := 0; attempt < c.cfg.Reconnect.MaxAttempts; attempt++ {
		select {
		case <-c.done:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, c.cfg.Reconnect.MaxBackoff)
		var ep *endpoint
		if ep, err = c.dial(); err != nil {
			c.cfg.Logger.Debug("rpcrdma: reconnect failed", "attempt", attempt+1, "err", err)
			continue
		}
		c.lock()
		if c.closed {
			c.unlock()
			// ep was never started: it has no poll loop to stop, so
			// Conn.shutdown (which cancels and waits for it) must not run.
			_ = ep.vc.Close()
			return
		}
		c.ep = ep
		s.credits.Reset()
		if ep.grant > 0 {
			s.credits.Update(ep.grant)
		}
		c.stats.reconnects.Add(1)
		c.cfg.Logger.Info("rpcrdma: reconnected", "negotiated", fmt.Sprintf("%+v", negotiated(ep.settings)))
		c.startEndpoint(ep)
		s.pumpResendLocked()
		c.wakeAllLocked()
		c.unlock()
		return
	}
	c.lock()
	c.eof = false
	err = fmt.Errorf("rpcrdma: reconnect failed after %d attempts: %w", c.cfg.Reconnect.MaxAttempts, err)
	c.failLocked(err)
	s.failDirectCallsLocked(err)
	c.unlock()
}

// pumpResendLocked retransmits calls queued by a reconnect while credits
// allow.
func (s *requester) pumpResendLocked() {
	c := s.c
	ep := c.ep
	for ep != nil && s.resend.size > 0 && ep.canSend(callWRs) {
		slot, _ := s.resend.peek()
		call := &s.calls[slot]
		if call.abandoned {
			// Its Call returned (its context ended) while it waited:
			// its message is the caller's again, and nobody wants the
			// reply.
			s.resend.pop()
			call.replied = true
			delete(s.byXID, call.xid)
			s.queueReplyLocked(slot)
			continue
		}
		if !s.credits.TryAcquire() {
			break
		}
		s.resend.pop()
		msg := call.msg
		if call.callerMsg != nil {
			msg = call.callerMsg
		}
		var h xdr.CallHeader
		args, err := h.Unmarshal(msg)
		if err == nil {
			err = s.postCallLocked(ep, slot, msg, c.cfg.Binding.Call(&h, msg, args))
		}
		if err != nil {
			_ = s.credits.Release()
			call.replied = true
			delete(s.byXID, call.xid)
			s.failCallLocked(call, callLost(call.xid, err))
			s.queueReplyLocked(slot)
		}
	}
	if s.resend.size == 0 {
		wake(c.writeWake)
	}
}

func (s *requester) lingerLocked() {}

// closeLocked: a reply that arrived before Close is still the Call's to
// take (its goroutine may be about to): its data is copied out of ep's
// chunk memory, which shutdown unmaps, as connLostLocked does.
func (s *requester) closeLocked(*endpoint) { s.materializeLocked() }

// closed forgets the callers' buffers registered on ep: they went with it.
func (s *requester) closed(ep *endpoint) {
	s.c.lock()
	s.forgetPlacedLocked(ep)
	s.c.unlock()
}
