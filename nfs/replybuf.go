package nfs

import (
	"math/bits"
	"sync"
)

// READ replies are built in buffers taken from replyBufs and given back
// once the reply is written (msgConn.WriteMsg copies it: into registered
// memory and a Send buffer over RDMA, into the socket over TCP), so that a
// stream of large READs allocates, zeroes and collects no buffer per call.
// Buffers come in power-of-two classes from minReplyBuf up; a reply larger
// than the largest class is allocated as before. sync.Pool lets the
// garbage collector take back what an idle server no longer uses.

const (
	minReplyBufShift = 12 // 4 KiB
	maxReplyBufShift = 21 // 2 MiB: a 1 MiB READ's reply, and more
	minReplyBuf      = 1 << minReplyBufShift
)

// replyBuf is a pooled reply buffer; the pool holds pointers, so that
// putting one back allocates nothing.
type replyBuf struct{ b []byte }

var replyBufs [maxReplyBufShift - minReplyBufShift + 1]sync.Pool

// replyBufClass returns the class of a buffer of at least n bytes, or -1 if
// n is over the largest class.
func replyBufClass(n int) int {
	if n <= minReplyBuf {
		return 0
	}
	shift := bits.Len(uint(n - 1))
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
	if v, _ := replyBufs[class].Get().(*replyBuf); v != nil {
		return v.b[:0], v
	}
	return make([]byte, 0, 1<<(class+minReplyBufShift)), &replyBuf{}
}

// putReplyBuf gives back the buffer b of getReplyBuf's rb (b may have been
// resliced, not reallocated). A nil rb, or a b that grew out of its class,
// is left to the garbage collector.
func putReplyBuf(rb *replyBuf, b []byte) {
	if rb == nil {
		return
	}
	class := replyBufClass(cap(b))
	if class < 0 || cap(b) != 1<<(class+minReplyBufShift) {
		return
	}
	rb.b = b[:0]
	replyBufs[class].Put(rb)
}
