package soft

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// postErrLocked returns why nothing can be posted now, if anything.
func (c *conn) postErrLocked(send bool) error {
	switch {
	case c.closed:
		return errConnClosed
	case c.state == stateError:
		return c.err
	case send && c.state == stateSetup:
		return errNotEstablished
	}
	return nil
}

// PostSend posts work requests in order. Those before a failing one stay
// posted; checks a real NIC makes while executing (lkeys, bounds, window
// state) are reported in completions, not here.
func (c *conn) PostSend(wrs []verbs.WorkRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.postErrLocked(true); err != nil {
		return err
	}
	if c.faults != nil {
		if err := c.faults.takePostSendFailure(); err != nil {
			return err
		}
	}
	var err error
	posted := 0
	for i := range wrs {
		wr := &wrs[i]
		if c.sqPosted >= len(c.sq) {
			err = errSendQueueFull
			break
		}
		if len(wr.SGL) > c.caps.MaxSGE {
			err = errTooManySGE
			break
		}
		e := c.sqAt(c.sqTail)
		e.sgl = e.sgl[:0]
		e.length, e.badSGL = 0, false
		e.window, e.bind, e.access, e.newRKey = nil, verbs.SGE{}, 0, 0
		switch wr.Op {
		case verbs.OpSend, verbs.OpSendWithInvalidate, verbs.OpRDMAWrite, verbs.OpRDMARead:
			total, ok := c.checkSGL(wr.SGL)
			if total > MaxMessageSize {
				err = errMessageTooLong
			}
			e.sgl = append(e.sgl, wr.SGL...)
			e.length, e.badSGL = total, !ok
		case verbs.OpLocalInvalidate:
		case verbs.OpBindWindow:
			if w, ok := wr.Window.(*window); ok && w != nil && w.c == c {
				var rkey uint32
				if rkey, err = verbs.BindRKey(w.userRKey.Load(), wr.RKey); err != nil {
					err = fmt.Errorf("soft: %w", err)
					break
				}
				e.window = w
				e.newRKey = rkey
				w.userRKey.Store(rkey)
			}
			e.bind, e.access = wr.Bind, wr.Access
		default:
			err = errOpcode
		}
		if err != nil {
			e.sgl = e.sgl[:0]
			break
		}
		e.id, e.op = wr.ID, wr.Op
		e.raddr, e.rkey, e.invRKey = wr.RemoteAddr, wr.RKey, wr.InvalidateRKey
		e.seq, e.done, e.status = 0, false, verbs.StatusSuccess
		c.sqTail++
		c.sqPosted++
		posted++
	}
	if posted > 0 {
		c.kickWriter()
	}
	return err
}

// PostRecv posts Receives in order.
func (c *conn) PostRecv(rrs []verbs.RecvRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.postErrLocked(false); err != nil {
		return err
	}
	if c.faults != nil {
		if err := c.faults.takePostRecvFailure(); err != nil {
			return err
		}
	}
	for i := range rrs {
		rr := &rrs[i]
		if c.rqPosted >= len(c.rq) {
			return errRecvQueueFull
		}
		if len(rr.SGL) > c.caps.MaxSGE {
			return errTooManySGE
		}
		e := c.rqAt(c.rqTail)
		total, ok := c.checkSGL(rr.SGL)
		e.id = rr.ID
		e.sgl = append(e.sgl[:0], rr.SGL...)
		e.capacity, e.badSGL = total, !ok
		c.rqTail++
		c.rqPosted++
	}
	return nil
}
