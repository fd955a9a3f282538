package transport

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Work requests an endpoint appends to its scratch batch (ep.wrs), posted
// together by ep.post. Conn code says what to do; the endpoint owns the
// scratch lists and the registered memory they name.

// chunkBuf is a requester slot's registered memory and its two windows:
// the Read chunk is exposed read-only, the Write and Reply chunks
// write-only (as Linux's xprtrdma registers them, DMA_TO_DEVICE and
// DMA_FROM_DEVICE), so that a responder can neither overwrite a call's
// arguments nor read what the slot held before.
//
// A call of CallInto may place its DDP-eligible result in the caller's own
// buffer instead: dataRegion is the registration holding that buffer (from
// the endpoint's regCache), at dataOff, exposed write-only through a third
// window (data) and given back to the cache as soon as that window is
// invalidated. Likewise a Call's Read chunk may be exposed where it is, in
// the caller's message: argRegion at argOff, through the read window.
type chunkBuf struct {
	region            verbs.Region
	size              int
	read, write, data exposure
	dataRegion        verbs.Region
	dataOff           int
	argRegion         verbs.Region
	argOff            int
}

// exposure is one window of a slot: its current rkey, whether it is bound
// (the peer may use it) and whether its Local Invalidate was posted.
type exposure struct {
	win          verbs.Window
	rkey         uint32
	bound        bool
	invalidating bool
}

// Which window of a slot a Bind or Local Invalidate is for (the buffer
// field of its work request ID).
const (
	exposeRead = iota
	exposeWrite
	exposeData // the Write chunk in the caller's buffer (CallInto)
	numExposures
)

// exposure returns slot's window which.
func (cb *chunkBuf) exposure(which int) *exposure {
	switch which {
	case exposeRead:
		return &cb.read
	case exposeWrite:
		return &cb.write
	}
	return &cb.data
}

// registerArg registers p, the Read chunk's bytes in the caller's message,
// as slot's argument region, exposed by the slot's read window; fresh
// reports a new registration (not found in the cache).
func (ep *endpoint) registerArg(slot int, p []byte) (fresh bool, err error) {
	cb := &ep.chunkMem[slot]
	return ep.registerCaller(&cb.read, &cb.argRegion, &cb.argOff, p)
}

// registerData registers p, the caller's buffer, as slot's data region,
// exposed by the slot's data window; fresh as registerArg's.
func (ep *endpoint) registerData(slot int, p []byte) (fresh bool, err error) {
	cb := &ep.chunkMem[slot]
	return ep.registerCaller(&cb.data, &cb.dataRegion, &cb.dataOff, p)
}

// registerCaller registers p, caller memory (verbs.Registrar, through the
// endpoint's regCache), into *r at *off, and gives x a window to expose
// it. fresh reports a new registration (not found in the cache).
func (ep *endpoint) registerCaller(x *exposure, r *verbs.Region, off *int, p []byte) (fresh bool, err error) {
	reg, ok := ep.vc.(verbs.Registrar)
	if !ok {
		return false, fmt.Errorf("rpcrdma: provider cannot register the caller's memory: %w", verbs.ErrNotSupported)
	}
	if x.win == nil {
		w, err := ep.vc.AllocWindow()
		if err != nil {
			return false, fmt.Errorf("rpcrdma: memory window: %w", err)
		}
		x.win, x.rkey = w, w.RKey()
	}
	region, o, cached, err := ep.regs.get(reg, p)
	if err != nil {
		return false, err
	}
	*r, *off = region, o
	return !cached, nil
}

// releaseData gives slot's registrations of caller memory whose windows are
// no longer bound (invalidated, or their binds never posted) back to the
// cache: the caller's buffer and message are the caller's again (still
// registered if cached: the peer cannot reach them without a bound window).
func (ep *endpoint) releaseData(slot int) {
	cb := &ep.chunkMem[slot]
	ep.releaseCaller(&cb.data, &cb.dataRegion)
	ep.releaseCaller(&cb.read, &cb.argRegion)
}

