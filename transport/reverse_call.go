package transport

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Reverse-direction RPC on a version 2 connection
// (draft-cel-nfsv4-rpcrdma-version-two-09 §4.2.2, with RFC 8167's model;
// docs/v2.md): the responder sends calls to the requester, which answers
// them on the same connection. Only inline messages (no chunks) go either
// way, so both sides advertise RDMA2_RVREQSUP_INLINE, and only when both
// did may reverse calls flow: a requester with Config.ReverseHandler says
// so in the RDMA2_CONNPROP it opens with, a responder with
// Config.AcceptVersion2 in its answer.
//
// Flow control is RFC 8167 §4's: a reverse call's rdma_credit (the flag
// RPCRDMA2_F_RESPONSE clear) asks for reverseCredits, the answer's (the
// flag set) grants them. Each side posts reverseCredits Receives beyond
// its forward ones, the requester for the calls, the responder for the
// answers; the responder has one reverse call in flight until the first
// answer grants more, and never more than reverseCredits. This file is
// the responder's side (ReverseCall); reverse_serve.go the requester's.

// reverseCredits is the number of reverse-direction calls in flight on one
// connection: the Receives each side posts for them, and the grant.
const reverseCredits = 4

// Errors of reverse-direction RPC.
var (
	// ErrNotResponder: ReverseCall was used on a requester's Conn.
	ErrNotResponder = errors.New("rpcrdma: reverse call on a requester connection")
	// ErrNoReverse: the connection does not carry reverse-direction
	// calls: it runs version 1, or the requester did not offer them
	// (draft §4.2.2: its RDMA2_CONNPROP said RDMA2_RVREQSUP_NONE or
	// nothing).
	ErrNoReverse = errors.New("rpcrdma: the peer takes no reverse-direction calls")
)

// ReverseCall sends msg, an RPC call, to the requester at the other end of
// a responder's connection and returns its reply (draft §4.2.2; the
// requester answers with its Config.ReverseHandler). Calls and replies go
// inline only: msg, with a version 2 header of rpcrdma2.EmptyMsgSize bytes,
// must fit the requester's inline threshold (Stats.Negotiated.SendInline),
// else ErrMessageTooLarge. It fails at once with ErrNoReverse on a
// connection that runs version 1 or whose requester did not offer
// reverse-direction calls, with ErrNotCall if msg is not an RPC call, and
// with ErrDuplicateXID if a reverse call with msg's XID is in flight.
//
// ctx bounds the wait for a credit (at most reverseCredits calls in flight,
// fewer if the requester grants fewer) and for the reply. When ctx ends
// first ReverseCall returns its error; the call keeps its credit until its
// reply comes, or the connection ends. A reply that is an RDMA2_ERROR
// fails the call with a *RemoteError; one that does not validate, with
// ErrBadReply. Errors are *net.OpError, as the net package's.
func (c *Conn) ReverseCall(ctx context.Context, msg []byte) ([]byte, error) {
	if c.role.kind() != cmpriv.Responder {
		return nil, c.opError("reverse call", ErrNotResponder)
	}
	xid, t, err := xdr.PeekXID(msg)
	if err != nil || t != xdr.MsgCall {
		return nil, c.opError("reverse call", ErrNotCall)
	}
	rc, err := c.svcState.sendReverse(ctx, xid, msg)
	if err != nil {
		return nil, c.opError("reverse call", err)
	}
	select {
	case <-rc.done:
		return rc.reply, rc.err
	case <-ctx.Done():
	}
	// The call keeps its place in reverseCalls.out, and so its credit,
	// until its answer comes or the connection ends.
	c.lock()
	defer c.unlock()
	select {
	case <-rc.done: // it came meanwhile
		return rc.reply, rc.err
	default:
	}
	return nil, c.opError("reverse call", ctx.Err())
}

// reverseCalls is a responder's reverse-direction calls, guarded by
// Conn.mu.
type reverseCalls struct {
	// credit is how many may be in flight: 1 until the requester's first
	// answer, then its grant, within [1, reverseCredits].
	credit int
	// out holds the calls in flight by XID: sent, no answer yet.
	out map[uint32]*reverseCall
	// room is closed, and replaced, when a call may find room it did not
	// find (an answer, a completed Send, the connection's end); nil while
	// nobody waits.
	room chan struct{}
}

// reverseCall is one reverse-direction call of ReverseCall.
type reverseCall struct {
	done  chan struct{} // closed once reply or err is set
	reply []byte
	err   error
}

