package transport

import (
	"errors"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/transport/internal/marshal"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Replies written from the caller's memory (WriteMsgDirect).
//
// WriteMsg copies a reply's DDP-eligible result into a registered buffer
// of the endpoint's pool, under the connection's lock, before its RDMA
// Writes: for an NFS READ, a second copy of the data (the first is the
// server's read of the file into its reply). WriteMsgDirect
// registers the caller's buffer instead, through the endpoint's regCache
// (the one CallInto uses on the requester side), and posts the Writes
// from it, as svcrdma maps page-cache pages for the NIC. The registration
// allows local access only: the peer never sees it. The buffer is the
// caller's again once nothing can read it: when the reply's Send completed
// (the Writes before it on the queue pair are done, RFC 8166 §3.5.4's
// ordering of the Writes before the Send), or once a lost connection's
// queue pair is destroyed.

// registerDirectLocked registers msg, a reply whose plan puts its result in
// a Write chunk, for call's RDMA Writes to read in place, when the result
// is large enough (Config.DirectPlacementMin) and the provider registers
// the caller's memory; it leaves the call as it was otherwise (the
// result is then copied). The whole buffer behind msg is registered, so
// that a caller that reuses its buffers (a pool) finds its registration
// cached whatever the length of the next reply, unless it is larger than
// a message can be (a slice of a large arena): then msg alone.
func (s *responder) registerDirectLocked(ep *endpoint, call *svcCall, msg []byte, plan marshal.ReplyPlan, done func()) {
	c := s.c
	if !plan.Data.Present || c.cfg.DirectPlacementMin < 0 || plan.Data.N < c.cfg.DirectPlacementMin {
		return
	}
	r, off, ok := s.registerBufferLocked(ep, msg, "registering a reply in place failed: copying it", call.xid)
	if !ok {
		return
	}
	call.direct, call.directOff, call.directDone = r, off, done
}

// registerBufferLocked registers b, a buffer of the RPC server's (a reply
// for WriteMsgDirect, a call buffer of Config.CallBuffers), through the
// endpoint's regCache, and returns the registration and b's offset in it:
// the whole buffer behind b, so that a pooled buffer is registered once
// whatever the length of its next message, unless it is larger than a
// message can be (a slice of a large arena): then b alone. ok is false
// when the provider cannot register its caller's memory, when a new
// registration would exceed MemoryLimits.Registered or ListenerRegistered
// (counted in RegisterLimited), or when the registration failed (counted
// in DirectPlacementErrors and logged with what, for the call xid); a new
// registration counts in DirectRegistrations.
func (s *responder) registerBufferLocked(ep *endpoint, b []byte, what string, xid uint32) (r verbs.Region, off int, ok bool) {
	c := s.c
	reg, ok := ep.vc.(verbs.Registrar)
	if !ok {
		return nil, 0, false
	}
	p := b
	if cap(b) <= c.cfg.MaxRPCSize {
		p = b[:cap(b)]
	}
	r, off, cached, err := ep.regs.get(reg, p)
	if errors.Is(err, errRegLimit) {
		c.stats.registerLimited.Add(1)
		return nil, 0, false
	}
	if err != nil {
		c.stats.directErr.Add(1)
		c.cfg.Logger.Debug("rpcrdma: "+what, "xid", xid, "err", err)
		return nil, 0, false
	}
	if !cached {
		c.stats.directRegs.Add(1)
	}
	return r, off, true
}

// releaseDirectLocked gives call's registration of the caller's memory back
// to the endpoint's cache (which deregisters it if it is not kept).
func (s *responder) releaseDirectLocked(ep *endpoint, call *svcCall) {
	if err := ep.regs.put(call.direct); err != nil {
		s.c.cfg.Logger.Warn("rpcrdma: deregistering a reply's memory", "err", err)
	}
	call.direct = nil
}

// callDone calls done unless it is nil (WriteMsg's).
func callDone(done func()) {
	if done != nil {
		done()
	}
}

// doneLists recycles the lists of dones that Conn.unlock runs.
var doneLists = sync.Pool{New: func() any { return new([]func()) }}

// deferDoneLocked has the next unlock run done, outside c.mu.
func (c *Conn) deferDoneLocked(done func()) {
	if c.dones == nil {
		c.dones = doneLists.Get().(*[]func())
	}
	*c.dones = append(*c.dones, done)
}

// doneAfterCloseLocked has done run once ep's connection is closed (its
// queue pair destroyed: nothing can read the caller's memory any more),
// by Conn.shutdown, or by the next unlock if that already happened.
func (c *Conn) doneAfterCloseLocked(ep *endpoint, done func()) {
	if ep == nil || ep.vcClosed {
		c.deferDoneLocked(done)
		return
	}
	ep.closedDones = append(ep.closedDones, done)
}

// runDones runs the dones of d and recycles d.
func runDones(d *[]func()) {
	for i, f := range *d {
		f()
		(*d)[i] = nil
	}
	*d = (*d)[:0]
	doneLists.Put(d)
}
