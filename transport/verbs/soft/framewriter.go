package soft

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// jobKind is what the writer does next.
type jobKind uint8

const (
	jobIdle         jobKind = iota
	jobHeader               // a frame without payload
	jobPayload              // a Send or RDMA Write from a scatter/gather list
	jobReadResponse         // an RDMA Read Response from a window
	jobDisconnect           // the last frame
	jobDrop                 // injected fault: break the link
	jobExit
)

// writeJob is one unit of the writer's work, taken under c.mu and carried
// out without it.
type writeJob struct {
	kind   jobKind
	hdr    frameHeader
	sgl    []verbs.SGE  // jobPayload
	sqIdx  uint64       // jobPayload: the entry being sent
	access windowAccess // jobReadResponse
}

var (
	errBind            = fmt.Errorf("soft: memory window bind failed (IBV_WC_MW_BIND_ERR): %w", verbs.ErrDisconnected)
	errLocalInvalidate = fmt.Errorf("soft: local invalidate of an unknown rkey: %w", verbs.ErrDisconnected)
	errLocalProtection = fmt.Errorf("soft: %w: %w", verbs.ErrDisconnected, verbs.ErrLocalProtection)
	errFaultDrop       = errors.New("soft: link dropped by fault injection")
)

// writeLoop is the writer goroutine: the transmit side of the requester
// (our work requests, strictly in posting order) and of the responder
// (read responses, acknowledgements). It batches whatever is ready into
// one buffer and flushes when it runs out of work.
func (c *conn) writeLoop() {
	defer c.wg.Done()
	defer close(c.writerDone)
	var j writeJob
	for {
		c.mu.Lock()
		c.nextJobLocked(&j)
		c.mu.Unlock()
		var err error
		switch j.kind {
		case jobIdle:
			if c.bw.Buffered() > 0 {
				err = c.bw.Flush()
				break
			}
			<-c.kick
			continue
		case jobHeader:
			err = c.writeHeader(&j.hdr)
		case jobPayload:
			c.retry.txIdx.Store(j.sqIdx + 1)
			err = c.writeHeader(&j.hdr)
			intact := true
			for _, s := range j.sgl {
				if err != nil {
					break
				}
				var ok bool
				a := windowAccess{r: s.Region.(*region), off: s.Offset}
				ok, err = c.writeFrom(&a, s.Length)
				intact = intact && ok
			}
			if err == nil {
				err = c.writeTrailer(intact)
			}
			c.retry.txIdx.Store(0)
			if !intact {
				c.mu.Lock()
				if e := c.sqAt(j.sqIdx); !e.done && c.state != stateError {
					e.done, e.status = true, verbs.StatusLocalProtection
					c.advanceSQLocked()
					c.failLocked(errLocalProtection)
				}
				c.mu.Unlock()
			}
		case jobReadResponse:
			err = c.writeHeader(&j.hdr)
			intact := true
			if err == nil && j.hdr.Length > 0 {
				intact, err = c.writeFrom(&j.access, int(j.hdr.Length))
			}
			if err == nil {
				err = c.writeTrailer(intact)
			}
			if !intact {
				// The window was invalidated or closed under the
				// response: the requester's Read fails with a remote
				// access error, and so does this responder, as when
				// the rkey check fails up front.
				c.mu.Lock()
				c.failLocked(errPeerAccess)
				c.mu.Unlock()
			}
		case jobDisconnect:
			err = c.writeHeader(&j.hdr)
			if err == nil {
				err = c.bw.Flush()
			}
			if err == nil {
				if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
					_ = cw.CloseWrite()
				}
				return
			}
		case jobDrop:
			_ = c.bw.Flush() // what came before the lost Send still goes out
			c.mu.Lock()
			c.linkLostLocked(errFaultDrop)
			c.mu.Unlock()
			_ = c.nc.Close()
			return
		case jobExit:
			return
		}
		if err != nil {
			c.mu.Lock()
			c.linkLostLocked(err)
			c.mu.Unlock()
			_ = c.nc.Close()
			return
		}
	}
}

