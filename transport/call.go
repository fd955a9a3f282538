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
// byte stream (Read) such a call gets a synthesized SYSTEM_ERR reply, as
// before; ReadMsg returns that reply with an error wrapping ErrCallLost, and
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
	if c.role != cmpriv.Requester {
		return reply[:0], c.opError("call", ErrNotRequester)
	}
	if len(msg) > c.cfg.MaxRPCSize {
		return reply[:0], c.opError("call", ErrMessageTooLarge)
	}
	h := callHeaders.Get().(*xdr.CallHeader)
	slot, err := c.reqState.sendCall(msg, h, true, ctx.Done())
	callHeaders.Put(h)
	if err == errCancelled {
		return reply[:0], c.opError("call", ctx.Err())
	}
	if err != nil {
		return reply[:0], err
	}
	c.mu.Lock()
	call := &c.reqState.calls[slot]
	done := call.done
	c.mu.Unlock()
	for {
		select {
		case <-done:
		case <-ctx.Done():
		case <-c.done:
			return reply[:0], c.opError("call", net.ErrClosed)
		}
		c.mu.Lock()
		if call.queued {
			// The reply (or the call's failure) is here.
			v := call.view()
			reply = v.appendTo(reply[:0])
			err := call.err
			c.reqState.replyConsumedLocked(slot)
			c.mu.Unlock()
			return reply, err
		}
		if ctx.Err() != nil {
			call.abandoned = true
			c.mu.Unlock()
			return reply[:0], c.opError("call", ctx.Err())
		}
		c.mu.Unlock()
	}
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
