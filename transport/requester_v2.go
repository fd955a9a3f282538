package transport

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// The requester's RPC-over-RDMA version 2 (Config.OfferVersion2;
// draft-cel-nfsv4-rpcrdma-version-two-09 §7, docs/v2.md): each new
// connection opens with an RDMA2_CONNPROP, before anything else is sent on
// it; the answer decides the connection's version. A version 2
// connection's calls and replies differ from version 1's only in their
// headers: the chunk lists are kept in a chunks.Header as version 1's.

// negotiationTimeout bounds the wait for the answer to our RDMA2_CONNPROP
// (a variable for the tests).
var negotiationTimeout = 10 * time.Second

// v2Refused holds the addresses whose responder answered version 2 with
// ERR_VERS, or not at all: a Dial or a reconnection to them offers
// version 1 only, for the life of the process (draft §7.2).
var v2Refused sync.Map

// negotiateV2 runs the negotiation on ep, just connected to addr, with
// nothing posted on it yet and no loop polling it: it sends our
// RDMA2_CONNPROP (at most 1,024 bytes, RPCRDMA2_F_RESPONSE clear, our
// credit request, the size of our Receive buffers, and inline
// reverse-direction support if Config.ReverseHandler is set, else none)
// and waits for the one answer. A version 2 RDMA2_CONNPROP makes
// ep a version 2 connection: its Receive Buffer Size bounds what we send
// inline, its grant is kept in ep.grant for the credits. Version 1's
// ERR_VERS (knfsd's echoes rdma_vers 2: rpcrdma2.VersionOneErrVers), or
// no answer before ctx ends, leaves it a version 1 connection and puts
// addr in v2Refused; ep then continues as if nothing had been sent, as the
// draft allows. Any other answer is a protocol error: the connection is
// not used.
func (c *Conn) negotiateV2(ctx context.Context, ep *endpoint, addr string) error {
	ep.vers = chunks.Version1
	xid := uint32(ep.keys.Uint64())
	brs := rpcrdma2.ReverseNone
	if c.cfg.ReverseHandler != nil {
		brs = rpcrdma2.ReverseInline
	}
	h := rpcrdma2.Header{
		Prefix: rpcrdma2.Prefix{XID: xid, Vers: rpcrdma2.Version2, Credit: c.cfg.Credits, Type: rpcrdma2.HTypeConnProp},
		Props: rpcrdma2.Properties{
			rpcrdma2.ReceiveBufferSize(uint32(ep.recvSize)),
			rpcrdma2.ReverseRequests(brs),
		},
	}
	sb, b := ep.nextSendBuf()
	b = h.Append(b)
	if len(b) > cmpriv.MinSize {
		return fmt.Errorf("rpcrdma: internal error: RDMA2_CONNPROP of %d bytes", len(b))
	}
	wrs := []verbs.WorkRequest{{ID: wrID(wrSend, noSlot, sb), Op: verbs.OpSend,
		SGL: []verbs.SGE{{Region: ep.sendRegion, Offset: sb * ep.sendSize, Length: len(b)}}}}
	c.countPosted(wrs)
	c.stats.sendPosts.Add(1)
	if err := ep.vc.PostSend(wrs); err != nil {
		return fmt.Errorf("rpcrdma: sending RDMA2_CONNPROP: %w", err)
	}
	var answer []byte
	sent := false
	cs := make([]verbs.Completion, 4)
	for !sent || answer == nil {
		n, err := ep.vc.Poll(cs)
		if err != nil {
			return fmt.Errorf("rpcrdma: version negotiation: %w", err)
		}
		for _, wc := range cs[:n] {
			if err := wc.Err(); err != nil {
				return fmt.Errorf("rpcrdma: version negotiation: %w", err)
			}
			kind, _, buf := wrSplit(wc.ID)
			switch kind {
			case wrSend:
				sent = true
			case wrRecv:
				c.stats.recvs.Add(1)
				answer = append([]byte(nil), ep.recvBuf(buf)[:wc.ByteLen]...)
				if err := ep.repost(buf); err != nil {
					return err
				}
			}
		}
		if n == 0 {
			if err := ep.vc.Wait(ctx); err != nil {
				if ctx.Err() != nil && sent {
					// No answer: a responder that drops what it cannot
					// parse. Version 1 from now on (draft §7.2).
					v2Refused.Store(addr, true)
					c.cfg.Logger.Info("rpcrdma: no answer to RDMA2_CONNPROP: version 1", "remote", addr)
					return nil
				}
				return fmt.Errorf("rpcrdma: version negotiation: %w", err)
			}
		}
	}
	var a rpcrdma2.Header
	_, err := a.ParseReply(answer, &c.cfg.Limits)
	switch {
	case err == nil && a.Type == rpcrdma2.HTypeConnProp && a.XID == xid:
		ep.vers, ep.grant = rpcrdma2.Version2, a.Credit
		ep.reverse = c.cfg.ReverseHandler != nil
		ep.boundSendInline(a.Props)
		c.cfg.Logger.Info("rpcrdma: version 2", "remote", addr, "grant", a.Credit, "send_inline", ep.settings.SendInline)
		return nil
	case err == nil && a.Type == rpcrdma2.HTypeError && a.XID == xid && a.Error.Code == rpcrdma2.ErrVers:
	default:
		if x, _, ok := rpcrdma2.VersionOneErrVers(answer); !ok || x != xid {
			return fmt.Errorf("%w: answer %x to RDMA2_CONNPROP", ErrProtocol, answer[:min(len(answer), 32)])
		}
	}
	v2Refused.Store(addr, true)
	c.cfg.Logger.Info("rpcrdma: the responder refused version 2: version 1", "remote", addr)
	return nil
}

