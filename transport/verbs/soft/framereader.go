package soft

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// errStop ends the reader's frame loop without an error of its own: the
// queue pair is in the error state and the rest of the stream is drained.
var errStop = errors.New("soft: stop reading")

// protocolError is a violation of the wire protocol by the peer: the
// stream is no longer trusted and the link is cut at once.
type protocolError struct{ err error }

func (e *protocolError) Error() string { return "soft: protocol error: " + e.err.Error() }
func (e *protocolError) Unwrap() error { return e.err }

var (
	errSequence      = errors.New("soft: request out of sequence")
	errUnexpectedAck = errors.New("soft: acknowledgement of a request never sent")
	errUnexpectedNak = errors.New("soft: NAK of no outstanding request")
	errUnexpectedRR  = errors.New("soft: read response matches no outstanding RDMA Read")
	errTrailer       = errors.New("soft: invalid payload trailer")

	errRecvLength     = fmt.Errorf("soft: Send longer than the posted Receive: %w: %w", verbs.ErrDisconnected, verbs.ErrLength)
	errRecvProtection = fmt.Errorf("soft: Send into an unusable Receive: %w: %w", verbs.ErrDisconnected, verbs.ErrLocalProtection)
	errPeerAccess     = fmt.Errorf("soft: peer's RDMA access refused: %w: %w", verbs.ErrDisconnected, verbs.ErrRemoteAccess)
	errReadDepth      = fmt.Errorf("soft: peer exceeded our RDMA Read depth: %w: %w", verbs.ErrDisconnected, verbs.ErrRemoteInvalidRequest)
	errBadInvalidate  = fmt.Errorf("soft: peer's Send With Invalidate named an rkey we cannot invalidate: %w: %w", verbs.ErrDisconnected, verbs.ErrRemoteInvalidRequest)
	errMemoryGone     = fmt.Errorf("soft: region closed under a transfer: %w: %w", verbs.ErrDisconnected, verbs.ErrLocalProtection)
)

// placeResult tells how a payload landed.
type placeResult uint8

const (
	placeOK      placeResult = iota
	placeAborted             // the sender's trailer says the message is void
	placeGone                // one of our regions was closed under the copy
	placeRefused             // the window's binding ended under the copy
)

// readLoop is the reader goroutine: it executes the peer's requests as an
// RC responder, without involving our user (placing Sends into posted
// Receives, checking and executing RDMA Writes and Reads against our
// windows), and handles the answers to our own requests. Once the queue
// pair is in error it drains the stream until the peer closes it, then
// closes the connection when the writer is done.
func (c *conn) readLoop() {
	defer c.wg.Done()
	var err error
	for err == nil {
		err = c.readFrame()
	}
	c.mu.Lock()
	if err != errStop {
		var pe *protocolError
		if errors.As(err, &pe) {
			c.failLocked(fmt.Errorf("%w: %w", verbs.ErrDisconnected, err))
			c.linkDead = true
			c.kickWriter()
		} else {
			c.linkLostLocked(err)
		}
	}
	// A flush deferred while the reader was placing data happens now,
	// whatever ended the placement.
	c.flushLocked()
	dead := c.linkDead
	c.mu.Unlock()
	if dead {
		_ = c.nc.Close()
	} else {
		for {
			if _, err := c.br.Discard(ioBufferSize); err != nil {
				break
			}
		}
	}
	<-c.writerDone
	_ = c.nc.Close()
	if c.faults != nil {
		c.faults.unregister(c)
	}
}

// readFrame reads and handles one frame.
func (c *conn) readFrame() error {
	b, err := c.br.Peek(headerLen)
	if err != nil {
		return err
	}
	h, err := parseHeader(b)
	if err != nil {
		return &protocolError{err}
	}
	if _, err := c.br.Discard(headerLen); err != nil {
		return err
	}
	switch h.Type {
	case frameSend:
		return c.onSend(&h)
	case frameWrite:
		return c.onWrite(&h)
	case frameReadRequest:
		return c.onReadRequest(&h)
	case frameReadResponse:
		return c.onReadResponse(&h)
	case frameAck:
		return c.onAck(&h)
	case frameNak:
		return c.onNak(&h)
	}
	c.mu.Lock()
	c.failLocked(errPeerDisconnected)
	c.mu.Unlock()
	return errStop
}