// nextJobLocked picks the writer's next job: read responses first, then
// acknowledgements, then (in the error state) the disconnect, else the
// next work request. Binds and local invalidates execute right here, in
// their place in the send queue.
func (c *conn) nextJobLocked(j *writeJob) {
	*j = writeJob{}
	for {
		if c.linkDead {
			j.kind = jobExit
			return
		}
		if c.rrHead != c.rrTail {
			r := &c.rr[c.rrHead%uint64(len(c.rr))]
			c.rrHead++
			j.kind = jobReadResponse
			j.hdr = frameHeader{Type: frameReadResponse, Seq: r.seq, Length: uint32(r.length)}
			j.access = r.access
			r.access = windowAccess{}
			return
		}
		if c.ackPending {
			c.ackPending = false
			j.kind = jobHeader
			j.hdr = frameHeader{Type: frameAck, Seq: c.ackSeq}
			return
		}
		if c.nakPending {
			c.nakPending = false
			j.kind = jobHeader
			j.hdr = frameHeader{Type: frameNak, Seq: c.nakSeq, Code: c.nakCode}
			return
		}
		if c.state == stateError {
			if c.disconnectSent {
				j.kind = jobExit
				return
			}
			c.disconnectSent = true
			j.kind = jobDisconnect
			j.hdr = frameHeader{Type: frameDisconnect}
			return
		}
		if c.state != stateEstablished || c.sqTx == c.sqTail {
			j.kind = jobIdle
			return
		}
		e := c.sqAt(c.sqTx)
		switch {
		case e.op == verbs.OpBindWindow:
			c.sqTx++
			e.done = true
			if !c.bindLocked(e) {
				e.status = verbs.StatusOther
				c.advanceSQLocked()
				c.failLocked(errBind)
				continue
			}
			c.advanceSQLocked()
			continue
		case e.op == verbs.OpLocalInvalidate:
			c.sqTx++
			e.done = true
			if !c.invalidateLocked(e.invRKey) {
				e.status = verbs.StatusOther
				c.advanceSQLocked()
				c.failLocked(errLocalInvalidate)
				continue
			}
			c.advanceSQLocked()
			continue
		case e.badSGL:
			c.sqTx++
			e.done, e.status = true, verbs.StatusLocalProtection
			c.advanceSQLocked()
			c.failLocked(errLocalProtection)
			continue
		case e.op == verbs.OpRDMARead:
			// Like a NIC, stop the whole queue at the initiator depth.
			if c.readsOut >= c.readLimit {
				j.kind = jobIdle
				return
			}
			c.readQ[c.readQTail%uint64(len(c.readQ))] = c.sqTx
			c.readQTail++
			c.readsOut++
		}
		e.seq = c.sendSeq
		c.sendSeq++
		j.sqIdx = c.sqTx
		c.sqTx++
		c.armRetryLocked()
		switch e.op {
		case verbs.OpRDMARead:
			j.kind = jobHeader
			j.hdr = frameHeader{Type: frameReadRequest, Seq: e.seq, RKey: e.rkey, Length: uint32(e.length), Addr: e.raddr}
			return
		case verbs.OpRDMAWrite:
			j.hdr = frameHeader{Type: frameWrite, Seq: e.seq, RKey: e.rkey, Length: uint32(e.length), Addr: e.raddr}
		case verbs.OpSendWithInvalidate:
			j.hdr = frameHeader{Type: frameSend, Flags: flagInvalidate, Seq: e.seq, RKey: e.invRKey, Length: uint32(e.length)}
		default:
			j.hdr = frameHeader{Type: frameSend, Seq: e.seq, Length: uint32(e.length)}
		}
		if e.op != verbs.OpRDMAWrite && c.faults != nil && c.faults.takeDropAtSend() {
			j.kind = jobDrop
			return
		}
		j.kind = jobPayload
		j.sgl = e.sgl
		return
	}
}

// writeHeader buffers a frame header.
func (c *conn) writeHeader(h *frameHeader) error {
	if c.bw.Available() < headerLen {
		if err := c.bw.Flush(); err != nil {
			return err
		}
	}
	b := c.bw.AvailableBuffer()[:headerLen]
	h.put(b)
	_, err := c.bw.Write(b)
	return err
}

// writeTrailer ends a payload.
func (c *conn) writeTrailer(intact bool) error {
	if intact {
		return c.bw.WriteByte(trailerOK)
	}
	return c.bw.WriteByte(trailerAborted)
}

// writeFrom streams n bytes from where a lands, copying one buffer-full at
// a time under memMu and a's window access lock, so that neither closing
// the region nor ending the window's binding races a copy. If either
// happened meanwhile the rest is sent as zeros and intact is false.
func (c *conn) writeFrom(a *windowAccess, n int) (intact bool, err error) {
	intact = true
	off := a.off
	for n > 0 {
		if c.bw.Available() == 0 {
			if err := c.bw.Flush(); err != nil {
				return intact, err
			}
		}
		k := min(n, c.bw.Available())
		b := c.bw.AvailableBuffer()[:k]
		c.memMu.RLock()
		if held := a.begin(); !held || !intact || a.r.closed.Load() {
			clear(b)
			intact = false
		} else {
			copy(b, a.r.mem[off:off+k])
		}
		a.end()
		c.memMu.RUnlock()
		if _, err := c.bw.Write(b); err != nil {
			return intact, err
		}
		c.retry.txBytes.Add(uint64(k))
		off += k
		n -= k
	}
	return intact, nil
}

// seqLess reports whether sequence number a comes before b (serial number
// arithmetic over 32 bits).
func seqLess(a, b uint32) bool { return int32(a-b) < 0 }

// ackUpToLocked handles the peer's acknowledgement of every request up to
// and including seq (a cumulative ACK, as an IB AETH acknowledges all PSNs
// up to its own). RDMA Reads complete only with their response data.
func (c *conn) ackUpToLocked(seq uint32) {
	for c.sqAck != c.sqTx {
		e := c.sqAt(c.sqAck)
		if e.remote() && !e.done {
			if seqLess(seq, e.seq) {
				break
			}
			if e.op != verbs.OpRDMARead {
				e.done, e.status = true, verbs.StatusSuccess
			}
		}
		c.sqAck++
	}
	c.advanceSQLocked()
}

// statusOfNak maps a NAK code to the requester's completion status, as an
// IB requester does (IBA 9.9.2.1).
func statusOfNak(code nakCode) verbs.Status {
	switch code {
	case nakRNR:
		return verbs.StatusRNR
	case nakRemoteAccess:
		return verbs.StatusRemoteAccess
	case nakInvalidRequest:
		return verbs.StatusRemoteInvalidRequest
	}
	return verbs.StatusOther
}
