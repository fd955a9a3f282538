//go:build linux && cgo

package rdmacore

/*
#include "cshim.h"
*/
import "C"

import (
	"fmt"
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// maxSGELength is the longest scatter/gather element (and IB message).
const maxSGELength = 1 << 31

// postErrLocked returns why nothing can be posted now, if anything.
func (c *conn) postErrLocked(send bool) error {
	switch {
	case c.closed:
		return errConnClosed
	case c.state == stateFailed:
		return c.err
	case send && c.state != stateEstablished:
		return errNotEstablished
	case c.qp == nil:
		return errNotEstablished
	}
	return nil
}

// PostSend posts work requests in order with one ibv_post_send. The
// requests are checked and written into the connection's C buffers first;
// a request that fails the checks (or does not fit in the send queue) ends
// the batch there. Checks a NIC makes while executing (the bounds of local
// buffers, the window's state, remote keys) are reported in completions.
//
// The ibv_post_send itself runs outside c.mu, under c.sendMu only: rxe
// executes a user queue pair's work requests in the poster's thread
// (rxe_post_send runs the requester task inline), so a post of a large
// RDMA Write lasts as long as the copy of its data, and Poll must not
// wait for it.
// The batch's send queue slots are written and counted in c.sqOut first,
// so that a completion polled before ibv_post_send returns finds them.
func (c *conn) PostSend(wrs []verbs.WorkRequest) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	if err := c.postErrLocked(true); err != nil {
		c.mu.Unlock()
		return err
	}
	var err error
	n, nsge := 0, 0
	for i := range wrs {
		if c.sqOut+n >= len(c.sq) {
			err = errSendQueueFull
			break
		}
		wr := &wrs[i]
		opcode, ok := wrOpcode(wr.Op)
		if !ok {
			err = errOpcode
			break
		}
		in := &c.wrIn[n]
		*in = C.struct_rc_wr{wr_id: C.uint64_t(c.sqSeq + uint64(n)), opcode: C.uint32_t(opcode), sge_index: C.uint32_t(nsge)}
		slot := &c.sq[(c.sqSeq+uint64(n))%uint64(len(c.sq))]
		*slot = sendSlot{seq: c.sqSeq + uint64(n), id: wr.ID, op: wr.Op}
		switch wr.Op {
		case verbs.OpSend, verbs.OpSendWithInvalidate, verbs.OpRDMAWrite, verbs.OpRDMARead:
			var k, total int
			k, total, err = c.sgesLocked(c.sendSGE[nsge:], wr.SGL)
			if err != nil {
				break
			}
			in.num_sge = C.uint32_t(k)
			nsge += k
			slot.length = total
			in.remote_addr = C.uint64_t(wr.RemoteAddr)
			in.rkey = C.uint32_t(wr.RKey)
			in.invalidate_rkey = C.uint32_t(wr.InvalidateRKey)
		case verbs.OpLocalInvalidate:
			in.invalidate_rkey = C.uint32_t(wr.InvalidateRKey)
		case verbs.OpBindWindow:
			err = c.bindLocked(in, slot, wr)
		}
		if err != nil {
			break
		}
		n++
	}
	if n == 0 {
		c.mu.Unlock()
		return err
	}
	c.sqOut += n
	qp := c.qp
	c.mu.Unlock()
	// Close waits for c.sendMu before it destroys the queue pair and
	// frees the C buffers.
	rc, posted := postResult(C.rc_post_send(qp, &c.wrIn[0], &c.sendWR[0], sgePtr(c.sendSGE), C.int(n)))
	c.mu.Lock()
	defer c.mu.Unlock()
	if rc != 0 {
		// Undo, latest first, the rkeys of binds that were not posted.
		for k := n - 1; k >= posted; k-- {
			if s := &c.sq[(c.sqSeq+uint64(k))%uint64(len(c.sq))]; s.win != nil {
				s.win.rkey.Store(s.oldRKey)
				s.win = nil
			}
		}
		err = postError("ibv_post_send", rc)
	}
	c.sqSeq += uint64(posted)
	c.sqOut -= n - posted
	return err
}

