package transport

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/internal/marshal"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The requester's send path (RFC 8166 §3.5, §4.3): a call takes a credit
// and a slot, its chunks are exposed through the slot's windows, and its
// Send is posted.

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
	woken    int            // callers queueReplyLocked woke since wokenLocked
	ticks    uint64         // the call watchdog's ticks (watchCalls)
	scratchH xdr.CallHeader // Write's and WriteMsg's call header, under Conn.wmu
}

// reqCall is one call slot: from the call's Send until its reply was read.
type reqCall struct {
	busy       bool // taken: from the call's Send until its reply was read
	free       bool // on the free list
	xid        uint32
	sentTick   uint64         // requester.ticks when its Send was posted
	sentGen    uint64         // endpoint.gen of the connection it was posted on
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

func (s *requester) kind() cmpriv.Role { return cmpriv.Requester }

func (s *requester) setupEndpoint(*endpoint) {}

func (s *requester) trimLocked(bool, bool) {}

func (s *requester) wokenLocked() int {
	n := s.woken
	s.woken = 0
	return n
}

func (s *requester) creditsLocked() uint32 { return s.credits.Limit() }

// versionLocked: the version of the current connection (1 between
// connections).
func (s *requester) versionLocked() uint32 {
	if ep := s.c.ep; ep != nil && ep.vers != 0 {
		return ep.vers
	}
	return chunks.Version1
}

// writeMsg sends one call under Conn.wmu: a requester's WriteMsgs are
// serialised, as its Writes.
func (s *requester) writeMsg(msg []byte) error {
	c := s.c
	c.lockW()
	defer c.unlockW()
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
		c.lock()
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
	if ep.vers == rpcrdma2.Version2 {
		// Planned with version 1's header sizes: both headers are
		// HeaderExtra bytes longer.
		t.SendInline -= rpcrdma2.HeaderExtra
		t.RecvInline -= rpcrdma2.HeaderExtra
	}
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
	if ep.vers == rpcrdma2.Version2 {
		t := rpcrdma2.HTypeMsg
		if hdr.Proc == chunks.ProcNoMsg {
			t = rpcrdma2.HTypeNoMsg
		}
		p := rpcrdma2.Prefix{XID: hdr.XID, Vers: rpcrdma2.Version2, Credit: hdr.Credits, Type: t}
		b = rpcrdma2.AppendMsg(b, &p, s.invHandleV2(hdr), hdr)
	} else {
		b = hdr.Append(b)
	}
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
	call.sentTick, call.sentGen = s.ticks, ep.gen
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
	fresh, err := ep.registerData(slot, call.dst[:plan.WriteLen])
	if fresh {
		c.stats.directRegs.Add(1)
	}
	if err != nil {
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
	fresh, err := ep.registerArg(slot, arg)
	if fresh {
		c.stats.directRegs.Add(1)
	}
	if err != nil {
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
