package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/transport/internal/marshal"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// responder is the responder's part of a Conn: its call slots, credits,
// memory budgets and the logic of RFC 8166's responder role, guarded by
// Conn.mu.
type responder struct {
	c         *Conn
	calls     []svcCall
	free      []int
	byXID     map[uint32]int
	credits   credits.Responder
	lastGrant uint32
	ops       []marshal.RemoteOp
	dataOps   int // ops[:dataOps] write the result (from call.direct, if set)
	echo      chunks.WriteChunk
	echoList  []chunks.WriteChunk
	// pulling holds, in arrival order, the calls whose RDMA Reads did not
	// all fit in the send queue, or in the memory budgets, yet (see
	// pumpReadsLocked).
	pulling ring
	// callMem and replyMem are this connection's MemoryLimits.Calls and
	// Replies; listenerCalls and listenerReplies the Listener's.
	callMem, replyMem              budget
	msgs                           bufCache // buffers of calls read by the RPC server
	listenerCalls, listenerReplies *sharedBudget
	// listenerRegs meters the callers' buffers the Listener's connections
	// hold registered (MemoryLimits.ListenerRegistered).
	listenerRegs *regMeter
	// retryFn and wakeFn are what the listener's budgets call once they
	// have room again (made once: a method value allocates).
	retryFn, wakeFn func()
	// warned is when warnLocked last logged; ended is set once the calls
	// left unanswered at the connection's end were counted.
	warned time.Time
	ended  bool
}

// Responder call states.
const (
	svcFree      = iota
	svcReading   // RDMA Reads of its chunks outstanding
	svcQueued    // waiting for Read
	svcDelivered // read by the RPC server, waiting for its reply
	svcReplying  // reply posted, Send not completed
)

// svcCall is one received call, from its Receive until its reply's Send
// completed.
type svcCall struct {
	state     int
	arrived   time.Time     // when its Receive completed (Config.SlowReply)
	hdr       chunks.Header // the call's transport header: the chunks offered
	xid       uint32
	requested uint32 // the call's rdma_credit
	recvBuf   int    // Receive buffer holding the inline part while reading
	inlineLen int
	hdrLen    int
	reads     int // RDMA Reads outstanding
	readOps   int // RDMA Reads needed to pull the Read chunks
	readsSent int // RDMA Reads posted so far
	pullLen   int // bytes of Read chunk data to pull
	// mem is the registered buffer the call's Read chunks are pulled into,
	// or its reply is staged in, while data moves; nil otherwise.
	mem verbs.Region
	// callHeld and replyHeld are the bytes the call holds of the Calls and
	// Replies budgets.
	callHeld, replyHeld int
	// direct is the registration of the reply's message (WriteMsgDirect),
	// whose DDP-eligible result is written from it at directOff, and
	// directDone the caller's done, due when the reply's Send completed
	// (or the endpoint's connection is closed); nil otherwise.
	direct     verbs.Region
	directOff  int
	directDone func()
	// msg is the call rebuilt in the Go heap; or, if inPlace, view holds
	// its pieces in the Receive buffer recvBuf and in mem (the Read
	// chunk's data), both the call's until Read took it
	// (callConsumedLocked) or the endpoint went (materializeLocked).
	msg     []byte
	view    msgView
	inPlace bool
	ch      xdr.CallHeader // Cred and Verf cleared: for the binding
	// pullBuf is the buffer of Config.CallBuffers the call is laid out in
	// (layout) while its Read chunk is pulled into it, at pullOff of the
	// registration pullReg; nil when the chunk goes to mem (see
	// pullDirectLocked). owned: msg is that buffer, the call assembled in
	// it, the CallBuffers' until a ReadMsgAlloc takes it.
	pullBuf []byte
	pullReg verbs.Region
	pullOff int
	layout  marshal.CallLayout
	owned   bool
}

// noSlot marks a Send that belongs to no call (an RDMA_ERROR).
const noSlot = 1<<28 - 1

