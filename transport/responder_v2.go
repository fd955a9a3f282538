package transport

import (
	"encoding/binary"
	"errors"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// The responder's RPC-over-RDMA version 2 (Config.AcceptVersion2;
// draft-cel-nfsv4-rpcrdma-version-two-09, docs/v2.md). A connection runs
// the version of its peer's first message (draft §7.3). On a version 2
// connection a call's header is parsed by package rpcrdma2 and its chunk
// lists then live in the call's chunks.Header like a version 1 call's, so
// everything between the parse and the reply's header is shared; the
// credits are version 1's (the draft's own mechanism is "TBD", §8.2).

// decideVersionLocked returns the version of the connection, deciding it
// at its first message data: 2 if the responder accepts version 2 and
// data's rdma_vers is 2, else 1. Once decided it does not change: a
// message of another version is answered ERR_VERS in the connection's
// version.
func (s *responder) decideVersionLocked(data []byte) uint32 {
	if s.vers == 0 && len(data) >= 8 {
		s.vers = chunks.Version1
		if s.c.cfg.AcceptVersion2 && binary.BigEndian.Uint32(data[4:]) == rpcrdma2.Version2 {
			s.vers = rpcrdma2.Version2
		}
	}
	if s.vers == 0 {
		return chunks.Version1 // too short to say: version 1's parse drops it
	}
	return s.vers
}

// parseCallV2Locked parses data, a version 2 message in Receive buffer
// buf, into call: a call's chunk lists move to call.hdr and n is the
// header's length. done reports a message handled here (an RDMA2_CONNPROP
// answered, or a message dropped: an RDMA2_ERROR, a reply), with the
// connection's error if any; otherwise a non-nil err is the parse's, for
// rejectCallLocked, with the XID in s.h2.
func (s *responder) parseCallV2Locked(ep *endpoint, buf int, call *svcCall, data []byte) (n int, done bool, err error) {
	c := s.c
	h := &s.h2
	n, err = h.ParseCall(data, &c.cfg.Limits)
	switch {
	case err != nil && rpcrdma2.OutcomeOf(err) == rpcrdma2.OutcomeDrop:
		// An RDMA2_ERROR (never from a requester) or a reply (to a
		// reverse-direction call this side never makes): dropped, as
		// version 1's drops an RDMA_ERROR.
		return 0, true, s.rejectCallLocked(ep, buf, h.XID, err)
	case err != nil:
		return 0, false, err
	case h.Type == rpcrdma2.HTypeConnProp:
		return 0, true, s.connPropLocked(ep, buf, h)
	}
	call.hdr, h.Chunks = h.Chunks, call.hdr
	call.v2, call.invHandle = true, h.InvHandle
	return n, false, nil
}

// errorV2 returns the RDMA2_ERROR for perr, a call's parse or check
// failure on a version 2 connection (draft §5.3.3), or drop: the message
// is not answered. Too many chunks or segments get their own codes with
// this side's limit; a message of another version RDMA2_ERR_VERS naming
// version 2, the connection's.
func (s *responder) errorV2(ep *endpoint, perr error) (e rpcrdma2.Error, drop bool) {
	lim := &s.c.cfg.Limits
	switch rpcrdma2.OutcomeOf(perr) {
	case rpcrdma2.OutcomeDrop:
		return e, true
	case rpcrdma2.OutcomeErrVers:
		return rpcrdma2.Error{Code: rpcrdma2.ErrVers, Vers: rpcrdma2.VersRange{Low: rpcrdma2.Version2, High: rpcrdma2.Version2}}, false
	case rpcrdma2.OutcomeErrInvalHType:
		return rpcrdma2.Error{Code: rpcrdma2.ErrInvalHType}, false
	}
	switch ce := rpcrdma2.ChunkError(perr); {
	case errors.Is(perr, errReplySegments):
		return rpcrdma2.Error{Code: rpcrdma2.ErrSegments, MaxSegments: uint32(ep.sqCap/2 - 1)}, false
	case ce == chunks.ErrTooManyReadChunks:
		return rpcrdma2.Error{Code: rpcrdma2.ErrReadChunks, MaxChunks: uint32(lim.MaxReadChunks)}, false
	case ce == chunks.ErrTooManyWriteChunks:
		return rpcrdma2.Error{Code: rpcrdma2.ErrWriteChunks, MaxChunks: uint32(lim.MaxWriteChunks)}, false
	case ce == chunks.ErrTooManySegments:
		return rpcrdma2.Error{Code: rpcrdma2.ErrSegments, MaxSegments: uint32(lim.MaxSegments)}, false
	}
	return rpcrdma2.Error{Code: rpcrdma2.ErrBadXDR}, false
}

// connPropLocked answers a requester's RDMA2_CONNPROP h, received in
// Receive buffer buf, with this side's (draft §5.3.4): RPCRDMA2_F_RESPONSE
// set, h's XID, a grant, the size of this side's Receive buffers and
// inline reverse-direction support (reverse_call.go). The exchange counts
// as a call and its reply (docs/v2.md). If h says the requester takes
// reverse-direction calls, inline or more, ReverseCall may call it from
// now on; if it says none, no longer (the calls in flight go on). The requester's Receive Buffer Size, if it gave one,
// bounds what this side sends inline from now on: the smaller of it and
// what the RFC 8797 exchange gave, never below 1,024 bytes (cmpriv.MinSize,
// the least either can say).
func (s *responder) connPropLocked(ep *endpoint, buf int, h *rpcrdma2.Header) error {
	c := s.c
	ep.boundSendInline(h.Props)
	if brs, ok := h.Props.ReverseRequests(); ok {
		ep.reverse = brs >= rpcrdma2.ReverseInline // ReverseCall may call it
	}
	if err := ep.repost(buf); err != nil {
		return err
	}
	_ = s.credits.Post(1)
	grant, err := s.credits.Reply(h.Credit)
	if err != nil || !ep.canSend(1) {
		_ = s.credits.Drop()
		c.stats.dropped.Add(1)
		return nil
	}
	s.lastGrant = grant
	ours := rpcrdma2.Header{
		Prefix: rpcrdma2.Prefix{XID: h.XID, Vers: rpcrdma2.Version2, Credit: grant,
			Type: rpcrdma2.HTypeConnProp, Flags: rpcrdma2.FlagResponse},
		Props: rpcrdma2.Properties{
			rpcrdma2.ReceiveBufferSize(uint32(ep.recvSize)),
			rpcrdma2.ReverseRequests(rpcrdma2.ReverseInline),
		},
	}
	sb, b := ep.nextSendBuf()
	b = ours.Append(b)
	ep.appendSend(wrID(wrSend, noSlot, sb), verbs.OpSend, sb, len(b), 0)
	c.postLocked(ep)
	ep.sendPosted(sb)
	return nil
}

// appendReplyHeaderV2 appends the version 2 header of the reply to call:
// RPCRDMA2_F_RESPONSE set, the grant, h's chunk lists.
func appendReplyHeaderV2(b []byte, call *svcCall, grant uint32, h *chunks.Header) []byte {
	t := rpcrdma2.HTypeMsg
	if h.Proc == chunks.ProcNoMsg {
		t = rpcrdma2.HTypeNoMsg
	}
	p := rpcrdma2.Prefix{XID: call.xid, Vers: rpcrdma2.Version2, Credit: grant, Type: t, Flags: rpcrdma2.FlagResponse}
	return rpcrdma2.AppendMsg(b, &p, 0, h)
}

// invalidateV2 returns the rkey a version 2 reply to call may invalidate
// with Send With Invalidate: its rdma_inv_handle, if the call named one of
// its own handles (draft §3.3); ok false for none.
func invalidateV2(call *svcCall) (rkey uint32, ok bool) {
	inv := call.invHandle
	if inv == 0 {
		return 0, false
	}
	h := &call.hdr
	for i := range h.ReadList {
		if h.ReadList[i].Handle == inv {
			return inv, true
		}
	}
	for _, wc := range h.WriteList {
		for i := range wc {
			if wc[i].Handle == inv {
				return inv, true
			}
		}
	}
	for i := range h.ReplyChunk {
		if h.ReplyChunk[i].Handle == inv {
			return inv, true
		}
	}
	return 0, false
}
