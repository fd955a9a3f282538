package transport

import (
	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/internal/marshal"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The responder's RDMA Reads and Writes and the memory they move (RFC 8166
// §3.4.5, §3.5.4-§3.5.6): the Read chunks of calls are pulled as the send
// queue and the memory budgets allow, and a reply's Write and Reply chunk
// data is staged; as svcrdma's svc_rdma_rw.c.

// pumpReadsLocked posts the RDMA Reads of the calls waiting in s.pulling,
// in arrival order, while the send queue has room for them and the memory
// budgets (MemoryLimits.Calls, ListenerCalls) have room for their data.
func (s *responder) pumpReadsLocked(ep *endpoint) error {
	for s.pulling.size > 0 {
		slot := s.pulling.buf[s.pulling.head]
		if call := &s.calls[slot]; call.mem == nil && call.pullReg == nil {
			ok, err := s.reserveCallMemLocked(ep, call)
			if !ok || err != nil {
				return err
			}
		}
		s.pullLocked(ep, slot)
		if call := &s.calls[slot]; call.readsSent < call.readOps {
			return nil
		}
		s.pulling.pop()
	}
	return nil
}

// pullLocked posts the RDMA Reads of slot's Read chunks not yet posted, in
// list order into the slot's chunk memory (RFC 8166 §3.4.5), as far as the
// send queue has room: Reads may fill half of it, so that replies and
// RDMA_ERRORs always find room. A call with more segments than that, or
// many calls of many segments (a peer may offer Limits.MaxSegments per
// chunk), are pulled in rounds as completions free the queue, never
// refused for the size of our queue.
func (s *responder) pullLocked(ep *endpoint, slot int) {
	c := s.c
	call := &s.calls[slot]
	region, base := call.mem, 0
	if call.pullReg != nil {
		region, base = call.pullReg, call.pullOff
	}
	s.ops = s.ops[:0]
	off := 0
	for rc := range call.hdr.ReadChunks() {
		s.ops = marshal.AppendReadOps(s.ops, off, rc)
		off += int(rc.Length())
	}
	for _, op := range s.ops[call.readsSent:] {
		if !ep.readRoom() {
			break
		}
		ep.appendRDMA(wrID(wrRead, slot, 0), verbs.OpRDMARead, region, base+op.Local, op.Len, op.Offset, op.Handle)
		c.stats.rdmaReadBytes.Add(uint64(op.Len))
		call.readsSent++
		call.reads++
		if ep.batchFull() {
			c.postLocked(ep)
		}
	}
	c.postLocked(ep)
}

// reserveCallMemLocked takes the budgets and a registered buffer for the
// Read chunk data of call (one of Config.CallBuffers, or of the endpoint's
// pool); false (and no error) when a budget is full: the
// call waits for calls to be read (this connection's budget) or for
// retryPulls (the listener's).
func (s *responder) reserveCallMemLocked(ep *endpoint, call *svcCall) (bool, error) {
	c := s.c
	n := call.pullLen
	if !s.callMem.fits(n) {
		// This connection's own calls must be read first: it does not
		// hold up the listener's queue meanwhile.
		s.listenerCalls.forget(c)
		return false, nil
	}
	if !s.listenerCalls.acquire(c, s.callMem.used, n, s.retryFn) {
		return false, nil
	}
	if s.pullDirectLocked(ep, call) {
		s.callMem.used += n
		call.callHeld = n
		return true, nil
	}
	r, err := ep.pool.get(n)
	if err != nil {
		s.listenerCalls.release(n)
		return false, err
	}
	s.callMem.used += n
	call.callHeld, call.mem = n, r
	return true, nil
}

// releaseCallMemLocked gives back call's share of the Calls budgets and
// reports whether it held any.
func (s *responder) releaseCallMemLocked(call *svcCall) bool {
	n := call.callHeld
	if n == 0 {
		return false
	}
	call.callHeld = 0
	s.callMem.used -= n
	s.listenerCalls.release(n)
	return true
}

// retryPulls runs when the listener's Calls budget had room again.
func (s *responder) retryPulls() {
	c := s.c
	c.lock()
	ep := c.ep
	if ep == nil || c.closed {
		s.listenerCalls.forget(c)
		c.unlock()
		return
	}
	err := s.pumpReadsLocked(ep)
	c.unlock()
	if err != nil {
		c.endpointDied(ep, err)
	}
}

// stageReplyLocked takes the registered memory (and its share of the
// Replies budgets) for what plan sends by RDMA Write: the result, then the
// (reduced) reply for the Reply chunk. A result written from the caller's
// memory (call.direct) takes no staging memory but its share of the
// budgets all the same: they bound the bytes of replies in motion, where
// they are. errWaitMemory while a budget is full.
func (s *responder) stageReplyLocked(ep *endpoint, call *svcCall, plan marshal.ReplyPlan) error {
	dataLen := 0
	if plan.Data.Present {
		dataLen = plan.Data.N
	}
	held := xdr.RoundUp(dataLen) + plan.ReplyLen
	stage := held
	if call.direct != nil {
		stage = plan.ReplyLen
	}
	if held == 0 {
		return nil
	}
	if !s.replyMem.fits(held) {
		s.listenerReplies.forget(s.c) // woken by this connection's Send completions
		return errWaitMemory
	}
	if !s.listenerReplies.acquire(s.c, s.replyMem.used, held, s.wakeFn) {
		return errWaitMemory
	}
	if stage > 0 {
		r, err := ep.pool.get(stage)
		if err != nil {
			s.listenerReplies.release(held)
			return err
		}
		call.mem = r
	}
	s.replyMem.used += held
	call.replyHeld = held
	return nil
}

// appendReplyChunksLocked fills h's Write list and Reply chunk, the chunks
// of call echoed with the lengths written (RFC 8166 §3.5.5, §3.5.6), copies
// what goes by RDMA Write into call.mem (the result only unless it goes
// from the caller's memory, call.direct) and leaves those Writes in s.ops,
// the result's first (s.dataOps).
func (s *responder) appendReplyChunksLocked(h *chunks.Header, call *svcCall, msg []byte, plan marshal.ReplyPlan) error {
	s.echo, s.echoList, s.ops = s.echo[:0], s.echoList[:0], s.ops[:0]
	dataLen := 0
	if plan.Data.Present {
		dataLen = plan.Data.N
	}
	var err error
	for i, wc := range call.hdr.WriteList {
		n := 0
		if i == 0 && dataLen > 0 {
			// An empty result (a READ at end of file) is written nowhere:
			// the echoed chunk reports 0 bytes, and nothing was staged.
			n = dataLen
			local := 0
			if call.direct != nil {
				local = call.directOff + plan.Data.Off
			} else {
				copy(call.mem.Bytes(), msg[plan.Data.Off:plan.Data.Off+dataLen])
			}
			if s.ops, err = marshal.AppendWriteOps(s.ops, local, n, wc); err != nil {
				return err
			}
			s.c.stats.writeChunks.Add(1)
		}
		start := len(s.echo)
		s.echo = marshal.AppendEchoChunk(s.echo, wc, n)
		s.echoList = append(s.echoList, s.echo[start:len(s.echo):len(s.echo)])
	}
	h.WriteList = s.echoList
	s.dataOps = len(s.ops)
	if plan.Proc != chunks.ProcNoMsg {
		return nil
	}
	// The reply, reduced when its result went to the Write chunk, through
	// the Reply chunk (RDMA_NOMSG), staged after the result (if that was
	// staged too).
	roff := 0
	if call.direct == nil {
		roff = xdr.RoundUp(dataLen)
	}
	rmem := call.mem.Bytes()[roff:roff]
	if plan.Data.Present {
		rmem = marshal.AppendReduced(rmem, msg, plan.Data)
	} else {
		rmem = append(rmem, msg...)
	}
	if s.ops, err = marshal.AppendWriteOps(s.ops, roff, len(rmem), call.hdr.ReplyChunk); err != nil {
		return err
	}
	start := len(s.echo)
	s.echo = marshal.AppendEchoChunk(s.echo, call.hdr.ReplyChunk, len(rmem))
	h.HasReplyChunk, h.ReplyChunk = true, s.echo[start:len(s.echo):len(s.echo)]
	s.c.stats.replyChunks.Add(1)
	return nil
}

// releaseReplyMemLocked frees call's reply staging once its Send completed.
func (s *responder) releaseReplyMemLocked(ep *endpoint, call *svcCall) {
	c := s.c
	if call.mem != nil {
		ep.pool.put(call.mem)
		call.mem = nil
	}
	if call.direct != nil {
		s.releaseDirectLocked(ep, call)
		c.deferDoneLocked(call.directDone)
		call.directDone = nil
	}
	if n := call.replyHeld; n > 0 {
		call.replyHeld = 0
		s.replyMem.used -= n
		s.listenerReplies.release(n)
		wake(c.writeWake)
	}
}

// releaseAllMemLocked gives back every budget the connection's calls
// hold: its endpoint ep is gone (the connection's close frees the
// registered memory itself). The dones of replies sent from the caller's
// memory (WriteMsgDirect) run once ep's connection is closed.
func (s *responder) releaseAllMemLocked(ep *endpoint) {
	c := s.c
	s.endLocked()
	s.materializeLocked()
	for i := range s.calls {
		call := &s.calls[i]
		call.mem = nil
		// A call buffer the RDMA Reads may still write until the queue
		// pair is destroyed is not given back (CallBuffers); its
		// registration goes with the connection, which keeps it alive
		// until then.
		call.pullBuf, call.pullReg = nil, nil
		if call.directDone != nil {
			call.direct = nil
			c.doneAfterCloseLocked(ep, call.directDone)
			call.directDone = nil
		}
		s.releaseCallMemLocked(call)
		if n := call.replyHeld; n > 0 {
			call.replyHeld = 0
			s.replyMem.used -= n
			s.listenerReplies.release(n)
		}
	}
	s.listenerCalls.forget(c)
	s.listenerReplies.forget(c)
}

// trimLocked trims the cache of call buffers with the chunk pool: down to
// poolKeepIdle after one idle period, all of it after the next.
func (s *responder) trimLocked(idle, again bool) {
	switch {
	case idle && !again:
		s.msgs.trim(0)
	case idle || !again:
		s.msgs.trim(poolKeepIdle)
	}
}