// releaseCaller gives *r back to the cache unless x, its window, is bound.
func (ep *endpoint) releaseCaller(x *exposure, r *verbs.Region) {
	if *r == nil || x.bound {
		return
	}
	if err := ep.regs.put(*r); err != nil {
		ep.log.Warn("rpcrdma: deregistering the caller's memory", "err", err)
	}
	*r = nil
}

// callerMemory reports whether slot has caller memory registered (its
// data or argument region).
func (cb *chunkBuf) callerMemory() bool { return cb.dataRegion != nil || cb.argRegion != nil }

// chunk returns slot's chunk memory with at least n bytes, growing it.
func (ep *endpoint) chunk(slot, n int) (*chunkBuf, error) {
	cb := &ep.chunkMem[slot]
	if cb.size >= n && cb.region != nil {
		return cb, nil
	}
	size := max(64<<10, cb.size)
	for size < n {
		size *= 2
	}
	r, err := ep.vc.AllocRegion(size)
	if err != nil {
		return nil, fmt.Errorf("rpcrdma: chunk memory: %w", err)
	}
	for _, x := range []*exposure{&cb.read, &cb.write} {
		if x.win == nil {
			if x.win, err = ep.vc.AllocWindow(); err != nil {
				_ = r.Close()
				return nil, fmt.Errorf("rpcrdma: memory window: %w", err)
			}
			x.rkey = x.win.RKey()
		}
	}
	if cb.region != nil {
		_ = cb.region.Close()
	}
	cb.region, cb.size = r, size
	return cb, nil
}

// appendBind binds slot's window which to n bytes of its memory at off with
// access, under a fresh rkey whose key byte is random (not predictable from
// the rkeys the peer saw before), and returns that rkey.
func (ep *endpoint) appendBind(slot, which, off, n int, access verbs.Access) uint32 {
	cb := &ep.chunkMem[slot]
	x := cb.exposure(which)
	key := uint8(ep.keys.Uint64())
	if key == uint8(x.rkey) {
		key++
	}
	x.rkey = verbs.WithKey(x.rkey, key)
	x.bound, x.invalidating = true, false
	r := cb.region
	switch {
	case which == exposeData:
		r, off = cb.dataRegion, cb.dataOff+off
	case which == exposeRead && cb.argRegion != nil:
		r, off = cb.argRegion, cb.argOff+off
	}
	ep.wrs = append(ep.wrs, verbs.WorkRequest{ID: wrID(wrBind, slot, which), Op: verbs.OpBindWindow,
		Window: x.win, RKey: x.rkey, Bind: verbs.SGE{Region: r, Offset: off, Length: n}, Access: access})
	return x.rkey
}

// appendLocalInv invalidates slot's window which, if bound and not being
// invalidated already, and reports whether it did.
func (ep *endpoint) appendLocalInv(slot, which int) bool {
	x := ep.chunkMem[slot].exposure(which)
	if !x.bound || x.invalidating {
		return false
	}
	x.invalidating = true
	ep.wrs = append(ep.wrs, verbs.WorkRequest{ID: wrID(wrLocalInv, slot, which), Op: verbs.OpLocalInvalidate, InvalidateRKey: x.rkey})
	return true
}

// remoteInvalidated marks the window of slot that rkey names as no longer
// bound, after the peer's Send With Invalidate (and releases the caller's
// buffer if it was that one); false if rkey is not one of the slot's bound
// windows.
func (ep *endpoint) remoteInvalidated(slot int, rkey uint32) bool {
	cb := &ep.chunkMem[slot]
	for which := range numExposures {
		if x := cb.exposure(which); x.bound && x.rkey == rkey {
			if x.invalidating {
				// Our own Local Invalidate of it is on its way (a
				// cancelled CallInto): its completion unbinds it.
				return true
			}
			ep.unbind(slot, which)
			return true
		}
	}
	return false
}

// unbind forgets slot's binding which: its batch was not posted, or its
// invalidation completed. The caller's buffer behind the data window is
// deregistered.
func (ep *endpoint) unbind(slot, which int) {
	x := ep.chunkMem[slot].exposure(which)
	x.bound, x.invalidating = false, false
	if which != exposeWrite {
		ep.releaseData(slot)
	}
}

