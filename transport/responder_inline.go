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
	// need not read the clock again to start.
	ServeInline(msg []byte, arrived time.Time)
}

// SetInlineHandler has h executed, on the goroutine that polled them, the
// calls of at most InlineCallMax bytes whose replies need no Reply chunk
// (an inline Send, after the RDMA Write of a Write chunk's result if the
// call offers one), and for which h.Inline says so: calls whole in their
// Receive, and calls whose Read chunk was pulled into the connection's
// memory (a small NFS WRITE's data; those pulled into a buffer of
// Config.CallBuffers go to ReadMsgAlloc, which takes the buffer without
// a copy). Other calls, and those that arrive before it is set, go to
// Read and ReadMsg as before. Nil stops it. A requester's
// SetInlineHandler does nothing.
func (c *Conn) SetInlineHandler(h InlineHandler) {
	c.lock()
	c.svcState.inline = h
	c.unlock()
}

// InlineCallMax bounds the calls an InlineHandler is given (the poll
// loop's copy of the call it serves grows to at most this).
const InlineCallMax = 64 << 10

// inlineLocked reports whether call, ready, goes to the inline handler: it
// is read in place (its Receive buffer and the chunk memory its Read chunk
// was pulled into), of at most InlineCallMax bytes, and offers no Reply
// chunk. The handler is shown the call whole: a call in pieces is copied
// into s.inlineBuf, which the poll loop then serves it from.
func (s *responder) inlineLocked(call *svcCall) bool {
	if s.inline == nil || !call.inPlace || call.hdr.ReplyChunk != nil || call.view.len() > InlineCallMax {
		return false
	}
	msg := call.view.head
	if call.view.data != nil || call.view.tail != nil {
		s.inlineBuf = call.view.appendTo(s.inlineBuf[:0])
		msg = s.inlineBuf
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
// theirs. What another goroutine queued meanwhile goes out with them; the
// hold lasts as long as the queued calls' execution, which does not block.
func (c *Conn) serveInline(ep *endpoint) {
	ep.pollG.check("serveInline")
	s := &c.svcState
	for {
		c.lock()
		idx, ok := s.inlineQ.pop()
		if !ok || c.ep != ep {
			c.holdPost = false
			c.unlock()
			return
		}
		c.holdPost = true
		h := s.inline
		call := &s.calls[idx]
		s.inlineBuf = call.view.appendTo(s.inlineBuf[:0])
		msg := s.inlineBuf
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