// parseReplyV2Locked parses data, a reply on version 2 endpoint ep, into
// ep.hdr as if it were version 1's: a reply's chunk lists, or an
// RDMA2_ERROR as an RDMA_ERROR with its code. handled reports a message
// that answers no call (an RDMA2_CONNPROP, whose Receive Buffer Size
// lowers our inline threshold); drop, one that cannot name the call it
// answers (too short, say). perr is rpcrdma2.ErrNotReply for a call: a
// reverse-direction call (serveReverseLocked).
func (s *requester) parseReplyV2Locked(ep *endpoint, data []byte) (n int, handled, drop bool, perr error) {
	h := &ep.h2
	n, perr = h.ParseReply(data, &s.c.cfg.Limits)
	hdr := &ep.hdr
	if perr == nil && h.Type == rpcrdma2.HTypeConnProp {
		ep.boundSendInline(h.Props)
		return 0, true, false, nil
	}
	if perr != nil {
		hdr.Reset()
		hdr.XID, hdr.Credits = h.XID, h.Credit
		return 0, false, rpcrdma2.OutcomeOf(perr) == rpcrdma2.OutcomeDrop, perr
	}
	if h.Type == rpcrdma2.HTypeError {
		hdr.Reset()
		hdr.XID, hdr.Vers, hdr.Credits, hdr.Proc = h.XID, chunks.Version1, h.Credit, chunks.ProcError
		hdr.ErrCode, hdr.VersLow, hdr.VersHigh = chunks.ErrorCode(h.Error.Code), h.Error.Vers.Low, h.Error.Vers.High
		return n, false, false, nil
	}
	ep.hdr, h.Chunks = h.Chunks, ep.hdr
	return n, false, false, nil
}

// invHandleV2 returns the rdma_inv_handle of a version 2 call whose chunks
// hdr lists: the one handle the responder may invalidate with Send With
// Invalidate (draft §3.3), that of its Reply chunk, else of its Write
// chunk, else of its Read chunk; 0 for a call without chunks, or when we
// do not take remote invalidation (Config.NoRemoteInvalidate). The others
// are invalidated locally when the reply comes, as a version 1 call's.
func (s *requester) invHandleV2(hdr *chunks.Header) uint32 {
	switch {
	case s.c.cfg.NoRemoteInvalidate:
		return 0
	case len(hdr.ReplyChunk) > 0:
		return hdr.ReplyChunk[0].Handle
	case len(hdr.WriteList) > 0 && len(hdr.WriteList[0]) > 0:
		return hdr.WriteList[0][0].Handle
	case len(hdr.ReadList) > 0:
		return hdr.ReadList[0].Handle
	}
	return 0
}

// boundSendInline lowers ep's inline send threshold to the Receive Buffer
// Size in props, the peer's RDMA2_CONNPROP, if it gives one: the smaller
// of it and what RFC 8797 gave, never below 1,024 bytes (cmpriv.MinSize,
// the least either can say); a larger size never raises it. Both roles
// use it.
func (ep *endpoint) boundSendInline(props rpcrdma2.Properties) {
	if n, ok := props.ReceiveBufferSize(); ok {
		ep.settings.SendInline = min(ep.settings.SendInline, max(int(min(n, 1<<30)), cmpriv.MinSize))
	}
}