func (s *responder) init(nRecv, nSend int, lcalls, lreplies *sharedBudget, lregs *regMeter) {
	c := s.c
	n := nRecv + nSend
	s.callMem = budget{limit: c.cfg.Memory.Calls}
	s.msgs = bufCache{maxIdle: 2 * c.cfg.MaxRPCSize}
	s.replyMem = budget{limit: c.cfg.Memory.Replies}
	s.listenerCalls, s.listenerReplies, s.listenerRegs = lcalls, lreplies, lregs
	s.retryFn, s.wakeFn = s.retryPulls, func() { wake(c.writeWake) }
	s.calls = make([]svcCall, n)
	s.free = make([]int, n)
	for i := range s.free {
		s.free[i] = n - 1 - i
	}
	s.byXID = make(map[uint32]int, n)
	p := c.cfg.GrantPolicy
	s.credits = credits.NewResponder(p)
	_ = s.credits.Post(uint32(nRecv))
	c.readQ = newRing(n)
	s.pulling = newRing(n)
}

// responderCompletionLocked handles one successful completion.
func (s *responder) completionLocked(ep *endpoint, kind uint64, slot, buf int, wc *verbs.Completion) error {
	c := s.c
	switch kind {
	case wrSend:
		ep.sendDone(buf)
		if slot != noSlot {
			s.releaseReplyMemLocked(ep, &s.calls[slot])
			s.calls[slot].state = svcFree
			s.free = append(s.free, slot)
		}
	case wrRead:
		call := &s.calls[slot]
		call.reads--
		if call.reads == 0 && call.readsSent == call.readOps {
			if err := s.callReadyLocked(ep, slot); err != nil {
				return err
			}
		}
	case wrRecv:
		c.stats.recvs.Add(1)
		return s.handleCallLocked(ep, buf, ep.recvBuf(buf)[:wc.ByteLen], wc)
	}
	// A send queue entry completed: room for Reads that had to wait.
	return s.pumpReadsLocked(ep)
}

// errReplySegments rejects a call whose Write list and Reply chunk have more
// segments than the send queue could ever serve in one reply (an RDMA Write
// per segment, and the Send): it could never be answered, so it is answered
// ERR_CHUNK at once (RFC 8166 §4.5.3) instead of stalling its reply forever.
// Only a peer that was granted a large inline threshold can send such a
// header.
var errReplySegments = &chunks.ProtocolError{Outcome: chunks.OutcomeErrChunk,
	Reason: "more Write and Reply chunk segments than one reply can serve"}

// handleCallLocked processes one received call (RFC 8166 §4.5, §3.5).
func (s *responder) handleCallLocked(ep *endpoint, buf int, data []byte, wc *verbs.Completion) error {
	c := s.c
	if err := s.credits.Received(); err != nil {
		return fmt.Errorf("%w: message received with no Receive counted as posted", ErrProtocol)
	}
	if wc.Invalidated {
		// A requester never sends with invalidate (RFC 8166 §3.4.4).
		return fmt.Errorf("%w: Send With Invalidate from a requester", ErrProtocol)
	}
	if len(s.free) == 0 {
		return fmt.Errorf("%w: more calls than credits granted", ErrProtocol)
	}
	slot := s.free[len(s.free)-1]
	call := &s.calls[slot]
	call.arrived = time.Now()
	n, err := call.hdr.ParseCall(data, &c.cfg.Limits)
	if err == nil && replyWRs(&call.hdr) > ep.sqCap/2 {
		err = errReplySegments
	}
	if err != nil {
		return s.rejectCallLocked(ep, buf, &call.hdr, err)
	}
	s.free = s.free[:len(s.free)-1]
	call.xid, call.requested, call.recvBuf, call.hdrLen, call.inlineLen = call.hdr.XID, call.hdr.Credits, buf, n, len(data)-n
	call.reads, call.pullLen = 0, 0

	if len(call.hdr.ReadList) == 0 {
		return s.callReadyLocked(ep, slot)
	}
	// Pull every Read chunk into the slot's memory with RDMA Read, in list
	// order (RFC 8166 §3.4.5).
	var total uint64
	for _, rs := range call.hdr.ReadList {
		total += uint64(rs.Length)
	}
	if total > uint64(c.cfg.MaxRPCSize) {
		s.free = append(s.free, slot)
		return s.rejectCallLocked(ep, buf, &call.hdr, chunks.ErrChunkTooLong)
	}
	s.ops = s.ops[:0]
	off := 0
	for rc := range call.hdr.ReadChunks() {
		s.ops = marshal.AppendReadOps(s.ops, off, rc)
		off += int(rc.Length())
	}
	call.pullLen = off
	call.readOps, call.readsSent = len(s.ops), 0
	if len(s.ops) == 0 { // only empty chunks
		return s.callReadyLocked(ep, slot)
	}
	call.state = svcReading
	c.stats.readChunks.Add(uint64(call.hdr.NumReadChunks()))
	s.pulling.push(slot)
	return s.pumpReadsLocked(ep)
}

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