// acceptRequestLocked runs the checks common to every request. skip is
// true when the request must be discarded unexecuted.
func (c *conn) acceptRequestLocked(h *frameHeader) (skip bool, err error) {
	if c.state == stateError {
		return true, errStop
	}
	if c.dropping {
		return true, nil
	}
	if h.Seq != c.expSeq {
		return true, &protocolError{errSequence}
	}
	c.expSeq++
	return false, nil
}

// skipPayload discards the rest of a frame.
func (c *conn) skipPayload(h *frameHeader) error {
	if !h.Type.hasPayload() {
		return nil
	}
	_, err := c.br.Discard(int(h.Length) + 1)
	return err
}

// ackLocked acknowledges the peer's requests up to seq.
func (c *conn) ackLocked(seq uint32) {
	c.ackSeq, c.ackPending = seq, true
	c.kickWriter()
}

// nakLocked refuses the peer's request seq.
func (c *conn) nakLocked(seq uint32, code nakCode) {
	c.nakSeq, c.nakCode, c.nakPending = seq, code, true
	c.kickWriter()
}

// onSend delivers a Send into the oldest posted Receive.
func (c *conn) onSend(h *frameHeader) error {
	c.mu.Lock()
	skip, err := c.acceptRequestLocked(h)
	if skip {
		c.mu.Unlock()
		if err != nil {
			return err
		}
		return c.skipPayload(h)
	}
	if c.rqHead == c.rqTail {
		// IBA 9.7.5.2.8, class B: RNR NAK. With rnr_retry = 0 the
		// requester fails at once and disconnects; until then this
		// queue pair discards the requests that follow.
		c.dropping = true
		c.nakLocked(h.Seq, nakRNR)
		c.mu.Unlock()
		return c.skipPayload(h)
	}
	e := c.rqAt(c.rqHead)
	if e.badSGL || int(h.Length) > e.capacity {
		// Class C: NAK, and this queue pair fails too.
		status, code, cause := verbs.StatusLength, nakInvalidRequest, errRecvLength
		if e.badSGL {
			status, code, cause = verbs.StatusLocalProtection, nakRemoteOperation, errRecvProtection
		}
		c.rqHead++
		c.pushLocked(verbs.Completion{ID: e.id, Status: status, Op: verbs.OpRecv})
		c.nakLocked(h.Seq, code)
		c.failLocked(cause)
		c.mu.Unlock()
		return errStop
	}
	sgl := e.sgl
	res, err := c.placeUnlocked(sgl, int(h.Length))
	defer c.mu.Unlock()
	if err != nil {
		return err
	}
	switch res {
	case placeAborted:
		return nil // the sender's memory failed: no message, the Receive stays
	case placeGone:
		c.rqHead++
		c.pushLocked(verbs.Completion{ID: e.id, Status: verbs.StatusLocalProtection, Op: verbs.OpRecv})
		c.nakLocked(h.Seq, nakRemoteOperation)
		c.failLocked(errMemoryGone)
		return errStop
	}
	comp := verbs.Completion{ID: e.id, Op: verbs.OpRecv, ByteLen: int(h.Length)}
	if c.faults != nil {
		comp.ByteLen = c.faults.corruptRecvLength(comp.ByteLen, e.capacity)
	}
	c.rqHead++
	c.ackLocked(h.Seq)
	if h.Flags&flagInvalidate != 0 {
		if !c.invalidateLocked(h.RKey) {
			// rxe's class J: the Receive fails and this queue pair
			// goes to error, but the Send was acknowledged: the sender
			// sees success (and learns only from the disconnect).
			comp.Status = verbs.StatusRemoteInvalidRequest
			comp.ByteLen = 0
			c.pushLocked(comp)
			c.failLocked(errBadInvalidate)
			return errStop
		}
		comp.Invalidated, comp.InvalidatedRKey = true, h.RKey
	}
	c.pushLocked(comp)
	return nil
}

