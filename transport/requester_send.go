package transport

import (
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

// requester is the requester's part of a Conn: its call slots, credits and
// the logic of RFC 8166's requester role, guarded by Conn.mu (as crypto/tls
// keeps each side's handshake state in a type that holds the *Conn).
type requester struct {
	c        *Conn
	calls    []reqCall
	free     []int          // free slots
	byXID    map[uint32]int // slot of each call in flight
	credits  credits.Requester
	resend   ring           // slots to retransmit after a reconnect
	scratchH xdr.CallHeader // Write's and WriteMsg's call header, under Conn.wmu
}

// reqCall is one call slot: from the call's Send until its reply was read.
type reqCall struct {
	busy       bool // taken: from the call's Send until its reply was read
	free       bool // on the free list
	xid        uint32
	sentAt     time.Time      // when its Send was posted
	hdr        xdr.CallHeader // Cred and Verf cleared: for the binding
	plan       marshal.CallPlan
	sendBuf    int
	sending    bool // its Send has not completed
	replied    bool // the reply arrived (or was synthesized)
	invPending int  // Local Invalidates not completed
	queued     bool // waiting in the read queue
	writeOff   int  // where the Write chunk starts in the chunk memory
	replyOff   int  // where the Reply chunk starts
	// reply is the reply, or with data set, the reply without its
	// DDP-eligible result, which is data (in the slot's chunk memory, where
	// the responder wrote it) inserted at dataOff: reading the reply copies
	// the data once, straight into the reader's buffer.
	reply   []byte
	data    []byte
	dataOff int
	err     error  // what reading the reply reports besides it (*RemoteError, ErrCallLost)
	msg     []byte // the call, copied for retransmission
	// callerMsg is the call of Call or CallInto, kept for retransmission
	// by reference instead: the caller's until the call returns, and the
	// call is never retransmitted after (an abandoned one is dropped).
	callerMsg []byte

	// dst is CallInto's buffer for the reply's DDP-eligible result.
	// placed: the Write chunk of the call's last Send was dst itself (the
	// data, if any, is in dst); placedOn: the endpoint on which dst is
	// registered and exposed, until its window is invalidated or that
	// connection is closed: while it is set the peer may write dst, and
	// CallInto does not return. cancelling: CallInto's context ended and
	// it is invalidating dst's window before it returns.
	dst        []byte
	mayExpose  bool // the call may expose caller memory (see Conn.call)
	placed     bool
	placedOn   *endpoint
	cancelling bool

	// direct: the call was made by Call, whose goroutine waits on done
	// for the reply instead of Read; abandoned: that caller gave up, and
	// the reply is dropped when it comes.
	direct, abandoned bool
	done              chan struct{}
}

// view returns the call's reply as pieces.
func (call *reqCall) view() msgView {
	if call.data == nil {
		return msgView{head: call.reply}
	}
	return msgView{head: call.reply[:call.dataOff], data: call.data, tail: call.reply[call.dataOff:]}
}

// materialize copies the reply's data out of the chunk memory, which is
// about to be freed.
func (call *reqCall) materialize() {
	if call.data == nil {
		return
	}
	v := call.view()
	call.reply = v.appendTo(nil)
	call.data = nil
}

func (s *requester) init() {
	c := s.c
	n := int(c.cfg.Credits)
	s.calls = make([]reqCall, n)
	s.free = make([]int, n)
	for i := range s.free {
		s.free[i] = n - 1 - i
		s.calls[i].free = true
		s.calls[i].done = make(chan struct{}, 1)
	}
	s.byXID = make(map[uint32]int, n)
	s.credits = credits.NewRequester(c.cfg.Credits)
	s.resend = newRing(n)
	c.readQ = newRing(n)
}

// sendCall sends one RPC call (RFC 8166 §3.5): it waits for a credit and a
// slot, plans the call, and posts it. h is scratch for its header; a direct
// call (Call) is answered through its slot's done channel, not Read, and
// its slot is returned. done, if not nil, ends the wait for a credit.
func (s *requester) sendCall(msg []byte, h *xdr.CallHeader, direct bool, dst []byte, mayExpose bool, done <-chan struct{}) (int, error) {
	c := s.c
	args, err := h.Unmarshal(msg)
	if err != nil {
		return 0, c.opError("write", fmt.Errorf("%w: %w", ErrNotCall, err))
	}
	info := c.cfg.Binding.Call(h, msg, args)
	if info.ReplyData > c.cfg.MaxRPCSize {
		// A result the reply could not carry (an NFS READ of a count
		// over MaxRPCSize): refused before a credit, a slot or any chunk
		// memory is taken for it, rather than registering that much.
		return 0, c.opError("write", fmt.Errorf("%w: the reply's DDP-eligible result may be %d bytes, over MaxRPCSize %d",
			ErrMessageTooLarge, info.ReplyData, c.cfg.MaxRPCSize))
	}
	h.Cred, h.Verf = xdr.OpaqueAuth{}, xdr.OpaqueAuth{}
	stalled := false
	for {
		c.mu.Lock()
		if err := c.writeErrLocked(); err != nil {
			c.unlock()
			return 0, err
		}
		s := s
		if _, dup := s.byXID[h.XID]; dup {
			c.unlock()
			return 0, c.opError("write", ErrDuplicateXID)
		}
		ep := c.ep
		if ep != nil && s.resend.size == 0 && len(s.free) > 0 && ep.canSend(callWRs) && s.credits.TryAcquire() {
			slot := s.free[len(s.free)-1]
			s.free = s.free[:len(s.free)-1]
			call := &s.calls[slot]
			*call = reqCall{busy: true, xid: h.XID, hdr: *h, reply: call.reply[:0], msg: call.msg[:0],
				direct: direct, done: call.done, dst: dst, mayExpose: mayExpose}
			if c.cfg.Reconnect.Enabled && c.cfg.Reconnect.Retransmit {
				if direct {
					call.callerMsg = msg
				} else {
					call.msg = append(call.msg, msg...)
				}
			}
			s.byXID[h.XID] = slot
			// A post that fails ends ep, and the loss of ep retransmits
			// or fails the call like the others in flight; err is the
			// call's own (its planning, its memory).
			err := s.postCallLocked(ep, slot, msg, info)
			if err != nil {
				s.abandonCallLocked(slot)
			}
			c.unlock()
			if err != nil {
				return 0, c.opError("write", err)
			}
			return slot, nil
		}
		if !stalled && ep != nil && s.credits.Available() == 0 {
			stalled = true
			c.stats.creditStalls.Add(1)
		}
		c.unlock()
		if err := c.waitWriteOr(done); err != nil {
			return 0, err
		}
	}
}

// callWRs bounds the send work requests of one call: two window binds and
// the Send.
const callWRs = 3

// abandonCallLocked frees a slot whose call could not be posted.
func (s *requester) abandonCallLocked(slot int) {
	call := &s.calls[slot]
	delete(s.byXID, call.xid)
	call.busy = false
	_ = s.credits.Release()
	s.maybeFreeCallLocked(slot)
}

// postCallLocked marshals the call in slot on ep and posts it: the Bind of
// the slot's window when the call has chunks, then the Send.
func (s *requester) postCallLocked(ep *endpoint, slot int, msg []byte, info CallInfo) error {
	c := s.c
	call := &s.calls[slot]
	t := marshal.Thresholds{SendInline: ep.settings.SendInline, RecvInline: ep.settings.RecvInline, MaxRPC: c.cfg.MaxRPCSize}
	plan, err := marshal.PlanCall(marshal.CallInput{MsgLen: len(msg), Arg: info.Arg, MaxReply: info.MaxReply, ReplyData: info.ReplyData}, t)
	if err != nil {
		return err
	}
	call.plan = plan

	hdr := ep.header()
	hdr.XID, hdr.Vers, hdr.Credits, hdr.Proc = call.xid, chunks.Version1, s.credits.Requested(), chunks.ProcMsg
	if plan.Form == marshal.CallLong {
		hdr.Proc = chunks.ProcNoMsg
	}
	if err := s.exposeChunksLocked(ep, slot, hdr, msg); err != nil {
		return err
	}

	buf, b := ep.nextSendBuf()
	b = hdr.Append(b)
	switch plan.Form {
	case marshal.CallInline:
		b = append(b, msg...)
		c.stats.inlineCalls.Add(1)
	case marshal.CallReadChunk:
		b = marshal.AppendReduced(b, msg, plan.Data)
		c.stats.readChunkCalls.Add(1)
	case marshal.CallLong:
		c.stats.longCalls.Add(1)
	}
	if len(b) > ep.sendSize || len(b) > ep.settings.SendInline {
		ep.discard()
		s.unexposeLocked(ep, slot)
		return fmt.Errorf("rpcrdma: internal error: planned call of %d bytes exceeds the inline threshold %d", len(b), ep.settings.SendInline)
	}
	ep.appendSend(wrID(wrSend, slot, buf), verbs.OpSend, buf, len(b), 0)
	c.postLocked(ep)
	ep.sendPosted(buf)
	call.sendBuf, call.sending = buf, true
	if c.cfg.Reconnect.CallTimeout > 0 {
		call.sentAt = time.Now()
	}
	return nil
}

// unexposeLocked forgets the binds of slot's call that were appended but
// not posted, and deregisters the caller's buffer if it was registered.
func (s *requester) unexposeLocked(ep *endpoint, slot int) {
	for which := range numExposures {
		ep.unbind(slot, which)
	}
	ep.releaseData(slot)
	call := &s.calls[slot]
	if call.placedOn == ep {
		call.placedOn = nil
	}
}

// placeDirect reports whether slot's call exposes its Write chunk in the
// caller's buffer (CallInto): the buffer holds the whole chunk and the
// chunk is at least Config.DirectPlacementMin bytes. It then registers the
// buffer; if that fails the chunk goes to the slot's memory.
func (s *requester) placeDirect(ep *endpoint, slot int) bool {
	c := s.c
	call := &s.calls[slot]
	plan := &call.plan
	if !call.mayExpose || call.dst == nil || plan.Reply&marshal.ReplyWrite == 0 || c.cfg.DirectPlacementMin < 0 ||
		plan.WriteLen < c.cfg.DirectPlacementMin || len(call.dst) < plan.WriteLen {
		return false
	}
	if err := ep.registerData(slot, call.dst[:plan.WriteLen]); err != nil {
		c.stats.directErr.Add(1)
		c.cfg.Logger.Debug("rpcrdma: registering the caller's buffer", "xid", call.xid, "err", err)
		return false
	}
	return true
}

// argInPlace reports whether slot's call exposes its Read chunk where its
// bytes are, arg in the caller's message (a call of Call or CallInto, which
// owns the message until it returns; Write and WriteMsg do not), instead
// of copying them into the slot's memory: the chunk is at least
// Config.DirectPlacementMin bytes. It then registers arg; if that fails
// the chunk is copied.
func (s *requester) argInPlace(ep *endpoint, slot int, arg []byte) bool {
	c := s.c
	call := &s.calls[slot]
	if !call.direct || !call.mayExpose || len(arg) == 0 || c.cfg.DirectPlacementMin < 0 || len(arg) < c.cfg.DirectPlacementMin {
		return false
	}
	if err := ep.registerArg(slot, arg); err != nil {
		c.stats.directErr.Add(1)
		c.cfg.Logger.Debug("rpcrdma: registering the caller's message", "xid", call.xid, "err", err)
		return false
	}
	return true
}

// exposeChunksLocked lays out the chunks of slot's call in its memory,
// [Read chunk | Write chunk | Reply chunk], each 4-byte aligned, copies what
// the Read chunk carries there, appends the binds that expose them and
// lists them in hdr. The Read chunk is exposed read-only, exactly its
// bytes; the Write and Reply chunks write-only: a window each, so a call
// with both has two rkeys (and no Send With Invalidate, RFC 8797 §4.1). A
// Write chunk placed in the caller's buffer (placeDirect) is not in the
// slot's memory: it has a window of its own over that buffer, exactly the
// chunk's bytes; so is a Read chunk exposed in place (argInPlace),
// read-only, through the read window.
func (s *requester) exposeChunksLocked(ep *endpoint, slot int, hdr *chunks.Header, msg []byte) error {
	c := s.c
	call := &s.calls[slot]
	plan := &call.plan
	call.placed = s.placeDirect(ep, slot)
	writeLen := plan.WriteLen
	if call.placed {
		writeLen = 0
		call.placedOn = ep
		rkey := ep.appendBind(slot, exposeData, 0, plan.WriteLen, verbs.AccessRemoteWrite)
		hdr.WriteList = ep.oneWriteChunk(chunks.Segment{Handle: rkey, Length: uint32(plan.WriteLen), Offset: ep.chunkMem[slot].dataRegion.Addr(ep.chunkMem[slot].dataOff)})
		c.stats.writeChunks.Add(1)
		c.stats.directPlacements.Add(1)
		c.stats.chunksOffered.Add(uint64(plan.WriteLen))
	}
	// The Read chunk's bytes, where they are in the message.
	arg := msg
	pos := uint32(0)
	if plan.Form == marshal.CallReadChunk {
		arg = msg[plan.Data.Off : plan.Data.Off+plan.Data.N]
		pos = uint32(plan.Data.Off)
	}
	inPlace := plan.ChunkLen > 0 && s.argInPlace(ep, slot, arg)
	chunkLen := plan.ChunkLen
	if inPlace {
		chunkLen = 0
		call.placedOn = ep
		cb := &ep.chunkMem[slot]
		rkey := ep.appendBind(slot, exposeRead, 0, plan.ChunkLen, verbs.AccessRemoteRead)
		hdr.ReadList = append(hdr.ReadList, chunks.ReadSegment{Position: pos,
			Segment: chunks.Segment{Handle: rkey, Length: uint32(plan.ChunkLen), Offset: cb.argRegion.Addr(cb.argOff)}})
		c.stats.readChunks.Add(1)
		c.stats.readChunksInPlace.Add(1)
		c.stats.chunksOffered.Add(uint64(plan.ChunkLen))
	}
	call.writeOff = xdr.RoundUp(chunkLen)
	call.replyOff = call.writeOff + xdr.RoundUp(writeLen)
	total := call.replyOff + xdr.RoundUp(plan.ReplyLen)
	if total == 0 {
		return nil
	}
	cb, err := ep.chunk(slot, total)
	if err != nil {
		if call.placed || inPlace {
			s.unexposeLocked(ep, slot)
		}
		return err
	}
	base := cb.region.Addr(0)
	if chunkLen > 0 {
		copy(cb.region.Bytes(), arg)
		rkey := ep.appendBind(slot, exposeRead, 0, plan.ChunkLen, verbs.AccessRemoteRead)
		hdr.ReadList = append(hdr.ReadList, chunks.ReadSegment{Position: pos,
			Segment: chunks.Segment{Handle: rkey, Length: uint32(plan.ChunkLen), Offset: base}})
		c.stats.readChunks.Add(1)
	}
	if plan.Reply&marshal.ReplyLong != 0 || plan.Reply&marshal.ReplyWrite != 0 && !call.placed {
		rkey := ep.appendBind(slot, exposeWrite, call.writeOff, total-call.writeOff, verbs.AccessRemoteWrite)
		if plan.Reply&marshal.ReplyWrite != 0 && !call.placed {
			hdr.WriteList = ep.oneWriteChunk(chunks.Segment{Handle: rkey, Length: uint32(plan.WriteLen), Offset: base + uint64(call.writeOff)})
			c.stats.writeChunks.Add(1)
		}
		if plan.Reply&marshal.ReplyLong != 0 {
			hdr.HasReplyChunk = true
			hdr.ReplyChunk = ep.oneSegmentChunk(chunks.Segment{Handle: rkey, Length: uint32(plan.ReplyLen), Offset: base + uint64(call.replyOff)})
			c.stats.replyChunks.Add(1)
		}
	}
	c.stats.chunksOffered.Add(uint64(total))
	return nil
}

// ErrCallTimeout is the cause of a connection dropped because a call had no
// reply within ReconnectPolicy.CallTimeout.
var ErrCallTimeout = errors.New("rpcrdma: call timed out: dropping the connection")

// watchCalls drops the connection when a call sent on it has had no reply
// for CallTimeout, so that the reconnection retransmits or fails it.
func (s *requester) watchCalls() {
	c := s.c
	defer c.bg.Done()
	timeout := c.cfg.Reconnect.CallTimeout
	t := time.NewTicker(max(timeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case now := <-t.C:
			c.mu.Lock()
			ep := c.ep
			stuck := false
			for i := range s.calls {
				call := &s.calls[i]
				// Calls sent on an earlier connection wait for their
				// retransmission; only this connection's count.
				if ep != nil && call.busy && !call.replied &&
					!call.sentAt.Before(ep.started) && now.Sub(call.sentAt) > timeout {
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

// requesterCompletionLocked handles one successful completion.
func (s *requester) completionLocked(ep *endpoint, kind uint64, slot, buf int, wc *verbs.Completion) error {
	c := s.c
	switch kind {
	case wrSend:
		ep.sendDone(buf)
		s.calls[slot].sending = false
		s.maybeFreeCallLocked(slot)
	case wrLocalInv:
		call := &s.calls[slot]
		call.invPending--
		ep.unbind(slot, buf)
		s.releasedLocked(ep, slot)
		s.queueReplyLocked(slot)
	case wrRecv:
		c.stats.recvs.Add(1)
		err := s.handleReplyLocked(ep, ep.recvBuf(buf)[:wc.ByteLen], wc)
		if rerr := ep.repost(buf); rerr != nil && err == nil {
			err = rerr
		}
		s.pumpResendLocked()
		return err
	}
	return nil
}

// handleReplyLocked processes one received reply (RFC 8166 §3.5.4-§3.5.6,
// §4.5). A reply that breaks the protocol in a way that leaves a call's
// memory exposed (a Send With Invalidate for an rkey that is not the
// call's) kills the connection; a malformed reply to a known call fails that
// call; anything else is dropped and counted.
func (s *requester) handleReplyLocked(ep *endpoint, data []byte, wc *verbs.Completion) error {
	c := s.c
	h := &ep.hdr
	n, perr := h.ParseReply(data, &c.cfg.Limits)
	if perr != nil && chunks.ReplyOutcomeOf(perr) == chunks.OutcomeDrop {
		c.stats.badReplies.Add(1)
		if wc.Invalidated {
			return fmt.Errorf("%w: Send With Invalidate on an unparsable reply", ErrProtocol)
		}
		return nil
	}
	slot, ok := s.byXID[h.XID]
	if !ok || s.calls[slot].replied {
		c.stats.badXIDs.Add(1)
		if wc.Invalidated {
			return fmt.Errorf("%w: Send With Invalidate with unknown xid %#x", ErrProtocol, h.XID)
		}
		return nil
	}
	call := &s.calls[slot]
	if wc.Invalidated {
		// RFC 8166 §3.4.4 / RFC 8797 §4.1: the rkey invalidated must be
		// one of this call's; Linux checks the same (rpcrdma_reply_handler).
		if !ep.remoteInvalidated(slot, wc.InvalidatedRKey) {
			return fmt.Errorf("%w: Send With Invalidate of rkey %#x, not the call's", ErrProtocol, wc.InvalidatedRKey)
		}
		c.stats.remoteInv.Add(1)
	}
	if _, err := s.credits.Complete(h.Credits); err != nil {
		return fmt.Errorf("rpcrdma: credit accounting: %w", err)
	}
	call.replied = true
	delete(s.byXID, call.xid)

	if perr != nil {
		c.stats.badReplies.Add(1)
		s.failCallLocked(call, fmt.Errorf("%w for xid %#x: %v", ErrBadReply, h.XID, perr))
	} else if h.Proc == chunks.ProcError {
		c.stats.remoteErrors.Add(1)
		s.failCallLocked(call, &RemoteError{XID: h.XID, Code: uint32(h.ErrCode), Low: h.VersLow, High: h.VersHigh})
	} else if err := s.buildReplyLocked(ep, slot, data[n:]); err != nil {
		c.stats.badReplies.Add(1)
		c.cfg.Logger.Debug("rpcrdma: bad reply", "xid", h.XID, "err", err)
		s.failCallLocked(call, fmt.Errorf("%w for xid %#x: %v", ErrBadReply, h.XID, err))
	}

	// What the responder did not invalidate, we invalidate ourselves
	// before the call completes, so the peer cannot touch the memory again.
	s.releasedLocked(ep, slot) // by the Send With Invalidate
	for which := range numExposures {
		if ep.appendLocalInv(slot, which) {
			call.invPending++
		}
	}
	if call.invPending > 0 {
		c.postLocked(ep)
		c.stats.localInv.Add(1)
		return nil
	}
	s.queueReplyLocked(slot)
	return nil
}

// buildReplyLocked reconstructs the reply of slot's call from the inline part
// and the chunks the responder wrote into the slot's memory.
func (s *requester) buildReplyLocked(ep *endpoint, slot int, inline []byte) error {
	c := s.c
	call := &s.calls[slot]
	h := &ep.hdr
	var mem []byte
	if cb := &ep.chunkMem[slot]; cb.region != nil {
		mem = cb.region.Bytes()
	}
	msg := inline
	if h.Proc == chunks.ProcNoMsg {
		// The reply came through the Reply chunk (RFC 8166 §3.5.6).
		n := h.ReplyChunk.Length()
		if call.plan.Reply&marshal.ReplyLong == 0 || n > uint64(call.plan.ReplyLen) {
			return errors.New("reply chunk not offered or overrun")
		}
		msg = mem[call.replyOff : call.replyOff+int(n)]
	}
	switch len(h.WriteList) {
	case 0:
	case 1:
		written := h.WriteList[0].Length()
		if call.plan.Reply&marshal.ReplyWrite == 0 || written > uint64(call.plan.WriteLen) {
			return errors.New("write chunk not offered or overrun")
		}
		if written == 0 {
			// Nothing placed: an error reply, a READ of 0 bytes, or a
			// result the responder returned inline. A DDP-eligible item
			// whose length word claims bytes that are neither placed nor
			// inline is a lie; passing the reply up would hand the RPC
			// layer a truncated message instead of a failed call.
			var rh xdr.ReplyHeader
			if results, err := rh.Unmarshal(msg); err == nil {
				if item := c.cfg.Binding.ReplyData(&call.hdr, msg, results); item.Present && item.N > 0 && (item.Off < 0 || item.Off+item.N > len(msg)) {
					return errors.New("write chunk reports no data and the reply's DDP-eligible item is not inline")
				}
			}
			break
		}
		var rh xdr.ReplyHeader
		results, err := rh.Unmarshal(msg)
		if err != nil {
			return err
		}
		item := c.cfg.Binding.ReplyData(&call.hdr, msg, results)
		if !item.Present || item.Off < 0 || item.Off > len(msg) || uint64(xdr.RoundUp(item.N)) < written || uint64(item.N) > written {
			return errors.New("write chunk data does not match the reply's DDP-eligible item")
		}
		// The data stays where the responder placed it until the reply
		// is read (the slot and its memory are the call's until then),
		// or it is in the caller's buffer already.
		call.reply = append(call.reply[:0], msg...)
		if call.placed {
			call.data = call.dst[:item.N:item.N]
		} else {
			call.data = mem[call.writeOff : call.writeOff+item.N : call.writeOff+item.N]
		}
		call.dataOff = item.Off
		return nil
	default:
		return errors.New("more than one write chunk in a reply")
	}
	call.reply = append(call.reply[:0], msg...)
	call.data = nil
	return nil
}

// failCallLocked makes slot's reply a synthesized RPC reply that fails the
// call: MSG_ACCEPTED with SYSTEM_ERR (RFC 5531 §9), which any RPC client
// reports as an error for that XID. err is what ReadMsg and Call report
// with it: a *RemoteError, or an error wrapping ErrCallLost or
// ErrBadReply.
func (s *requester) failCallLocked(call *reqCall, err error) {
	call.err = err
	call.data = nil
	rh := xdr.ReplyHeader{XID: call.xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSystemErr}
	call.reply = rh.Append(call.reply[:0])
}

// releasedLocked notes that the caller's buffer of slot's call is no
// longer exposed on ep (its window was invalidated and the buffer
// deregistered), and wakes a cancelled CallInto waiting for that.
func (s *requester) releasedLocked(ep *endpoint, slot int) {
	call := &s.calls[slot]
	if call.placedOn == ep && !ep.chunkMem[slot].callerMemory() {
		call.placedOn = nil
		if call.cancelling {
			wake(call.done)
		}
	}
}

// queueReplyLocked hands slot's reply to Read, or to the Call waiting for
// it; the reply of an abandoned Call is dropped.
func (s *requester) queueReplyLocked(slot int) {
	c := s.c
	call := &s.calls[slot]
	if !call.replied || call.invPending > 0 || call.queued {
		return
	}
	call.queued = true
	switch {
	case call.abandoned:
		s.replyConsumedLocked(slot)
	case call.direct:
		wake(call.done)
	default:
		c.readQ.push(slot)
		wake(c.readWake)
	}
}

// replyConsumedLocked: Read took slot's reply.
func (s *requester) replyConsumedLocked(slot int) {
	call := &s.calls[slot]
	call.queued, call.busy = false, false
	call.direct, call.abandoned = false, false
	call.data, call.err = nil, nil
	call.dst, call.placed, call.cancelling = nil, false, false
	call.callerMsg = nil
	s.maybeFreeCallLocked(slot)
}

// maybeFreeCallLocked returns slot to the free list once its reply was read
// and its Send completed.
func (s *requester) maybeFreeCallLocked(slot int) {
	c := s.c
	call := &s.calls[slot]
	if call.busy || call.sending || call.invPending > 0 || call.free {
		return
	}
	call.free, call.replied = true, false
	s.free = append(s.free, slot)
	wake(c.writeWake)
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

// requesterLostLocked handles the loss of the requester's connection.
func (s *requester) lostLocked(ep *endpoint, err error) {
	c := s.c
	// Conn.endpointDied closed ep's connection, which deregistered the
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
		c.mu.Lock()
		if c.closed {
			c.unlock()
			// ep was never started: it has no poll loop to stop, so
			// Conn.shutdown (which cancels and waits for it) must not run.
			_ = ep.vc.Close()
			return
		}
		c.ep = ep
		s.credits.Reset()
		c.stats.reconnects.Add(1)
		c.cfg.Logger.Info("rpcrdma: reconnected", "negotiated", fmt.Sprintf("%+v", negotiated(ep.settings)))
		c.startEndpoint(ep)
		s.pumpResendLocked()
		c.wakeAllLocked()
		c.unlock()
		return
	}
	c.mu.Lock()
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

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// The requester's connRole.

func (s *requester) kind() cmpriv.Role { return cmpriv.Requester }

// writeMsg sends one call under Conn.wmu: a requester's WriteMsgs are
// serialised, as its Writes.
func (s *requester) writeMsg(msg []byte) error {
	c := s.c
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.writeCheck(); err != nil {
		return err
	}
	return s.send(msg)
}

// writeMsgDirect is writeMsg followed by done: a call has no reply data
// to place from the caller's memory.
func (s *requester) writeMsgDirect(msg []byte, done func()) error {
	err := s.writeMsg(msg)
	done()
	return err
}

// send sends one call of the record stream.
func (s *requester) send(msg []byte) error {
	if len(msg) > s.c.cfg.MaxRPCSize {
		return s.c.opError("write", ErrMessageTooLarge)
	}
	_, err := s.sendCall(msg, &s.scratchH, false, nil, false, nil)
	return err
}

// sendSkipped fails a call the deframer discarded for exceeding
// MaxRPCSize with ErrMessageTooLarge.
func (s *requester) sendSkipped(xdr.Skipped) error {
	return s.c.opError("write", ErrMessageTooLarge)
}

func (s *requester) slotViewLocked(idx int) msgView { return s.calls[idx].view() }
func (s *requester) slotErrLocked(idx int) error    { return s.calls[idx].err }

// takeOwnedLocked: a reply is never in a buffer of the caller's.
func (s *requester) takeOwnedLocked(int, bool) ([]byte, bool) { return nil, false }

func (s *requester) releaseSlotLocked(idx int) { s.replyConsumedLocked(idx) }
func (s *requester) creditsLocked() uint32     { return s.credits.Limit() }
func (s *requester) setupEndpoint(*endpoint)   {}
func (s *requester) trimLocked(bool, bool)     {}
func (s *requester) lingerLocked()             {}

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
	c.mu.Lock()
	s.lostLocked(ep, err)
}

// closeLocked: a reply that arrived before Close is still the Call's to
// take (its goroutine may be about to): its data is copied out of ep's
// chunk memory, which shutdown unmaps, as connLostLocked does.
func (s *requester) closeLocked(*endpoint) { s.materializeLocked() }

// closed forgets the callers' buffers registered on ep: they went with it.
func (s *requester) closed(ep *endpoint) {
	s.c.mu.Lock()
	s.forgetPlacedLocked(ep)
	s.c.unlock()
}