// rejectCallLocked answers a call whose header was unusable: ERR_VERS,
// ERR_CHUNK, or nothing (RFC 8166 §4.5), and reposts its Receive.
func (s *responder) rejectCallLocked(ep *endpoint, buf int, h *chunks.Header, perr error) error {
	c := s.c
	if err := ep.repost(buf); err != nil {
		return err
	}
	_ = s.credits.Post(1)
	outcome := chunks.OutcomeOf(perr)
	c.cfg.Logger.Debug("rpcrdma: bad call header", "xid", h.XID, "err", perr, "outcome", outcome.String())
	if outcome == chunks.OutcomeDrop || !ep.canSend(1) {
		c.stats.dropped.Add(1)
		_ = s.credits.Drop()
		return nil
	}
	grant, err := s.credits.Reply(0)
	if err != nil {
		_ = s.credits.Drop()
		c.stats.dropped.Add(1)
		return nil
	}
	s.lastGrant = grant
	sb, b := ep.nextSendBuf()
	if outcome == chunks.OutcomeErrVers {
		b = chunks.AppendErrVers(b, h.XID, grant)
		c.stats.errVers.Add(1)
	} else {
		b = chunks.AppendErrChunk(b, h.XID, grant)
		c.stats.errChunk.Add(1)
	}
	// RDMA_ERROR never uses Send With Invalidate (svcrdma does the same).
	ep.appendSend(wrID(wrSend, noSlot, sb), verbs.OpSend, sb, len(b), 0)
	c.postLocked(ep)
	ep.sendPosted(sb)
	return nil
}

// callReadyLocked rebuilds slot's call once its chunks are in memory and
// hands it to Read.
func (s *responder) callReadyLocked(ep *endpoint, slot int) error {
	c := s.c
	call := &s.calls[slot]
	rb := ep.recvBuf(call.recvBuf)
	inline := rb[call.hdrLen : call.hdrLen+call.inlineLen]
	if call.hdr.Proc == chunks.ProcNoMsg {
		inline = nil
	}
	var pulled []byte
	if call.mem != nil {
		pulled = call.mem.Bytes()[:call.pullLen]
	}
	// A call of at most one Read chunk is read in place: Read copies it
	// once, from the Receive buffer and the chunk memory, which stay the
	// call's until then. Any other is rebuilt in the Go heap now, and they
	// are free at once.
	var err error
	var head, data, tail []byte
	ok := false
	if call.pullBuf == nil {
		head, data, tail, ok = marshal.CallPieces(&call.hdr, inline, pulled)
		if ok {
			if _, herr := call.ch.Unmarshal(head); herr != nil {
				ok = false // an RPC header cut by a chunk: rebuilt, to be judged whole
			}
		}
	}
	switch {
	case call.pullBuf != nil:
		// Pulled into the RPC server's buffer (Config.CallBuffers): whole
		// once the inline part is copied around the chunk.
		s.assembleLocked(ep, call, inline)
		_, err = call.ch.Unmarshal(call.msg)
	case ok:
		call.view, call.inPlace = msgView{head: head, data: data, tail: tail}, true
	default:
		call.msg, err = marshal.AppendCall(s.msgs.get(len(inline) + len(pulled))[:0], &call.hdr, inline, pulled)
		s.freeInPlaceLocked(ep, call)
		if err == nil {
			_, err = call.ch.Unmarshal(call.msg)
		}
	}
	if _, dup := s.byXID[call.xid]; err == nil && dup {
		err = ErrDuplicateXID
	}
	if err == nil && call.ch.XID != call.xid {
		err = chunks.ErrXIDMismatch
	}
	if err != nil {
		// Not a call the RPC server can answer: nothing will reply to it.
		c.stats.dropped.Add(1)
		s.warnLocked("rpcrdma: dropping a call the RPC server cannot answer", "xid", call.xid, "err", err,
			"dropped", c.stats.dropped.Load())
		s.checkAgeLocked(call, "dropped")
		_ = s.credits.Drop()
		if call.inPlace {
			call.inPlace, call.view = false, msgView{}
			s.freeInPlaceLocked(ep, call)
		}
		s.putOwnedLocked(call)
		s.releaseCallMemLocked(call)
		call.state = svcFree
		s.free = append(s.free, slot)
		if err := s.repostFreeLocked(ep); err != nil {
			return err
		}
		return s.pumpReadsLocked(ep)
	}
	call.ch.Cred, call.ch.Verf = xdr.OpaqueAuth{}, xdr.OpaqueAuth{}
	call.state = svcQueued
	s.byXID[call.xid] = slot
	c.readQ.push(slot)
	wake(c.readWake)
	return nil
}

