package transport

import (
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
	// posted by a goroutine of its own.
	ServeInline(msg []byte)
}

// SetInlineHandler has h executed, on the goroutine that polled them, the
// calls that arrive whole in their Receive (RDMA_MSG without Read chunks)
// whose replies need no Reply chunk (an inline Send, after the RDMA Write
// of a Write chunk's result if the call offers one), and for which
// h.Inline says so. Other
// calls, and those that arrive before it is set, go to Read and ReadMsg
// as before. Nil stops it. A requester's SetInlineHandler does nothing.
func (c *Conn) SetInlineHandler(h InlineHandler) {
	c.lock()
	c.svcState.inline = h
	c.unlock()
}

// inlineLocked reports whether call, ready in place, goes to the inline
// handler: it is whole in its Receive buffer and offers no Reply chunk.
func (s *responder) inlineLocked(call *svcCall) bool {
	h := &call.hdr
	return s.inline != nil && call.inPlace && call.view.data == nil && call.view.tail == nil &&
		len(h.ReadList) == 0 && h.ReplyChunk == nil && s.inline.Inline(&call.ch, call.view.head)
}

// serveInline executes the calls queued for the inline handler, each
// copied out of its Receive buffer as ReadMsg copies it, on ep's poll
// loop, without c.mu.
func (c *Conn) serveInline(ep *endpoint) {
	ep.pollG.check("serveInline")
	s := &c.svcState
	for {
		c.lock()
		idx, ok := s.inlineQ.pop()
		if !ok || c.ep != ep {
			c.unlock()
			return
		}
		h := s.inline
		call := &s.calls[idx]
		s.inlineBuf = call.view.appendTo(s.inlineBuf[:0])
		msg := s.inlineBuf
		s.callConsumedLocked(idx)
		call.inlined = true
		c.unlock()
		h.ServeInline(msg)
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