// sendReverse posts the reverse call msg, whose XID is xid, once it has a
// credit, a Send buffer and room in the send queue, and returns it.
func (s *responder) sendReverse(ctx context.Context, xid uint32, msg []byte) (*reverseCall, error) {
	c := s.c
	c.lock()
	defer c.unlock()
	for {
		switch ep := c.ep; {
		case c.closed:
			return nil, net.ErrClosed
		case c.err != nil:
			return nil, c.err
		case ep == nil || !ep.reverse:
			return nil, ErrNoReverse
		case rpcrdma2.EmptyMsgSize+len(msg) > ep.settings.SendInline:
			return nil, fmt.Errorf("%w: a reverse-direction call goes inline, in %d bytes with its header", ErrMessageTooLarge, ep.settings.SendInline)
		case s.rev.out[xid] != nil:
			return nil, ErrDuplicateXID
		case len(s.rev.out) < s.rev.credit && ep.canSend(1):
			rc := &reverseCall{done: make(chan struct{})}
			s.rev.out[xid] = rc
			p := rpcrdma2.Prefix{XID: xid, Vers: rpcrdma2.Version2, Credit: reverseCredits, Type: rpcrdma2.HTypeMsg}
			sb, b := ep.nextSendBuf()
			b = rpcrdma2.AppendMsg(b, &p, 0, &noLists)
			b = append(b, msg...)
			ep.appendSend(wrID(wrSend, noSlot, sb), verbs.OpSend, sb, len(b), 0)
			c.postLocked(ep)
			ep.sendPosted(sb)
			c.stats.reverseCalls.Add(1)
			return rc, nil
		}
		if s.rev.room == nil {
			s.rev.room = make(chan struct{})
		}
		room := s.rev.room
		c.unlock()
		select {
		case <-room:
		case <-ctx.Done():
			c.lock()
			return nil, ctx.Err()
		}
		c.lock()
	}
}

// reverseRoomLocked wakes the ReverseCalls waiting for room.
func (s *responder) reverseRoomLocked() {
	if s.rev.room != nil {
		close(s.rev.room)
		s.rev.room = nil
	}
}

// reverseAnswerLocked handles data, a message with RPCRDMA2_F_RESPONSE
// received in Receive buffer buf of a version 2 connection: the answer to
// a reverse call (an RDMA2_MSG, or an RDMA2_ERROR), never a call, so the
// forward credits do not count it. An answer to no call in flight, or one
// that is not an answer (an RDMA2_CONNPROP), is dropped and counted in
// ReverseDropped; one that does not validate, or carries chunks this side
// never offers, fails its call with ErrBadReply.
func (s *responder) reverseAnswerLocked(ep *endpoint, buf int, data []byte, wc *verbs.Completion) error {
	c := s.c
	if wc.Invalidated {
		return fmt.Errorf("%w: Send With Invalidate from a requester", ErrProtocol)
	}
	h := &s.h2
	n, perr := h.ParseReply(data, &c.cfg.Limits)
	rc := s.rev.out[h.XID]
	if rc == nil || len(data) < rpcrdma2.CommonSize || perr == nil && h.Type == rpcrdma2.HTypeConnProp {
		c.stats.reverseDropped.Add(1)
		c.cfg.Logger.Debug("rpcrdma: reverse-direction answer dropped", "xid", h.XID, "err", perr)
		return ep.repost(buf)
	}
	switch {
	case perr != nil:
		c.stats.badReplies.Add(1)
		rc.err = c.opError("reverse call", fmt.Errorf("%w for xid %#x: %v", ErrBadReply, h.XID, perr))
	case h.Type == rpcrdma2.HTypeError:
		c.stats.remoteErrors.Add(1)
		rc.err = c.opError("reverse call", &RemoteError{XID: h.XID, Code: uint32(h.Error.Code), Low: h.Error.Vers.Low, High: h.Error.Vers.High})
	case h.Type != rpcrdma2.HTypeMsg || h.Chunks.Counts() != (chunks.Counts{}):
		c.stats.badReplies.Add(1)
		rc.err = c.opError("reverse call", fmt.Errorf("%w for xid %#x: chunks in an answer to an inline reverse-direction call", ErrBadReply, h.XID))
	default:
		rc.reply = append([]byte(nil), data[n:]...)
	}
	if perr == nil {
		s.rev.credit = int(min(max(h.Credit, 1), reverseCredits))
	}
	delete(s.rev.out, h.XID)
	close(rc.done)
	s.reverseRoomLocked()
	return ep.repost(buf)
}

// endReverseLocked fails the reverse calls in flight with err, the
// connection's end, and wakes those waiting for room.
func (s *responder) endReverseLocked(err error) {
	for xid, rc := range s.rev.out {
		rc.err = s.c.opError("reverse call", err)
		close(rc.done)
		delete(s.rev.out, xid)
	}
	s.reverseRoomLocked()
}