// freeInPlaceLocked frees what call's message was read from: its chunk
// memory goes back to the pool (the Calls budget stays held until the RPC
// server read the call), and its Receive buffer is free, to be posted again
// when a call is answered, so that posted Receives plus unanswered calls
// stay constant.
func (s *responder) freeInPlaceLocked(ep *endpoint, call *svcCall) {
	ep.pool.put(call.mem)
	call.mem = nil
	ep.holdRecv(call.recvBuf)
}

// materializeLocked copies the calls still read in place into the Go heap:
// their Receive buffers and chunk memory are about to be freed with the
// endpoint, and Read may still take them.
func (s *responder) materializeLocked() {
	for i := range s.calls {
		call := &s.calls[i]
		if !call.inPlace {
			continue
		}
		call.msg = call.view.appendTo(s.msgs.get(call.view.len())[:0])
		call.inPlace, call.view = false, msgView{}
		call.mem = nil // freed with the endpoint
	}
}

// repostFreeLocked posts one Receive from the free Receive buffers.
func (s *responder) repostFreeLocked(ep *endpoint) error {
	if posted, err := ep.repostHeld(); !posted || err != nil {
		return err
	}
	return s.credits.Post(1)
}

// callConsumedLocked: Read took slot's call. Its share of the Calls budget
// is released, and calls that waited for it are pulled.
func (s *responder) callConsumedLocked(slot int) {
	c := s.c
	call := &s.calls[slot]
	call.state = svcDelivered
	if call.inPlace {
		// Read copied the call out of its Receive buffer and chunk
		// memory: both are free. The endpoint is the one the call came
		// on: had it gone, materializeLocked would have moved the call.
		call.inPlace, call.view = false, msgView{}
		if ep := c.ep; ep != nil {
			s.freeInPlaceLocked(ep, call)
		}
	}
	// The buffer goes back to the connection's cache, not kept by the
	// slot: a burst of large calls does not leave every slot holding one;
	// a CallBuffers buffer that Read or ReadMsg copied goes back there.
	if call.owned {
		s.putOwnedLocked(call)
	} else {
		s.msgs.put(call.msg)
		call.msg = nil
	}
	if s.releaseCallMemLocked(call) {
		if ep := c.ep; ep != nil {
			if err := s.pumpReadsLocked(ep); err != nil {
				go c.endpointDied(ep, err)
			}
		}
	}
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
	c.mu.Lock()
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

// errWaitMemory: a reply's staging does not fit the Replies budgets yet.
var errWaitMemory = errors.New("rpcrdma: waiting for reply memory")

// sendReply sends one RPC reply for a call received on this Conn (RFC 8166
// §3.5.4-§3.5.6): its DDP-eligible result by RDMA Write into the call's
// Write chunk, the rest inline or through the Reply chunk, with Send With
// Invalidate when both peers allow it and the call carried one rkey.
func (s *responder) sendReply(msg []byte) error { return s.sendReplyDirect(msg, nil) }

// sendReplyDirect is sendReply that may write the DDP-eligible result from
// msg in place (WriteMsgDirect) and calls done, if not nil, once msg is
// the caller's again.
func (s *responder) sendReplyDirect(msg []byte, done func()) error {
	c := s.c
	xid, mt, err := xdr.PeekXID(msg)
	if err != nil || mt != xdr.MsgReply {
		callDone(done)
		return c.opError("write", ErrNotReply)
	}
	if len(msg) > c.cfg.MaxRPCSize {
		callDone(done)
		return s.sendOversizedReply(xid)
	}
	return s.sendReplyXID(xid, msg, done)
}

// sendOversizedReply answers the call xid, whose reply exceeds MaxRPCSize,
// with ERR_CHUNK, as svcrdma does for a reply it cannot convey: the
// requester's call fails at once instead of waiting for a reply that will
// never come. The Write that carried the reply succeeds: the reply was
// conveyed, as an error; the event is logged and counted (ErrChunkSent).
func (s *responder) sendOversizedReply(xid uint32) error {
	c := s.c
	c.cfg.Logger.Warn("rpcrdma: reply exceeds MaxRPCSize: answering ERR_CHUNK", "xid", xid, "max", c.cfg.MaxRPCSize)
	return s.sendReplyXID(xid, nil, nil)
}

// sendReplyXID sends msg as the reply to call xid; a nil msg sends
// ERR_CHUNK. done, if not nil, is WriteMsgDirect's: msg may be written
// from in place, and done is called once it is the caller's again.
//
// Several goroutines may reply at once (WriteMsg). One wake-up of
// writeWake may stand for room for several of them, so a reply that
// waited passes it on once it is posted.
func (s *responder) sendReplyXID(xid uint32, msg []byte, done func()) error {
	c := s.c
	waited := false
	for {
		c.mu.Lock()
		if err := c.writeErrLocked(); err != nil {
			c.unlock()
			callDone(done)
			return err
		}
		s := s
		slot, ok := s.byXID[xid]
		if !ok || s.calls[slot].state != svcDelivered {
			c.unlock()
			callDone(done)
			return c.opError("write", ErrUnknownXID)
		}
		ep := c.ep
		if ep != nil && ep.canSend(replyWRs(&s.calls[slot].hdr)) {
			kept, err := s.postReplyLocked(ep, slot, msg, done)
			if err == errWaitMemory {
				c.unlock()
				if err := c.waitWrite(); err != nil {
					s.listenerReplies.forget(c)
					callDone(done)
					return err
				}
				waited = true
				continue
			}
			c.unlock()
			if !kept {
				callDone(done)
			}
			if err != nil {
				c.endpointDied(ep, err)
				return c.opError("write", err)
			}
			if waited {
				wake(c.writeWake)
			}
			return nil
		}
		c.unlock()
		if err := c.waitWrite(); err != nil {
			callDone(done)
			return err
		}
		waited = true
	}
}

// postReplyLocked plans and posts the reply of slot's call (RFC 8166
// §3.5.4-§3.5.6), or returns errWaitMemory, having changed nothing, while
// the Replies budgets have no room for what must go by RDMA Write. kept
// reports that the call holds msg, to be written from in place, and done
// (WriteMsgDirect's, or nil), which is then called when the reply's Send
// completed or the endpoint's connection is closed.
func (s *responder) postReplyLocked(ep *endpoint, slot int, msg []byte, done func()) (kept bool, err error) {
	c := s.c
	call := &s.calls[slot]
	plan, perr := s.planReply(ep, call, msg)
	if perr == nil {
		if done != nil {
			s.registerDirectLocked(ep, call, msg, plan, done)
		}
		if err := s.stageReplyLocked(ep, call, plan); err != nil {
			if call.direct != nil {
				s.releaseDirectLocked(ep, call)
				call.directDone = nil
			}
			return false, err
		}
	}
	if kept = call.direct != nil; kept {
		c.stats.directPlacements.Add(1)
	}

	// Post a Receive for the one this call used before granting credits.
	delete(s.byXID, call.xid)
	if err := s.repostFreeLocked(ep); err != nil {
		return kept, err
	}
	grant, err := s.credits.Reply(call.requested)
	if err != nil {
		return kept, fmt.Errorf("rpcrdma: credit accounting: %w", err)
	}
	s.lastGrant = grant
	sb, b := ep.nextSendBuf()

	if perr != nil {
		// The requester did not provide room for the reply: ERR_CHUNK
		// (RFC 8166 §4.5.3), as svcrdma does.
		c.cfg.Logger.Debug("rpcrdma: reply does not fit", "xid", call.xid, "err", perr)
		b = chunks.AppendErrChunk(b, call.xid, grant)
		c.stats.errChunk.Add(1)
		ep.appendSend(wrID(wrSend, slot, sb), verbs.OpSend, sb, len(b), 0)
		s.finishReplyLocked(ep, slot, sb)
		return false, nil
	}

	h := ep.header()
	h.XID, h.Vers, h.Credits, h.Proc = call.xid, chunks.Version1, grant, plan.Proc
	if err := s.appendReplyChunksLocked(h, call, msg, plan); err != nil {
		return kept, err
	}
	b = h.Append(b)
	if plan.Proc == chunks.ProcMsg {
		if plan.Data.Present {
			b = marshal.AppendReduced(b, msg, plan.Data)
		} else {
			b = append(b, msg...)
		}
	}
	if len(b) > ep.sendSize {
		return kept, fmt.Errorf("rpcrdma: internal error: reply of %d bytes exceeds the send buffer", len(b))
	}
	for i, op := range s.ops {
		r := call.mem
		if i < s.dataOps && call.direct != nil {
			r = call.direct
		}
		ep.appendRDMA(wrID(wrWrite, slot, 0), verbs.OpRDMAWrite, r, op.Local, op.Len, op.Offset, op.Handle)
		c.stats.rdmaWriteBytes.Add(uint64(op.Len))
	}
	op, inv := verbs.OpSend, uint32(0)
	if rkey, one := singleRKey(&call.hdr); one && ep.settings.SendWithInvalidate {
		op, inv = verbs.OpSendWithInvalidate, rkey
		c.stats.remoteInv.Add(1)
	}
	ep.appendSend(wrID(wrSend, slot, sb), op, sb, len(b), inv)
	s.finishReplyLocked(ep, slot, sb)
	return kept, nil
}

// planReply decides how call's reply msg travels (RFC 8166 §3.5.4): its
// DDP-eligible result, which the binding locates in a successful reply, in
// the call's Write chunk, and the rest inline or through the Reply chunk. A
// nil msg (a reply over MaxRPCSize) cannot travel at all.
func (s *responder) planReply(ep *endpoint, call *svcCall, msg []byte) (marshal.ReplyPlan, error) {
	var item marshal.DataItem
	if len(call.hdr.WriteList) > 0 && msg != nil {
		var rh xdr.ReplyHeader
		if results, err := rh.Unmarshal(msg); err == nil && rh.Stat == xdr.MsgAccepted && rh.AcceptStat == xdr.AcceptSuccess {
			item = s.c.cfg.Binding.ReplyData(&call.ch, msg, results)
			if item.Present && (item.Off < 0 || item.N < 0 || item.Off+xdr.RoundUp(item.N) > len(msg)) {
				item = marshal.DataItem{}
			}
		}
	}
	plan, perr := marshal.PlanReply(marshal.ReplyInput{MsgLen: len(msg), Data: item, Call: &call.hdr,
		InlineWhenFits: s.c.cfg.InlineReplies}, ep.settings.SendInline)
	if msg == nil {
		perr = ErrMessageTooLarge
	}
	return plan, perr
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

// finishReplyLocked queues the reply's batch and marks slot's call as
// replying.
func (s *responder) finishReplyLocked(ep *endpoint, slot, sb int) {
	s.c.postLocked(ep)
	ep.sendPosted(sb)
	s.checkAgeLocked(&s.calls[slot], "replied")
	s.calls[slot].state = svcReplying
}

// checkAgeLocked counts and logs call if it waited longer than
// Config.SlowReply from its arrival; what is what became of it.
func (s *responder) checkAgeLocked(call *svcCall, what string) {
	c := s.c
	if c.cfg.SlowReply < 0 {
		return
	}
	age := time.Since(call.arrived)
	if age <= c.cfg.SlowReply {
		return
	}
	c.stats.slowReplies.Add(1)
	s.warnLocked("rpcrdma: slow reply", "xid", call.xid, "outcome", what,
		"waited", age.Round(time.Millisecond), "bound", c.cfg.SlowReply, "slow_replies", c.stats.slowReplies.Load())
}

// warnLocked logs msg at Warn with the peer's address, at most once a
// second for the connection (a peer cannot flood the log); the counters
// in args tell what the silent ones were.
func (s *responder) warnLocked(msg string, args ...any) {
	now := time.Now()
	if now.Sub(s.warned) < time.Second {
		return
	}
	s.warned = now
	s.c.cfg.Logger.Warn(msg, append([]any{"remote", s.c.RemoteAddr()}, args...)...)
}

// endLocked counts and logs, once, the calls the connection ends with
// unanswered: received, and their replies not posted.
func (s *responder) endLocked() {
	if s.ended {
		return
	}
	s.ended = true
	c := s.c
	var n int
	var oldest time.Duration
	var xid uint32
	for i := range s.calls {
		call := &s.calls[i]
		switch call.state {
		case svcReading, svcQueued, svcDelivered:
			n++
			if age := time.Since(call.arrived); age > oldest {
				oldest, xid = age, call.xid
			}
		}
	}
	if n == 0 {
		return
	}
	c.stats.unanswered.Add(uint64(n))
	c.cfg.Logger.Warn("rpcrdma: connection ends with calls unanswered", "remote", c.RemoteAddr(),
		"unanswered", n, "oldest_xid", xid, "oldest_waited", oldest.Round(time.Millisecond))
}

// replyWRs bounds the work requests a reply to the call h may post: an
// RDMA Write per segment of the first Write chunk and of the Reply chunk,
// and the Send.
func replyWRs(h *chunks.Header) int {
	n := 1 + len(h.ReplyChunk)
	if len(h.WriteList) > 0 {
		n += len(h.WriteList[0])
	}
	return n
}

// singleRKey reports whether every segment of the call's chunks names the
// same rkey, and which: the condition for Send With Invalidate (RFC 8797
// §4.1; svcrdma's svc_rdma_get_inv_rkey).
func singleRKey(h *chunks.Header) (uint32, bool) {
	var rkey uint32
	seen := false
	check := func(handle uint32) bool {
		if !seen {
			rkey, seen = handle, true
			return true
		}
		return handle == rkey
	}
	for _, rs := range h.ReadList {
		if !check(rs.Handle) {
			return 0, false
		}
	}
	for _, wc := range h.WriteList {
		for _, sg := range wc {
			if !check(sg.Handle) {
				return 0, false
			}
		}
	}
	for _, sg := range h.ReplyChunk {
		if !check(sg.Handle) {
			return 0, false
		}
	}
	return rkey, seen
}

// The responder's connRole.

func (s *responder) kind() cmpriv.Role { return cmpriv.Responder }

// writeMsg sends one reply; a responder's WriteMsgs are not serialised.
func (s *responder) writeMsg(msg []byte) error {
	if err := s.c.writeCheck(); err != nil {
		return err
	}
	return s.sendReply(msg)
}

func (s *responder) writeMsgDirect(msg []byte, done func()) error {
	if err := s.c.writeCheck(); err != nil {
		done()
		return err
	}
	return s.sendReplyDirect(msg, done)
}

// send sends one reply of the record stream.
func (s *responder) send(msg []byte) error { return s.sendReply(msg) }

// sendSkipped answers the call of a reply the deframer discarded for
// exceeding MaxRPCSize with ERR_CHUNK (see sendOversizedReply); a record
// too short to name its XID fails the Write with ErrMessageTooLarge.
func (s *responder) sendSkipped(sk xdr.Skipped) error {
	if sk.HeadN < 4 {
		return s.c.opError("write", ErrMessageTooLarge)
	}
	return s.sendOversizedReply(binary.BigEndian.Uint32(sk.Head[:]))
}

func (s *responder) slotViewLocked(idx int) msgView {
	if call := &s.calls[idx]; call.inPlace {
		return call.view
	}
	return msgView{head: s.calls[idx].msg}
}

func (s *responder) slotErrLocked(int) error { return nil }

// takeOwnedLocked hands a call assembled in a buffer of
// Config.CallBuffers over to ReadMsgAlloc (alloc); ReadMsg and Read copy
// it.
func (s *responder) takeOwnedLocked(idx int, alloc bool) ([]byte, bool) {
	if !alloc {
		return nil, false
	}
	return s.takeOwnedCallLocked(idx)
}

func (s *responder) releaseSlotLocked(idx int) { s.callConsumedLocked(idx) }
func (s *responder) creditsLocked() uint32     { return s.lastGrant }

// setupEndpoint bounds the callers' buffers ep may hold registered
// (MemoryLimits.Registered and ListenerRegistered).
func (s *responder) setupEndpoint(ep *endpoint) {
	ep.regs.max, ep.regs.shared = s.c.cfg.Memory.Registered, s.listenerRegs
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

// connLostLocked gives back the memory the calls hold and fails the Conn:
// a responder does not reconnect; reads drain what was received, then
// return io.EOF if the peer disconnected.
func (s *responder) connLostLocked(ep *endpoint, err error) {
	c := s.c
	s.releaseAllMemLocked(ep)
	c.eof = errors.Is(err, verbs.ErrDisconnected)
	c.failLocked(err)
}

// lingerLocked waits for the Sends of the replies written before Close
// (Conn.lingerLocked).
func (s *responder) lingerLocked() {
	if ep := s.c.ep; ep != nil {
		s.c.lingerLocked(ep)
	}
}

func (s *responder) closeLocked(ep *endpoint) { s.releaseAllMemLocked(ep) }
func (s *responder) closed(*endpoint)         {}
