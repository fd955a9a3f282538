package transport

import (
	"context"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The requester's side of reverse-direction RPC (reverse_call.go has the
// model): a call from the responder, an RDMA2_MSG without
// RPCRDMA2_F_RESPONSE, is copied out of its Receive, which is reposted at
// once, and handed to Config.ReverseHandler on a goroutine of its own (a
// handler may block); its answer goes back inline on the same connection.

// ReverseHandler serves one reverse-direction call (draft §4.2.2): call is
// the RPC call message the responder sent, which the handler may keep;
// reply must be an RPC reply with the call's XID. ctx ends when the
// connection does, and the reply is then dropped: a reverse call is
// answered on the connection it came on (RFC 8167 §4), or not at all.
//
// An error, or a reply that is not a reply to call or does not fit the
// responder's inline threshold with its header (rpcrdma2.EmptyMsgSize
// bytes), is logged and answered with MSG_ACCEPTED SYSTEM_ERR (RFC 5531
// §9), so the responder's call ends and its credit comes back. Several
// handlers may run at once, up to the reverse-direction credits.
type ReverseHandler func(ctx context.Context, call []byte) (reply []byte, err error)

// reverseAnswer is the answer to one reverse call: an RPC reply, or, when
// err.Code is not 0, an RDMA2_ERROR.
type reverseAnswer struct {
	xid   uint32
	reply []byte
	err   rpcrdma2.Error
}

// noLists is the chunk lists of an inline message: none.
var noLists chunks.Header

// serveReverseLocked handles data, a version 2 call (RDMA2_MSG or
// RDMA2_NOMSG without RPCRDMA2_F_RESPONSE) from the responder. Without
// reverse-direction calls on the connection it is dropped and counted in
// ReverseDropped; with chunks, which this side does not take
// (RDMA2_RVREQSUP_INLINE), or a header that does not validate, it is
// answered with an RDMA2_ERROR: RDMA2_ERR_READ_CHUNKS or _WRITE_CHUNKS or
// _SEGMENTS naming 0 as this side's limit, else RDMA2_ERR_BAD_XDR. More
// calls in flight than reverseCredits is a protocol violation.
func (s *requester) serveReverseLocked(ep *endpoint, data []byte, wc *verbs.Completion) error {
	c := s.c
	if wc.Invalidated {
		return fmt.Errorf("%w: Send With Invalidate on a reverse-direction call", ErrProtocol)
	}
	h := &ep.h2
	n, perr := h.ParseCall(data, &c.cfg.Limits)
	switch {
	case !ep.reverse || perr != nil && rpcrdma2.OutcomeOf(perr) == rpcrdma2.OutcomeDrop:
		c.stats.reverseDropped.Add(1)
		c.cfg.Logger.Debug("rpcrdma: reverse-direction call dropped", "xid", h.XID, "reverse", ep.reverse, "err", perr)
		return nil
	case ep.serving >= reverseCredits:
		return fmt.Errorf("%w: more than %d reverse-direction calls in flight", ErrProtocol, reverseCredits)
	}
	ep.serving++
	var e rpcrdma2.Error
	switch cn := h.Chunks.Counts(); {
	case perr != nil:
		e.Code = rpcrdma2.ErrBadXDR
	case cn.ReadSegments > 0:
		e.Code = rpcrdma2.ErrReadChunks
	case cn.WriteChunks > 0:
		e.Code = rpcrdma2.ErrWriteChunks
	case cn != (chunks.Counts{}):
		e.Code = rpcrdma2.ErrSegments
	}
	if e.Code != 0 {
		c.cfg.Logger.Debug("rpcrdma: reverse-direction call refused", "xid", h.XID, "code", e.Code, "err", perr)
		s.answerReverseLocked(ep, reverseAnswer{xid: h.XID, err: e})
		return nil
	}
	c.stats.reverseCalls.Add(1)
	go s.serveReverse(ep, h.XID, append([]byte(nil), data[n:]...))
	return nil
}

// serveReverse runs the handler for the reverse call of xid received on
// ep, and answers it.
func (s *requester) serveReverse(ep *endpoint, xid uint32, call []byte) {
	c := s.c
	reply, err := c.cfg.ReverseHandler(ep.ctx, call)
	if err == nil {
		if rx, t, perr := xdr.PeekXID(reply); perr != nil || rx != xid || t != xdr.MsgReply {
			err = fmt.Errorf("%w: the handler's answer to xid %#x", ErrNotReply, xid)
		}
	}
	c.lock()
	defer c.unlock()
	if err == nil && rpcrdma2.EmptyMsgSize+len(reply) > ep.settings.SendInline {
		err = fmt.Errorf("%w: a reverse-direction reply goes inline, in %d bytes with its header", ErrMessageTooLarge, ep.settings.SendInline)
	}
	if err != nil {
		c.cfg.Logger.Warn("rpcrdma: reverse-direction call failed", "remote", c.raddr, "xid", xid, "err", err)
		reply = appendSystemErr(nil, xid)
	}
	s.answerReverseLocked(ep, reverseAnswer{xid: xid, reply: reply})
}

// answerReverseLocked sends a, or queues it until a Send buffer and room
// in the send queue are free; on a connection that is gone it is dropped.
func (s *requester) answerReverseLocked(ep *endpoint, a reverseAnswer) {
	if s.c.ep != ep {
		return
	}
	ep.answers = append(ep.answers, a)
	s.sendAnswersLocked(ep)
}

// sendAnswersLocked posts the queued answers that find room: an RDMA2_MSG
// with RPCRDMA2_F_RESPONSE set granting reverseCredits, or an RDMA2_ERROR.
func (s *requester) sendAnswersLocked(ep *endpoint) {
	c := s.c
	sent := 0
	for _, a := range ep.answers {
		if !ep.canSend(1) {
			break
		}
		sb, b := ep.nextSendBuf()
		if a.err.Code != 0 {
			b = rpcrdma2.AppendError(b, a.xid, reverseCredits, a.err)
		} else {
			p := rpcrdma2.Prefix{XID: a.xid, Vers: rpcrdma2.Version2, Credit: reverseCredits,
				Type: rpcrdma2.HTypeMsg, Flags: rpcrdma2.FlagResponse}
			b = rpcrdma2.AppendMsg(b, &p, 0, &noLists)
			b = append(b, a.reply...)
		}
		ep.appendSend(wrID(wrSend, noSlot, sb), verbs.OpSend, sb, len(b), 0)
		c.postLocked(ep)
		ep.sendPosted(sb)
		ep.serving--
		sent++
	}
	n := copy(ep.answers, ep.answers[sent:])
	clear(ep.answers[n:])
	ep.answers = ep.answers[:n]
}
