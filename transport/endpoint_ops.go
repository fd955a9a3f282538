package transport

import (
	"fmt"

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
type chunkBuf struct {
	region      verbs.Region
	size        int
	read, write exposure
}

// exposure is one window of a slot: its current rkey and whether it is
// bound (the peer may use it).
type exposure struct {
	win   verbs.Window
	rkey  uint32
	bound bool
}

// Which window of a slot a Bind or Local Invalidate is for (the buffer
// field of its work request ID).
const (
	exposeRead = iota
	exposeWrite
)

// exposure returns slot's window which.
func (cb *chunkBuf) exposure(which int) *exposure {
	if which == exposeRead {
		return &cb.read
	}
	return &cb.write
}

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
	x.bound = true
	ep.wrs = append(ep.wrs, verbs.WorkRequest{ID: wrID(wrBind, slot, which), Op: verbs.OpBindWindow,
		Window: x.win, RKey: x.rkey, Bind: verbs.SGE{Region: cb.region, Offset: off, Length: n}, Access: access})
	return x.rkey
}

// appendLocalInv invalidates slot's window which, if bound, and reports
// whether it did.
func (ep *endpoint) appendLocalInv(slot, which int) bool {
	x := ep.chunkMem[slot].exposure(which)
	if !x.bound {
		return false
	}
	ep.wrs = append(ep.wrs, verbs.WorkRequest{ID: wrID(wrLocalInv, slot, which), Op: verbs.OpLocalInvalidate, InvalidateRKey: x.rkey})
	return true
}

// remoteInvalidated marks the window of slot that rkey names as no longer
// bound, after the peer's Send With Invalidate; false if rkey is not one of
// the slot's bound windows.
func (ep *endpoint) remoteInvalidated(slot int, rkey uint32) bool {
	cb := &ep.chunkMem[slot]
	for _, x := range []*exposure{&cb.read, &cb.write} {
		if x.bound && x.rkey == rkey {
			x.bound = false
			return true
		}
	}
	return false
}

// unbind forgets slot's bindings: their batch was not posted, or their
// invalidation completed.
func (ep *endpoint) unbind(slot, which int) {
	ep.chunkMem[slot].exposure(which).bound = false
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

// takeSendBuf takes a free Send buffer; the caller checked there is one.
func (ep *endpoint) takeSendBuf() int {
	b := ep.sendFree[len(ep.sendFree)-1]
	ep.sendFree = ep.sendFree[:len(ep.sendFree)-1]
	return b
}
