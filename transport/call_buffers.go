package transport

import (
	"github.com/go-rpcrdma/rpcrdma/transport/internal/marshal"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// CallBuffers supplies the buffers a responder assembles its large calls in
// (Config.CallBuffers). Both methods run with the connection's lock held:
// they must not call the Conn's methods, and should be quick (a pool).
type CallBuffers interface {
	// GetCallBuffer returns a buffer whose capacity is at least n bytes
	// (a shorter one is not used: the call then goes through the
	// connection's memory). Its contents are overwritten.
	GetCallBuffer(n int) []byte
	// PutCallBuffer takes back a buffer of GetCallBuffer that no
	// ReadMsgAlloc took: its call was read by Read or ReadMsg (which copy
	// into the reader's buffer) or dropped as unusable. The buffer of a
	// call whose connection was lost while its RDMA Reads were in flight
	// is not given back: it is left to the garbage collector once the
	// connection is closed.
	PutCallBuffer(b []byte)
}

// Calls pulled into the RPC server's memory (Config.CallBuffers).
//
// Without it, a call's Read chunk is pulled into a registered buffer of the
// endpoint's pool, and ReadMsg copies the call out of it (and out of the
// Receive buffer that holds the rest) into the reader's buffer: for an NFS
// WRITE, a copy of its data. With it, the responder takes the reader's
// buffer before the pull, registers it (regCache), has the RDMA Reads place
// the chunk at its position in the message (marshal.LayoutCall) and copies
// the inline part around it when they complete (marshal.AssembleCall):
// the call is then whole in a buffer that ReadMsgAlloc hands over, and the
// Receive buffer is free at once. svcrdma pulls a WRITE's data into the
// pages the file system then takes the same way.

// pullDirectLocked prepares call, whose Read chunk data is call.pullLen
// bytes, to be pulled into a buffer of Config.CallBuffers, and reports
// whether it did; it leaves the call as it was otherwise (the chunk then
// goes to the endpoint's pool memory).
func (s *responder) pullDirectLocked(ep *endpoint, call *svcCall) bool {
	c := s.c
	cb := c.cfg.CallBuffers
	if cb == nil || c.cfg.DirectPlacementMin < 0 || call.pullLen < c.cfg.DirectPlacementMin {
		return false
	}
	if _, ok := ep.vc.(verbs.Registrar); !ok {
		return false // no buffer taken that could not be registered
	}
	// (LayoutCall ignores the inline length of RDMA_NOMSG, whose chunk is
	// the whole message.)
	l, ok := marshal.LayoutCall(&call.hdr, call.inlineLen, call.pullLen)
	if !ok || l.Len > c.cfg.MaxRPCSize {
		return false
	}
	b := cb.GetCallBuffer(l.Len)
	if cap(b) < l.Len {
		return false
	}
	r, off, ok := s.registerBufferLocked(ep, b[:l.Len], "registering a call buffer failed: pulling into the connection's memory", call.xid)
	if !ok {
		cb.PutCallBuffer(b[:0])
		return false
	}
	c.stats.readChunksInPlace.Add(1)
	call.pullBuf, call.pullReg, call.pullOff, call.layout = b[:l.Len], r, off+l.DataOff, l
	return true
}

// assembleLocked completes call's message in its pull buffer once the RDMA
// Reads are done: the inline part is copied around the data, the buffer's
// registration given back to the cache, and the Receive buffer freed (to
// be posted again when a call is answered, as freeInPlaceLocked does).
// The message is then call.msg, owned by the call until ReadMsgAlloc takes
// it (takeOwnedCallLocked) or it goes back to CallBuffers.
func (s *responder) assembleLocked(ep *endpoint, call *svcCall, inline []byte) {
	marshal.AssembleCall(call.pullBuf, inline, call.layout)
	if err := ep.regs.put(call.pullReg); err != nil {
		s.c.cfg.Logger.Warn("rpcrdma: deregistering a call buffer", "err", err)
	}
	call.msg, call.owned = call.pullBuf, true
	call.pullBuf, call.pullReg = nil, nil
	ep.holdRecv(call.recvBuf)
}

// putOwnedLocked gives call's assembled message back to CallBuffers, if it
// still has one.
func (s *responder) putOwnedLocked(call *svcCall) {
	if call.owned {
		call.owned = false
		s.c.cfg.CallBuffers.PutCallBuffer(call.msg)
	}
	call.msg = nil
}

// takeOwnedCallLocked hands slot's assembled message over to a
// ReadMsgAlloc, if the call has one.
func (s *responder) takeOwnedCallLocked(slot int) ([]byte, bool) {
	call := &s.calls[slot]
	if !call.owned {
		return nil, false
	}
	msg := call.msg
	call.msg, call.owned = nil, false
	return msg, true
}