// onWrite executes an RDMA Write against one of our windows. The rkey is
// checked once, at the header; every chunk of the payload is then copied
// only while that binding holds (windowAccess.begin), so that a Local
// Invalidate (or Close) of the window that completes while the payload is
// still arriving refuses the rest of it: the Write fails with a remote
// access error rather than landing after the invalidation.
func (c *conn) onWrite(h *frameHeader) error {
	c.mu.Lock()
	skip, err := c.acceptRequestLocked(h)
	if skip {
		c.mu.Unlock()
		if err != nil {
			return err
		}
		return c.skipPayload(h)
	}
	var a windowAccess
	if h.Length > 0 { // a zero-length RDMA Write checks no rkey (IBA C9-88)
		var ok bool
		if a, ok = c.lookupLocked(h.RKey, h.Addr, h.Length, verbs.AccessRemoteWrite); !ok {
			c.nakLocked(h.Seq, nakRemoteAccess)
			c.failLocked(errPeerAccess)
			c.mu.Unlock()
			return errStop
		}
	}
	c.mu.Unlock()

	res := placeOK
	if err := c.placeInto(&a, int(h.Length), &res); err != nil {
		return err
	}
	if err := c.readTrailer(&res); err != nil {
		return err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == stateError {
		return errStop
	}
	switch res {
	case placeAborted:
		return nil
	case placeGone, placeRefused:
		c.nakLocked(h.Seq, nakRemoteAccess)
		c.failLocked(errPeerAccess)
		return errStop
	}
	c.ackLocked(h.Seq)
	return nil
}

// onReadRequest checks an RDMA Read against our windows and queues its
// response for the writer, which copies the data out only while the
// binding checked here holds: a response not yet sent whole when the
// window is invalidated (by the peer's Send With Invalidate, which this
// reader may execute while the writer still sends the response) is cut
// short and voided, a remote access error for the requester.
func (c *conn) onReadRequest(h *frameHeader) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if skip, err := c.acceptRequestLocked(h); skip {
		return err
	}
	if c.rrTail-c.rrHead == uint64(len(c.rr)) {
		// More Reads than the responder resources we announced.
		c.nakLocked(h.Seq, nakInvalidRequest)
		c.failLocked(errReadDepth)
		return errStop
	}
	var a windowAccess
	if h.Length > 0 {
		var ok bool
		if a, ok = c.lookupLocked(h.RKey, h.Addr, h.Length, verbs.AccessRemoteRead); !ok {
			c.nakLocked(h.Seq, nakRemoteAccess)
			c.failLocked(errPeerAccess)
			return errStop
		}
	}
	c.rr[c.rrTail%uint64(len(c.rr))] = readResponse{seq: h.Seq, access: a, length: int(h.Length)}
	c.rrTail++
	c.kickWriter()
	return nil
}

// onReadResponse places the data of our oldest outstanding RDMA Read.
func (c *conn) onReadResponse(h *frameHeader) error {
	c.mu.Lock()
	if c.state == stateError {
		c.mu.Unlock()
		return errStop
	}
	if c.readQHead == c.readQTail {
		c.mu.Unlock()
		return &protocolError{errUnexpectedRR}
	}
	idx := c.readQ[c.readQHead%uint64(len(c.readQ))]
	e := c.sqAt(idx)
	if e.seq != h.Seq || uint32(e.length) != h.Length {
		c.mu.Unlock()
		return &protocolError{errUnexpectedRR}
	}
	// A read response acknowledges every earlier request (IBA 9.7.5.1.2).
	c.ackUpToLocked(h.Seq - 1)
	sgl := e.sgl
	c.retry.rxResponse = true
	res, err := c.placeUnlocked(sgl, int(h.Length))
	c.retry.rxResponse = false
	defer c.mu.Unlock()
	if err != nil {
		return err
	}
	c.readQHead++
	c.readsOut--
	e.done = true
	switch res {
	case placeAborted:
		e.status = verbs.StatusRemoteAccess
		c.advanceSQLocked()
		c.failLocked(errPeerAccess)
		return errStop
	case placeGone:
		e.status = verbs.StatusLocalProtection
		c.advanceSQLocked()
		c.failLocked(errMemoryGone)
		return errStop
	}
	e.status = verbs.StatusSuccess
	c.advanceSQLocked()
	c.kickWriter() // a Read may have been waiting for the depth
	return nil
}

