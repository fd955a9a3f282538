package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/internal/marshal"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The responder's send path (RFC 8166 §3.5.4-§3.5.6, §4.5.3): a reply is
// planned, its chunk data written by RDMA Write, and its Send posted, with
// Send With Invalidate when allowed; as svcrdma's svc_rdma_sendto.c.

// errWaitMemory: a reply's staging does not fit the Replies budgets yet.
var errWaitMemory = errors.New("rpcrdma: waiting for reply memory")

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

func (s *responder) creditsLocked() uint32 { return s.lastGrant }

// versionLocked: the version the connection's first message decided
// (decideVersionLocked); before it, 1 if version 1 is all this side
// speaks, else 0.
func (s *responder) versionLocked() uint32 {
	if s.vers == 0 && !s.c.cfg.AcceptVersion2 {
		return chunks.Version1
	}
	return s.vers
}

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
		c.lock()
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
				if s.calls[slot].inlined {
					c.unlock()
					return s.replyLater(xid, msg, done)
				}
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
		inlined := ep != nil && s.calls[slot].inlined
		c.unlock()
		if inlined {
			return s.replyLater(xid, msg, done)
		}
		if err := c.waitWrite(); err != nil {
			callDone(done)
			return err
		}
		waited = true
	}
}

// replyLater posts, from a goroutine of its own, the reply of a call
// executed on the poll loop (serveInline) that must wait for room: the
// poll loop, which makes that room, cannot wait. msg is copied (the
// handler may reuse it once WriteMsg returns); done is called now.
func (s *responder) replyLater(xid uint32, msg []byte, done func()) error {
	cp := append([]byte(nil), msg...)
	callDone(done)
	c := s.c
	c.lock()
	if c.closed {
		c.unlock()
		return c.opError("write", net.ErrClosed)
	}
	c.bg.Add(1)
	c.unlock()
	go func() {
		defer c.bg.Done()
		c.lock()
		if slot, ok := s.byXID[xid]; ok {
			s.calls[slot].inlined = false
		}
		c.unlock()
		_ = s.sendReplyXID(xid, cp, nil)
	}()
	return nil
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
		if call.v2 {
			// RDMA2_ERR_REPLY_RESOURCE, with the bytes the reply needs
			// (draft §5.3.3).
			b = rpcrdma2.AppendError(b, call.xid, grant, rpcrdma2.Error{Code: rpcrdma2.ErrReplyResource, LengthNeeded: uint32(len(msg))})
		} else {
			b = chunks.AppendErrChunk(b, call.xid, grant)
		}
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
	if call.v2 {
		b = appendReplyHeaderV2(b, call, grant, h)
	} else {
		b = h.Append(b)
	}
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
	rkey, one := singleRKey(&call.hdr)
	one = one && ep.settings.SendWithInvalidate
	if call.v2 {
		rkey, one = invalidateV2(call)
	}
	if one {
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
	sendInline := ep.settings.SendInline
	if call.v2 {
		sendInline -= rpcrdma2.HeaderExtra // planned with version 1's header sizes
	}
	plan, perr := marshal.PlanReply(marshal.ReplyInput{MsgLen: len(msg), Data: item, Call: &call.hdr,
		InlineWhenFits: s.c.cfg.InlineReplies}, sendInline)
	if msg == nil {
		perr = ErrMessageTooLarge
	}
	return plan, perr
}

// finishReplyLocked queues the reply's batch and marks slot's call as
// replying.
func (s *responder) finishReplyLocked(ep *endpoint, slot, sb int) {
	s.c.postLocked(ep)
	ep.sendPosted(sb)
	s.checkAgeLocked(&s.calls[slot], "replied")
	s.calls[slot].state = svcReplying
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
