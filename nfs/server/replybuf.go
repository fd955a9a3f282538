package server

import (
	"math/bits"
	"sync"
)

// READ replies are built in buffers taken from replyBufs and given back
// once the reply is written: over TCP when WriteMsg returns (it copied the
// reply into the socket), over RDMA when the transport is done with it
// (transport.Conn.WriteMsgDirect writes the data to the client's Write
// chunk from the buffer itself, registered once and cached, and gives it
// back after the reply's Send completed), so that a stream of large READs
// allocates, zeroes, copies and collects no buffer per call.
// A class holds a power of two of data, from 4 KiB to 1 MiB, and replySlack
// more bytes for the reply's header, attributes and counts, so that a READ
// of 2^k bytes takes the class of 2^k, not twice that; a reply larger than
// the largest class is allocated for that reply alone. sync.Pool lets the garbage
// collector take back what an idle server no longer uses.

const (
	minReplyBufShift = 12 // 4 KiB of data
	maxReplyBufShift = 20 // 1 MiB of data: the largest READ (FSINFO's rtmax)
	// replySlack covers what a READ reply holds besides its data:
	// nfs.ReplyHeaderMax, the status, post_op_attr, count, eof, the data's
	// length and its padding.
	replySlack = 1 << 10
)

// replyBuf is a pooled reply buffer; the pool holds pointers, so that
// putting one back allocates nothing. put gives b back (made once per
// replyBuf, so that handing it to WriteMsgDirect as its done allocates
// nothing either).
type replyBuf struct {
	b   []byte
	put func()
}

// newReplyBuf returns a replyBuf whose put gives back its b.
func newReplyBuf() *replyBuf {
	rb := &replyBuf{}
	rb.put = func() { putReplyBuf(rb, rb.b) }
	return rb
}

var replyBufs [maxReplyBufShift - minReplyBufShift + 1]sync.Pool

// smallReplyBufs keeps up to its capacity of the smallest class (every
// inline READ reply, and the 4 KiB READs) in front of its sync.Pool: a
// free list that neither a collection empties nor the race detector
// thins at random (as it does a sync.Pool), so that a stream of small
// READs allocates nothing, under -race too (TestServerCallsAllocNothing).
// At most 64 × 5 KiB stay held.
var smallReplyBufs = make(chan *replyBuf, 64)

// replyBufCap is the capacity of the buffers of class.
func replyBufCap(class int) int { return 1<<(class+minReplyBufShift) + replySlack }

// replyBufClass returns the smallest class whose buffers hold n bytes, or -1
// if n is over the largest class.
func replyBufClass(n int) int {
	data := n - replySlack
	if data <= 1<<minReplyBufShift {
		return 0
	}
	shift := bits.Len(uint(data - 1))
	if shift > maxReplyBufShift {
		return -1
	}
	return shift - minReplyBufShift
}

// getReplyBuf returns a buffer of capacity at least n and length 0, pooled
// if n fits a class (rb non-nil: give it back with putReplyBuf once the
// reply is written).
func getReplyBuf(n int) (b []byte, rb *replyBuf) {
	class := replyBufClass(n)
	if class < 0 {
		return make([]byte, 0, n), nil
	}
	if class == 0 {
		select {
		case v := <-smallReplyBufs:
			return v.b[:0], v
		default:
		}
	}
	if v, _ := replyBufs[class].Get().(*replyBuf); v != nil {
		return v.b[:0], v
	}
	return make([]byte, 0, replyBufCap(class)), newReplyBuf()
}

// putReplyBuf gives back the buffer b of getReplyBuf's rb (b may have been
// resliced, not reallocated). A nil rb, or a b that grew out of its class,
// is left to the garbage collector.
func putReplyBuf(rb *replyBuf, b []byte) {
	if rb == nil {
		return
	}
	class := replyBufClass(cap(b))
	if class < 0 || cap(b) != replyBufCap(class) {
		return
	}
	rb.b = b[:0]
	if class == 0 {
		select {
		case smallReplyBufs <- rb:
			return
		default:
		}
	}
	replyBufs[class].Put(rb)
}

// replyBufShells holds replyBufs without a buffer, for the pooled buffers
// the transport hands over without one (callBuffers): giving such a buffer
// back takes a shell here, taking one out of the pool leaves its shell
// here, so that neither allocates.
var replyBufShells = sync.Pool{New: func() any { return newReplyBuf() }}

// putPooledBuf gives back b, a buffer of a class that came without its
// replyBuf (from the transport, through callBuffers); any other b is left
// to the garbage collector.
func putPooledBuf(b []byte) {
	class := replyBufClass(cap(b))
	if class < 0 || cap(b) != replyBufCap(class) {
		return
	}
	putReplyBuf(replyBufShells.Get().(*replyBuf), b)
}

// callBuffers is the transport.CallBuffers of a Server (Config's
// Transport.CallBuffers when nil): a large call (an NFS WRITE of 32 KiB or
// more, a Long Call) is pulled by the transport's RDMA Reads straight into
// a buffer of the READ replies' pool, which the worker that reads the call
// (ReadMsgAlloc hands it over) gives back once the call is executed
// (readCalls), as it does a large WRITE it reads into a buffer of its
// own. The transport registers each buffer once per connection, as it
// does READ replies' (WriteMsgDirect).
type callBuffers struct{}

// GetCallBuffer takes a pooled buffer of at least n bytes.
func (callBuffers) GetCallBuffer(n int) []byte {
	b, rb := getReplyBuf(n)
	if rb != nil {
		rb.b = nil
		replyBufShells.Put(rb)
	}
	return b
}

// PutCallBuffer gives back a buffer no worker took.
func (callBuffers) PutCallBuffer(b []byte) { putPooledBuf(b) }