// onAck completes our requests up to h.Seq.
func (c *conn) onAck(h *frameHeader) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == stateError {
		return errStop
	}
	if seqLess(c.sendSeq-1, h.Seq) {
		return &protocolError{errUnexpectedAck}
	}
	c.ackUpToLocked(h.Seq)
	return nil
}

// onNak fails our request h.Seq: the queue pair enters the error state.
func (c *conn) onNak(h *frameHeader) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == stateError {
		return errStop
	}
	if seqLess(c.sendSeq-1, h.Seq) {
		return &protocolError{errUnexpectedNak}
	}
	c.ackUpToLocked(h.Seq - 1)
	for i := c.sqAck; i != c.sqTx; i++ {
		e := c.sqAt(i)
		if !e.remote() || e.done {
			continue
		}
		if e.seq != h.Seq {
			break
		}
		e.done, e.status = true, statusOfNak(h.Code)
		c.advanceSQLocked()
		c.failLocked(fmt.Errorf("soft: %s failed: %w: %w", e.op, verbs.ErrDisconnected, e.status.Err()))
		return errStop
	}
	return &protocolError{errUnexpectedNak}
}

// placeUnlocked places the next n bytes of the stream into sgl with c.mu
// released (held on entry, held again on return), flagged as placing. It
// returns errStop, after flushing, when the queue pair failed meanwhile.
func (c *conn) placeUnlocked(sgl []verbs.SGE, n int) (placeResult, error) {
	c.placing = true
	c.mu.Unlock()
	res, err := c.placeSGL(sgl, n)
	c.mu.Lock()
	c.placing = false
	if err != nil {
		return res, err
	}
	if c.state == stateError {
		c.flushLocked()
		return res, errStop
	}
	return res, nil
}

// placeSGL reads an n-byte payload into a scatter list, then its trailer.
func (c *conn) placeSGL(sgl []verbs.SGE, n int) (placeResult, error) {
	res := placeOK
	for _, s := range sgl {
		if n == 0 {
			break
		}
		k := min(s.Length, n)
		a := windowAccess{r: s.Region.(*region), off: s.Offset}
		if err := c.placeInto(&a, k, &res); err != nil {
			return res, err
		}
		n -= k
	}
	return res, c.readTrailer(&res)
}

// placeInto copies n bytes of the stream to where a lands, one buffered
// chunk at a time under memMu and a's window access lock. If a's window
// binding ended meanwhile the rest is dropped and res becomes
// placeRefused; if the region was closed, placeGone.
func (c *conn) placeInto(a *windowAccess, n int, res *placeResult) error {
	off := a.off
	for n > 0 {
		if c.br.Buffered() == 0 {
			if _, err := c.br.Peek(1); err != nil {
				return err
			}
		}
		k := min(n, c.br.Buffered())
		b, err := c.br.Peek(k)
		if err != nil {
			return err
		}
		c.memMu.RLock()
		switch held := a.begin(); {
		case !held:
			*res = placeRefused
		case a.r.closed.Load():
			*res = placeGone
		case *res == placeRefused:
			// Nothing more lands once a chunk was refused.
		default:
			copy(a.r.mem[off:off+k], b)
		}
		a.end()
		c.memMu.RUnlock()
		if _, err := c.br.Discard(k); err != nil {
			return err
		}
		c.retry.rxBytes.Add(uint64(k))
		off += k
		n -= k
	}
	return nil
}

// readTrailer reads the byte that ends a payload.
func (c *conn) readTrailer(res *placeResult) error {
	t, err := c.br.ReadByte()
	if err != nil {
		return err
	}
	switch t {
	case trailerOK:
	case trailerAborted:
		if *res == placeOK {
			*res = placeAborted
		}
	default:
		return &protocolError{errTrailer}
	}
	return nil
}
