package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ErrCallLost: the connection was lost while a call was in flight, and the
// call was not retransmitted (ReconnectPolicy.Retransmit off, the
// reconnection failed, or the retransmission could not be posted). Its
// outcome is unknown: the responder may or may not have executed it. On the
// byte stream (Read) such a call gets a synthesized SYSTEM_ERR reply;
// ReadMsg returns that reply with an error wrapping ErrCallLost, and
// Call returns the error.
var ErrCallLost = errors.New("rpcrdma: connection lost with the call in flight: outcome unknown")

// ErrNotRequester: Call was used on a responder's Conn.
var ErrNotRequester = errors.New("rpcrdma: Call on a responder connection")

// errCancelled ends a wait for a credit when a Call's context is done.
var errCancelled = errors.New("rpcrdma: call cancelled")

// callLost is the error of call xid, lost with its connection for cause.
func callLost(xid uint32, cause error) error {
	return fmt.Errorf("%w (xid %#x: %w)", ErrCallLost, xid, cause)
}

// callHeaders holds scratch call headers for Call, which runs outside the
// writers' lock.
var callHeaders = sync.Pool{New: func() any { return new(xdr.CallHeader) }}

// Call sends the RPC call msg and waits for its reply, which it appends to
// reply[:0]. It is for message-aware RPC clients with many calls in flight
// on one Conn: each Call gets its own reply, whatever the order replies
// arrive in, and never through Read or ReadMsg (which keep returning the
// replies of calls made with Write and WriteMsg). Only a requester (a Conn
// from Dial) makes calls.
//
// ctx bounds the whole call: the wait for a credit (RFC 8166 §3.3: at most
// as many calls in flight as the responder granted) and the wait for the
// reply. When ctx is done first, Call returns an error wrapping ctx.Err();
// a call already sent still holds its credit until its reply arrives (and
// is dropped) or, if none comes, until ReconnectPolicy.CallTimeout drops
// the connection, as the Linux client does: RPC-over-RDMA has no way to
// take back a credit. A reply synthesized for a failed call comes with an
// error: a *RemoteError (RDMA_ERROR) or one wrapping ErrCallLost. The write
// deadline bounds the wait for a credit as it does for Write.
func (c *Conn) Call(ctx context.Context, msg, reply []byte) ([]byte, error) {
	reply, _, err := c.call(ctx, msg, reply, nil)
	return reply, err
}

// CallInto is Call for a reply whose DDP-eligible result (RFC 8166 §6.1:
// the data of an NFS READ, as Config.Binding locates it) goes to data
// rather than into the reply.
//
// The result, its XDR pad included, is cut out of the returned reply:
// item.Present says there was one, its item.N bytes are data[:item.N],
// and item.Off is where they were (reply[item.Off-4:item.Off] is their
// length word; the rest of the reply follows from reply[item.Off:]). A
// result larger than data fails the call.
//
// Placement: when the call offers a Write chunk of at least
// Config.DirectPlacementMin bytes and data holds all of it, data itself is
// the Write chunk and the responder's RDMA Write places the result in it
// (Stats.DirectPlacements); otherwise the result is copied once into data
// (Stats.PlacementCopies). Likewise, for Call and CallInto, a Read chunk
// (a DDP-eligible argument, or the whole message of a Long Call) of at
// least DirectPlacementMin bytes is exposed read-only where it is, in msg
// (Stats.ReadChunksInPlace). Caller memory is exposed only when ctx cannot
// end (its Done is nil) or the Conn reconnects and retransmits
// (ReconnectPolicy.Enabled and Retransmit); otherwise everything is
// copied. With retransmission on, msg is kept by reference for a resend.
//
// Ownership: data and msg belong to the call until CallInto returns; the
// responder may access them at any time before. When ctx ends first,
// CallInto invalidates the Write chunk's window and waits for that to
// complete (a local operation) before it returns, as the Linux client does
// (frwr_unmap_sync); a later RDMA access of the responder, or its Send
// With Invalidate of that window, fails and takes the connection down: a
// reconnection follows, and the other calls in flight are resent. A lost
// connection is closed, and so data deregistered, before its calls fail
// or are retransmitted.
func (c *Conn) CallInto(ctx context.Context, msg, reply, data []byte) ([]byte, DataItem, error) {
	if data == nil {
		data = []byte{}
	}
	return c.call(ctx, msg, reply, data)
}

