package transport

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/internal/monotime"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/internal/marshal"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The responder's receive path (RFC 8166 §4.5, §3.5): a call is parsed,
// its Read chunks pulled (responder_rw.go), and it is rebuilt and handed
// to Read; as svcrdma's svc_rdma_recvfrom.c.

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
	// vers is the RPC-over-RDMA version the connection runs, set by its
	// first message (decideVersionLocked): 0 until then. h2 is the parse
	// of a version 2 message, whose chunk lists then move to the call's
	// hdr.
	vers uint32
	h2   rpcrdma2.Header
	// rev is the reverse-direction calls this side makes (ReverseCall).
	rev reverseCalls

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
	// arrivals stamps the calls of one poll (handleCallLocked), inlineNow
	// the replies of the serveInline run that follows it
	// (checkAgeLocked): owned by the poll loop, reset for each poll.
	arrivals, inlineNow batchClock
	// inline is the handler of SetInlineHandler (nil: none); inlineQ
	// holds, in arrival order, the calls queued for it (inlineLocked),
	// which the poll loop serves once it releases the lock (serveInline).
	// inlineBuf is the poll loop's copy of the call it serves, or shows
	// to Inline (a call in pieces): owned by the poll loop, not by the
	// lock (every completion, so every call made ready, is handled there).
	inline    InlineHandler
	inlineQ   ring
	inlineBuf []byte
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
	state   int
	arrived time.Time     // when its Receive completed (Config.SlowReply)
	hdr     chunks.Header // the call's transport header: the chunks offered
	// v2: the call came in RPC-over-RDMA version 2 (its reply goes in
	// version 2), with invHandle its rdma_inv_handle.
	v2        bool
	invHandle uint32
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
	// inlined: the call is being executed on the poll loop
	// (serveInline): its reply must not wait for room (sendReplyXID).
	inlined bool
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
	s.rev = reverseCalls{credit: 1, out: make(map[uint32]*reverseCall)}
	p := c.cfg.GrantPolicy
	s.credits = credits.NewResponder(p)
	_ = s.credits.Post(uint32(nRecv))
	c.readQ = newRing(n)
	s.inlineQ = newRing(n)
	s.pulling = newRing(n)
}

func (s *responder) kind() cmpriv.Role { return cmpriv.Responder }

func (s *responder) wokenLocked() int { return 0 }

// setupEndpoint bounds the callers' buffers ep may hold registered
// (MemoryLimits.Registered and ListenerRegistered).
func (s *responder) setupEndpoint(ep *endpoint) {
	ep.regs.max, ep.regs.shared = s.c.cfg.Memory.Registered, s.listenerRegs
}

