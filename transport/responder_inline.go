package transport

import (
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Calls executed on the goroutine that polled them (run to completion), as
// eRPC's dispatch threads run short handlers and svcrdma's nfsd thread
// takes a call from its Receive to its reply's post: a cheap call costs no
// hand-off between goroutines and no wake-up of a reader.

// InlineHandler executes a responder's calls on the goroutine that polls
// the connection's completions (Conn.SetInlineHandler), instead of handing
// them to Read or ReadMsg.
type InlineHandler interface {
	// Inline reports whether the call h (its credential and verifier
	// cleared) is to be executed inline: one that does not block (no
	// disk I/O that may wait, no lock held by another call). msg is the
	// whole call, valid only until Inline returns, for a handler that
	// looks at the arguments to decide. It runs with the Conn's lock
	// held and must not call the Conn.
	Inline(h *xdr.CallHeader, msg []byte) bool
	// ServeInline executes the call msg and writes its reply with the
	// Conn's WriteMsg (or WriteMsgDirect), before it returns. msg is the
	// Conn's, valid until ServeInline returns. While it runs, no other
	// completion of the connection is handled: it must not block, and
	// must not Close the Conn (the Close would wait for it). A reply that
	// cannot be posted at once (the send queue full) is copied and
	// posted by a goroutine of its own. arrived is when the poll loop
	// took the call's Receive completion: one clock reading shared by
	// the calls of one poll, so that a handler that times its calls
	// need not read the clock again to start. It is for durations (Sub,
	// time.Since): a reading of the monotonic clock alone, whose wall
	// clock part may depart from the system's.
	ServeInline(msg []byte, arrived time.Time)
}

// InlineRunEnder is an InlineHandler told when the poll loop ends a run of
// inline calls: after the last ServeInline of the calls one poll brought,
// before their replies are posted (together: serveInline). A handler that
// times its calls can read the clock once there for all of them, at the
// moment their replies leave. InlineRunDone runs on the poll loop without
// the Conn's lock, and must neither block nor call the Conn.
type InlineRunEnder interface {
	InlineHandler
	InlineRunDone()
}

// SetInlineHandler has h executed, on the goroutine that polled them, the
// calls whose replies need no Reply chunk (an inline Send, after the RDMA
// Write of a Write chunk's result if the call offers one), whose Read
// chunk, if any, carries at most InlineCallMax bytes, and for which
// h.Inline says so: calls whole in their Receive, calls whose Read chunk
// was pulled into the connection's memory (a small NFS WRITE's data), and
// calls assembled in a buffer of Config.CallBuffers (an NFS WRITE of 32 KiB
// to 64 KiB at the defaults), which h is shown where they are, without a
// copy, and which goes back to CallBuffers once ServeInline returns.
// Other calls, and those that arrive before it is set, go to Read and
// ReadMsg as before. Nil stops it. A requester's SetInlineHandler does
// nothing.
func (c *Conn) SetInlineHandler(h InlineHandler) {
	c.lock()
	c.svcState.inline = h
	c.unlock()
}

// InlineCallMax bounds the Read chunk of a call an InlineHandler is given:
// the data the poll loop waits for its handler to take (an NFS WRITE's),
// and with the Receive buffer, the poll loop's copy of a call in pieces.
const InlineCallMax = 64 << 10

// inlineLocked reports whether call, ready, goes to the inline handler: it
// offers no Reply chunk, its Read chunk (if any) holds at most
// InlineCallMax bytes, and it is read in place (its Receive buffer and the
// chunk memory its Read chunk was pulled into) or assembled in a buffer of
// Config.CallBuffers (owned). The handler is shown the call whole: a call
// in pieces is copied into s.inlineBuf, which the poll loop then serves it
// from; an assembled one is shown where it is.
func (s *responder) inlineLocked(call *svcCall) bool {
	if s.inline == nil || call.hdr.ReplyChunk != nil || call.pullLen > InlineCallMax {
		return false
	}
	var msg []byte
	switch {
	case call.owned:
		msg = call.msg
	case !call.inPlace:
		return false
	case call.view.data != nil || call.view.tail != nil:
		s.inlineBuf = call.view.appendTo(s.inlineBuf[:0])
		msg = s.inlineBuf
	default:
		msg = call.view.head
	}
	return s.inline.Inline(&call.ch, msg)
}

// serveInline executes the calls queued for the inline handler, each
// copied out of its Receive buffer as ReadMsg copies it, on ep's poll
// loop, without c.mu.
//
// The replies of the calls one poll brought are posted together: while it
// serves them the Conn holds its posts (holdPost), and the release of
// c.mu that finds the queue empty rings one doorbell for all of them (one
// ibv_post_send, a system call on Soft-RoCE), as svcrdma and eRPC batch
// theirs; the Receives their calls came in are reposted together just
// before, in one PostRecv (endpoint.batchRecvs). What another goroutine
// queued meanwhile goes out with them; the hold lasts as long as the
// queued calls' execution, which does not block.
func (c *Conn) serveInline(ep *endpoint) {
	ep.pollG.check("serveInline")
	s := &c.svcState
	var lent []byte        // the CallBuffers buffer of the call just served
	var ran InlineRunEnder // the handler of this run, to be told its end
	for {
		c.lock()
		if lent != nil {
			c.cfg.CallBuffers.PutCallBuffer(lent) // under c.mu, as CallBuffers says
			lent = nil
		}
		idx, ok := s.inlineQ.pop()
		if !ok || c.ep != ep {
			if ran != nil {
				// The replies stay held (holdPost) while the handler
				// ends its run; only this loop queues inline calls.
				c.unlock()
				ran.InlineRunDone()
				ran = nil
				continue
			}
			err := ep.flushRecvs() // before the replies' post
			if c.ep != ep {
				err = nil // lost: its Receives go with it
			}
			c.holdPost = false
			c.unlock()
			if err != nil {
				c.endpointDied(ep, err)
			}
			return
		}
		c.holdPost, ep.batchRecvs = true, true
		h := s.inline
		if e, ok := h.(InlineRunEnder); ok {
			ran = e
		}
		call := &s.calls[idx]
		msg, owned := s.takeOwnedCallLocked(idx)
		if owned {
			lent = msg
		} else {
			s.inlineBuf = call.view.appendTo(s.inlineBuf[:0])
			msg = s.inlineBuf
		}
		arrived := call.arrived
		s.callConsumedLocked(idx)
		call.inlined = true
		c.unlock()
		h.ServeInline(msg, arrived)
	}
}

// requeueInlineLocked hands the calls still queued for the inline handler
// to Read and ReadMsg: the poll loop that would have served them is gone.
func (s *responder) requeueInlineLocked() {
	c := s.c
	for {
		idx, ok := s.inlineQ.pop()
		if !ok {
			break
		}
		c.readQ.push(idx)
	}
	if c.readQ.size > 0 {
		wake(c.readWake)
	}
}