// bindLocked describes an OpBindWindow: the window and the region must be
// this connection's and open; the bind gives the window the rkey
// verbs.BindRKey picks (IBV_WR_BIND_MW's rkey: the next one, or the key
// byte the work request chose).
func (c *conn) bindLocked(in *C.struct_rc_wr, slot *sendSlot, wr *verbs.WorkRequest) error {
	w, ok := wr.Window.(*window)
	if !ok || w == nil || w.c != c || w.closed {
		return errForeignWindow
	}
	r, err := c.regionLocked(wr.Bind.Region)
	if err != nil {
		return err
	}
	old := w.rkey.Load()
	next, err := verbs.BindRKey(old, wr.RKey)
	if err != nil {
		return fmt.Errorf("rdmacore: %w", err)
	}
	in.mw = w.mw
	in.mr = r.mr
	in.rkey = C.uint32_t(next)
	in.remote_addr = C.uint64_t(r.Addr(wr.Bind.Offset))
	in.length = C.uint64_t(uint64(int64(wr.Bind.Length)))
	in.access = C.uint32_t(mwAccess(wr.Access))
	// RKey reports the new rkey at once, as a later bind in the same
	// batch must start from it; a failed post restores it.
	w.rkey.Store(next)
	slot.win, slot.oldRKey = w, old
	return nil
}

// regionLocked returns the connection's open region behind r.
func (c *conn) regionLocked(r verbs.Region) (*region, error) {
	reg, ok := r.(*region)
	if !ok || reg == nil || reg.c != c {
		return nil, errForeignRegion
	}
	if reg.closed.Load() || reg.mr == nil {
		return nil, errClosedRegion
	}
	return reg, nil
}

// sgesLocked writes sgl into dst (ibv_sge: the region's virtual address
// plus the offset, the length, the region's lkey) and returns how many
// elements it wrote and their total length. Empty elements are left out:
// they move nothing, and some devices read a zero length as 2 GiB. Bounds
// are left to the device, which checks them against the memory region
// (IBV_WC_LOC_PROT_ERR); a region that is not this connection's, or is
// closed, is refused here, as its lkey may name other memory by now.
func (c *conn) sgesLocked(dst []C.struct_ibv_sge, sgl []verbs.SGE) (int, int, error) {
	if len(sgl) > c.caps.MaxSGE {
		return 0, 0, errTooManySGE
	}
	k, total := 0, 0
	for _, s := range sgl {
		r, err := c.regionLocked(s.Region)
		if err != nil {
			return 0, 0, err
		}
		if s.Length == 0 {
			continue
		}
		if s.Length < 0 || s.Length > maxSGELength {
			return 0, 0, errSGELength
		}
		total += s.Length
		if total > maxSGELength {
			return 0, 0, errSGELength
		}
		dst[k] = C.struct_ibv_sge{addr: C.uint64_t(r.Addr(s.Offset)), length: C.uint32_t(s.Length), lkey: C.uint32_t(r.lkey)}
		k++
	}
	return k, total, nil
}

// PostRecv posts Receives in order with one ibv_post_recv.
func (c *conn) PostRecv(rrs []verbs.RecvRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.postErrLocked(false); err != nil {
		return err
	}
	var err error
	n, nsge := 0, 0
	for i := range rrs {
		if c.rqOut+n >= len(c.rq) {
			err = errRecvQueueFull
			break
		}
		rr := &rrs[i]
		var k int
		k, _, err = c.sgesLocked(c.recvSGE[nsge:], rr.SGL)
		if err != nil {
			break
		}
		seq := c.rqSeq + uint64(n)
		c.rwrIn[n] = C.struct_rc_rwr{wr_id: C.uint64_t(seq | recvBit), sge_index: C.uint32_t(nsge), num_sge: C.uint32_t(k)}
		c.rq[seq%uint64(len(c.rq))] = recvSlot{seq: seq, id: rr.ID}
		nsge += k
		n++
	}
	if n == 0 {
		return err
	}
	rc, posted := postResult(C.rc_post_recv(c.qp, &c.rwrIn[0], &c.recvWR[0], sgePtr(c.recvSGE), C.int(n)))
	if rc != 0 {
		err = postError("ibv_post_recv", rc)
	}
	c.rqSeq += uint64(posted)
	c.rqOut += posted
	return err
}

// postResult unpacks what rc_post_send and rc_post_recv return.
func postResult(r C.int64_t) (errno C.int, posted int) {
	return C.int(r >> 32), int(uint32(r))
}

// sgePtr returns the first element of s, or nil if s is empty (MaxSGE 0).
func sgePtr(s []C.struct_ibv_sge) *C.struct_ibv_sge {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// postError wraps the errno of a failed post.
func postError(call string, rc C.int) error {
	errno := syscall.Errno(rc)
	if errno == syscall.ENOMEM {
		return fmt.Errorf("rdmacore: %s: %w: %w", call, verbs.ErrQueueFull, errno)
	}
	return fmt.Errorf("rdmacore: %s: %w", call, errno)
}