// call is Call and, with dst not nil, CallInto.
func (c *Conn) call(ctx context.Context, msg, reply, dst []byte) ([]byte, DataItem, error) {
	if c.role != cmpriv.Requester {
		return reply[:0], DataItem{}, c.opError("call", ErrNotRequester)
	}
	if len(msg) > c.cfg.MaxRPCSize {
		return reply[:0], DataItem{}, c.opError("call", ErrMessageTooLarge)
	}
	// Caller memory (dst, or msg's Read chunk in place) is exposed only
	// when cancelling the call cannot cost the Conn or the other calls:
	// cancelling invalidates its windows, and the responder's RDMA access
	// or Send With Invalidate that comes later then fails and takes the
	// connection down; so the context must be one that never ends, or the
	// Conn must reconnect and resend the calls in flight.
	mayExpose := ctx.Done() == nil || c.cfg.Reconnect.Enabled && c.cfg.Reconnect.Retransmit
	h := callHeaders.Get().(*xdr.CallHeader)
	slot, err := c.reqState.sendCall(msg, h, true, dst, mayExpose, ctx.Done())
	callHeaders.Put(h)
	if err == errCancelled {
		return reply[:0], DataItem{}, c.opError("call", ctx.Err())
	}
	if err != nil {
		return reply[:0], DataItem{}, err
	}
	c.mu.Lock()
	call := &c.reqState.calls[slot]
	done := call.done
	c.unlock()
	closed, cancel := c.done, ctx.Done()
	for {
		select {
		case <-done:
		case <-cancel:
		case <-closed:
		}
		c.mu.Lock()
		if call.placedOn != nil {
			// The peer may still access the caller's memory (dst, or
			// msg in place): wait until its windows are invalidated
			// (by the reply's processing, or by us if the caller
			// gives up) or its connection closed; both wake us.
			if ctx.Err() != nil {
				if !call.cancelling && !call.replied {
					c.reqState.cancelPlacedLocked(slot)
				}
				cancel = nil
			}
			if isDone(closed) {
				closed = nil
			}
			c.unlock()
			continue
		}
		if call.queued {
			// The reply (or the call's failure) is here.
			var item DataItem
			err := call.err
			if call.cancelling {
				err = c.opError("call", ctx.Err())
				reply = reply[:0]
			} else if dst == nil || err != nil {
				v := call.view()
				reply = v.appendTo(reply[:0])
			} else {
				reply, item, err = c.reqState.placeReplyLocked(slot, reply)
			}
			c.reqState.replyConsumedLocked(slot)
			c.unlock()
			return reply, item, err
		}
		if isDone(c.done) {
			c.unlock()
			return reply[:0], DataItem{}, c.opError("call", net.ErrClosed)
		}
		if ctx.Err() != nil {
			call.abandoned = true
			c.unlock()
			return reply[:0], DataItem{}, c.opError("call", ctx.Err())
		}
		c.unlock()
	}
}

// cancelPlacedLocked starts the invalidation of the windows over slot's
// caller memory (CallInto's buffer, a Call's message): its context ended
// before the reply came.
func (s *requester) cancelPlacedLocked(slot int) {
	call := &s.calls[slot]
	call.cancelling = true
	ep := s.c.ep
	if ep == nil || call.placedOn != ep {
		return // its connection's close releases it
	}
	cb := &ep.chunkMem[slot]
	n := 0
	for _, which := range []int{exposeData, exposeRead} {
		if (which == exposeData && cb.dataRegion != nil || which == exposeRead && cb.argRegion != nil) && ep.appendLocalInv(slot, which) {
			n++
		}
	}
	if n == 0 {
		return // invalidations on their way release it
	}
	call.invPending += n
	ep.post()
}

// errPlacedTooLarge fails a CallInto whose reply carries a larger
// DDP-eligible result than its buffer holds.
var errPlacedTooLarge = errors.New("rpcrdma: the reply's DDP-eligible result is larger than the CallInto buffer")

// placeReplyLocked returns slot's reply for CallInto: the reply without its
// DDP-eligible result, which is in call.dst (placed there by the responder,
// or copied now).
func (s *requester) placeReplyLocked(slot int, reply []byte) ([]byte, DataItem, error) {
	c := s.c
	call := &s.calls[slot]
	if call.data != nil {
		// From a Write chunk: call.reply is the reply without it.
		item := DataItem{Off: call.dataOff, N: len(call.data), Present: true}
		if !call.placed {
			if len(call.data) > len(call.dst) {
				return reply[:0], DataItem{}, c.opError("call", errPlacedTooLarge)
			}
			copy(call.dst, call.data)
			c.stats.placementCopies.Add(1)
		}
		return append(reply[:0], call.reply...), item, nil
	}
	// Inline (or through the Reply chunk): find the result in the reply.
	msg := call.reply
	var rh xdr.ReplyHeader
	results, err := rh.Unmarshal(msg)
	if err != nil {
		return append(reply[:0], msg...), DataItem{}, nil
	}
	item := c.cfg.Binding.ReplyData(&call.hdr, msg, results)
	if !item.Present || item.Off < 0 || item.N < 0 || item.Off > len(msg)-item.N {
		return append(reply[:0], msg...), DataItem{}, nil
	}
	if item.N > len(call.dst) {
		return reply[:0], DataItem{}, c.opError("call", errPlacedTooLarge)
	}
	if copy(call.dst, msg[item.Off:item.Off+item.N]) > 0 {
		c.stats.placementCopies.Add(1)
	}
	end := min(item.Off+xdr.RoundUp(item.N), len(msg))
	reply = append(reply[:0], msg[:item.Off]...)
	return append(reply, msg[end:]...), item, nil
}

// failDirectCallsLocked fails every Call still waiting for its reply: the
// Conn failed for good (err) and no reply will come.
func (s *requester) failDirectCallsLocked(err error) {
	for slot := range s.calls {
		call := &s.calls[slot]
		if !call.busy || !call.direct || call.replied {
			continue
		}
		call.replied = true
		delete(s.byXID, call.xid)
		s.failCallLocked(call, callLost(call.xid, err))
		call.invPending = 0
		s.queueReplyLocked(slot)
	}
}
