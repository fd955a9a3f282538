package transport

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/internal/marshal"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The requester's receive path (RFC 8166 §3.5.4-§3.5.6, §4.5): a reply is
// matched to its call by XID, its chunks are invalidated, and it is handed
// to Read or to the Call waiting for it.

// completionLocked handles one successful completion of ep: a call's Send,
// a Local Invalidate of its windows, or a reply's Receive.
func (s *requester) completionLocked(ep *endpoint, kind uint64, slot, buf int, wc *verbs.Completion) error {
	c := s.c
	switch kind {
	case wrSend:
		ep.sendDone(buf)
		if slot != noSlot { // else the answer to a reverse call
			s.calls[slot].sending = false
			s.maybeFreeCallLocked(slot)
		}
		if len(ep.answers) > 0 {
			s.sendAnswersLocked(ep)
		}
	case wrLocalInv:
		call := &s.calls[slot]
		call.invPending--
		ep.unbind(slot, buf)
		s.releasedLocked(ep, slot)
		s.queueReplyLocked(slot)
		if len(ep.answers) > 0 {
			s.sendAnswersLocked(ep)
		}
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
	var n int
	var perr error
	var drop bool
	if ep.vers == rpcrdma2.Version2 {
		var handled bool
		if n, handled, drop, perr = s.parseReplyV2Locked(ep, data); perr == rpcrdma2.ErrNotReply {
			return s.serveReverseLocked(ep, data, wc)
		} else if handled {
			if wc.Invalidated {
				return fmt.Errorf("%w: Send With Invalidate on an RDMA2_CONNPROP", ErrProtocol)
			}
			return nil
		}
	} else {
		n, perr = h.ParseReply(data, &c.cfg.Limits)
		drop = perr != nil && chunks.ReplyOutcomeOf(perr) == chunks.OutcomeDrop
	}
	if drop {
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
	call.reply = appendSystemErr(call.reply[:0], call.xid)
}

// appendSystemErr appends an RPC reply to xid that fails the call:
// MSG_ACCEPTED with SYSTEM_ERR (RFC 5531 §9).
func appendSystemErr(b []byte, xid uint32) []byte {
	rh := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSystemErr}
	return rh.Append(b)
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
		s.woken++
		wake(call.done)
	default:
		s.woken++
		c.readQ.push(slot)
		wake(c.readWake)
	}
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

func (s *requester) slotViewLocked(idx int) msgView { return s.calls[idx].view() }

func (s *requester) slotErrLocked(idx int) error { return s.calls[idx].err }

// takeOwnedLocked: a reply is never in a buffer of the caller's.
func (s *requester) takeOwnedLocked(int, bool) ([]byte, bool) { return nil, false }

func (s *requester) releaseSlotLocked(idx int) { s.replyConsumedLocked(idx) }

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

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