// completionLocked handles one successful completion of ep: a reply's
// Send, an RDMA Read of a call's Read chunk, or a call's Receive.
func (s *responder) completionLocked(ep *endpoint, kind uint64, slot, buf int, wc *verbs.Completion) error {
	c := s.c
	switch kind {
	case wrSend:
		ep.sendDone(buf)
		if s.rev.room != nil {
			s.reverseRoomLocked() // a Send buffer for a ReverseCall
		}
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
	if s.vers == rpcrdma2.Version2 && rpcrdma2.IsResponse(data) {
		// An answer to a reverse-direction call, in a Receive posted
		// for it beyond the forward credits.
		return s.reverseAnswerLocked(ep, buf, data, wc)
	}
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
	call.arrived = s.arrivals.now()
	var n int
	var err error
	xid := &call.hdr.XID
	if s.decideVersionLocked(data) == rpcrdma2.Version2 {
		var done bool
		xid = &s.h2.XID
		if n, done, err = s.parseCallV2Locked(ep, buf, call, data); done {
			return err
		}
	} else {
		n, err = call.hdr.ParseCall(data, &c.cfg.Limits)
		call.v2 = false
	}
	if err == nil && replyWRs(&call.hdr) > ep.sqCap/2 {
		err = errReplySegments
	}
	if err != nil {
		return s.rejectCallLocked(ep, buf, *xid, err)
	}
	s.free = s.free[:len(s.free)-1]
	call.xid, call.requested, call.recvBuf, call.hdrLen, call.inlineLen = call.hdr.XID, call.hdr.Credits, buf, n, len(data)-n
	call.reads, call.pullLen, call.inlined = 0, 0, false

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
		return s.rejectCallLocked(ep, buf, call.xid, chunks.ErrChunkTooLong)
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

// rejectCallLocked answers the call xid whose header was unusable:
// ERR_VERS, ERR_CHUNK, or nothing (RFC 8166 §4.5); on a version 2
// connection the RDMA2_ERROR errorV2 chooses, or nothing. It reposts the
// call's Receive.
func (s *responder) rejectCallLocked(ep *endpoint, buf int, xid uint32, perr error) error {
	c := s.c
	if err := ep.repost(buf); err != nil {
		return err
	}
	_ = s.credits.Post(1)
	outcome := chunks.OutcomeOf(perr)
	var e2 rpcrdma2.Error
	if s.vers == rpcrdma2.Version2 {
		var drop bool
		e2, drop = s.errorV2(ep, perr)
		switch {
		case drop:
			outcome = chunks.OutcomeDrop
		case e2.Code == rpcrdma2.ErrVers:
			outcome = chunks.OutcomeErrVers
		default:
			outcome = chunks.OutcomeErrChunk
		}
	}
	c.cfg.Logger.Debug("rpcrdma: bad call header", "xid", xid, "err", perr, "outcome", outcome.String(), "version", s.vers)
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
	switch {
	case s.vers == rpcrdma2.Version2:
		b = rpcrdma2.AppendError(b, xid, grant, e2)
	case outcome == chunks.OutcomeErrVers:
		b = chunks.AppendErrVers(b, xid, grant)
	default:
		b = chunks.AppendErrChunk(b, xid, grant)
	}
	if outcome == chunks.OutcomeErrVers {
		c.stats.errVers.Add(1)
	} else {
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
	if s.inlineLocked(call) {
		s.inlineQ.push(slot) // served by the poll loop once it unlocks: no reader woken
		return nil
	}
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

// checkAgeLocked counts and logs call if it waited longer than
// Config.SlowReply from its arrival; what is what became of it. The
// replies of calls the poll loop serves inline are timed once per
// serveInline run (inlineNow).
func (s *responder) checkAgeLocked(call *svcCall, what string) {
	c := s.c
	if c.cfg.SlowReply < 0 {
		return
	}
	var now time.Time
	if call.inlined {
		now = s.inlineNow.now()
	} else {
		now = monotime.Now()
	}
	age := now.Sub(call.arrived)
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

// connLostLocked gives back the memory the calls hold and fails the Conn:
// a responder does not reconnect; reads drain what was received, then
// return io.EOF if the peer disconnected.
func (s *responder) connLostLocked(ep *endpoint, err error) {
	c := s.c
	s.releaseAllMemLocked(ep)
	s.requeueInlineLocked()
	c.eof = errors.Is(err, verbs.ErrDisconnected)
	c.failLocked(err)
	s.endReverseLocked(err)
}

// lingerLocked waits for the Sends of the replies written before Close
// (Conn.lingerLocked).
func (s *responder) lingerLocked() {
	if ep := s.c.ep; ep != nil {
		s.c.lingerLocked(ep)
	}
}

// closeLocked gives back what the calls hold and then drops the
// connection's call state (releaseStateLocked).
func (s *responder) closeLocked(ep *endpoint) {
	s.endReverseLocked(net.ErrClosed)
	s.releaseAllMemLocked(ep)
	s.releaseStateLocked()
}

// releaseStateLocked drops the call slots, the index by XID, the queues
// and the cached message buffers at Close, so that a closed Conn kept for
// its Stats holds its counters and little else. Nothing touches them any
// more: Conn.ep is nil (completions, trims and budget retries check it
// under Conn.mu and find another or none), Conn.closed is set (reads and
// writes check it, or writeErrLocked, under Conn.mu before they look at a
// slot), and releaseAllMemLocked has handed the memory the calls held
// back. A call buffer of Config.CallBuffers still holding a queued call
// goes back to them.
func (s *responder) releaseStateLocked() {
	c := s.c
	c.assertLocked("releaseStateLocked")
	for i := range s.calls {
		s.putOwnedLocked(&s.calls[i])
	}
	s.calls, s.free, s.byXID = nil, nil, nil
	s.ops, s.echoList = nil, nil
	s.pulling, s.inlineQ, c.readQ, c.cur = ring{}, ring{}, ring{}, -1
	s.inline, s.inlineBuf = nil, nil
	s.msgs = bufCache{}
}

func (s *responder) closed(*endpoint) {}

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