// appendSend sends n bytes of Send buffer buf (with Send With Invalidate of
// inv when op says so); id identifies its completion.
func (ep *endpoint) appendSend(id uint64, op verbs.Opcode, buf, n int, inv uint32) {
	ep.wrs = append(ep.wrs, verbs.WorkRequest{ID: id, Op: op, InvalidateRKey: inv,
		SGL: ep.sgl(ep.sendRegion, buf*ep.sendSize, n)})
}

// appendRDMA moves n bytes at off of the local region r to or from the
// peer's memory (op OpRDMAWrite or OpRDMARead).
func (ep *endpoint) appendRDMA(id uint64, op verbs.Opcode, r verbs.Region, off, n int, remote uint64, rkey uint32) {
	ep.wrs = append(ep.wrs, verbs.WorkRequest{ID: id, Op: op, SGL: ep.sgl(r, off, n), RemoteAddr: remote, RKey: rkey})
}

// batchFull reports whether the scratch lists must be posted before more is
// appended.
func (ep *endpoint) batchFull() bool {
	return len(ep.wrs) == cap(ep.wrs) || len(ep.sges) == cap(ep.sges)
}

// discard drops the scratch batch without posting it.
func (ep *endpoint) discard() {
	ep.wrs, ep.sges = ep.wrs[:0], ep.sges[:0]
}

// canSend reports whether a Send buffer is free and the send queue has
// room for wrs more work requests.
func (ep *endpoint) canSend(wrs int) bool {
	return len(ep.sendFree) > 0 && ep.sqOut+len(ep.wrs)+wrs <= ep.sqCap
}

// nextSendBuf returns the Send buffer the next Send uses, and its memory,
// empty; the caller checked canSend. It stays free until sendPosted.
func (ep *endpoint) nextSendBuf() (int, []byte) {
	i := ep.sendFree[len(ep.sendFree)-1]
	return i, ep.sendBuf(i)
}

// sendPosted takes Send buffer i, which nextSendBuf returned, once its Send
// was posted.
func (ep *endpoint) sendPosted(i int) {
	ep.sendFree = ep.sendFree[:len(ep.sendFree)-1]
}

// sendDone frees Send buffer i, its Send completed.
func (ep *endpoint) sendDone(i int) {
	ep.sendFree = append(ep.sendFree, i)
}

// readRoom reports whether another RDMA Read may be appended: Reads may
// fill half of the send queue, so that replies and RDMA_ERRORs always find
// room.
func (ep *endpoint) readRoom() bool {
	return ep.sqOut+len(ep.wrs) < ep.sqCap/2
}

// header returns the scratch transport header, reset.
func (ep *endpoint) header() *chunks.Header {
	ep.hdr.Reset()
	return &ep.hdr
}

// oneWriteChunk returns a Write list of one chunk of one segment, in
// scratch memory.
func (ep *endpoint) oneWriteChunk(seg chunks.Segment) []chunks.WriteChunk {
	ep.writeSeg[0] = seg
	ep.writeList[0] = ep.writeSeg[:]
	return ep.writeList[:]
}

// oneSegmentChunk returns a Reply chunk of one segment, in scratch memory.
func (ep *endpoint) oneSegmentChunk(seg chunks.Segment) chunks.WriteChunk {
	ep.replySeg[0] = seg
	return ep.replySeg[:]
}

// holdRecv keeps Receive buffer i unposted: its call waits for its reply
// (the responder posts one Receive per reply, so that posted Receives plus
// unanswered calls stay constant).
func (ep *endpoint) holdRecv(i int) { ep.recvFree = append(ep.recvFree, i) }

// repostHeld posts one held Receive buffer, if any, and reports whether it
// did.
func (ep *endpoint) repostHeld() (bool, error) {
	if len(ep.recvFree) == 0 {
		return false, nil
	}
	i := ep.recvFree[len(ep.recvFree)-1]
	if err := ep.repost(i); err != nil {
		return false, err
	}
	ep.recvFree = ep.recvFree[:len(ep.recvFree)-1]
	return true, nil
}
