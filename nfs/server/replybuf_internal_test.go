package server

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfs"
)

// TestReplyBufClasses: a buffer comes from the smallest class that holds
// the request, goes back to its class when it kept its capacity, and is
// left to the garbage collector when it is over the largest class or grew
// out of its own.
func TestReplyBufClasses(t *testing.T) {
	const k4, m1 = 1 << minReplyBufShift, 1 << maxReplyBufShift
	for _, tc := range []struct{ n, class int }{
		{0, 0}, {1, 0}, {k4, 0}, {k4 + replySlack, 0}, {k4 + replySlack + 1, 1},
		{64<<10 + replySlack, 4}, {64<<10 + replySlack + 1, 5},
		{m1 + replySlack, maxReplyBufShift - minReplyBufShift}, {m1 + replySlack + 1, -1},
	} {
		if got := replyBufClass(tc.n); got != tc.class {
			t.Errorf("replyBufClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
		b, rb := getReplyBuf(tc.n)
		if len(b) != 0 || cap(b) < tc.n {
			t.Errorf("getReplyBuf(%d): len %d cap %d", tc.n, len(b), cap(b))
		}
		if (rb == nil) != (tc.class < 0) {
			t.Errorf("getReplyBuf(%d): pooled %v, want %v", tc.n, rb != nil, tc.class >= 0)
		}
		if tc.class >= 0 && cap(b) != replyBufCap(tc.class) {
			t.Errorf("getReplyBuf(%d): cap %d, want the class's %d", tc.n, cap(b), replyBufCap(tc.class))
		}
	}
	// The largest READ's reply (1 MiB of data, the longest header and
	// attributes) fits the largest class.
	if c := replyBufClass(nfs.ReplyHeaderMax + 4 + nfs.PostOpAttrMax + 12 + m1 + 3); c != maxReplyBufShift-minReplyBufShift {
		t.Errorf("a 1 MiB READ's reply takes class %d", c)
	}

	// Back to the pool and out again: the same memory, emptied. A
	// sync.Pool may drop what it is given (under -race, a quarter of it
	// on purpose; or the goroutine moved to another processor in between),
	// so the round trip is tried a few times.
	var b2 []byte
	var rb2 *replyBuf
	reused := false
	for range 50 {
		b, rb := getReplyBuf(100 << 10)
		b = append(b, "reply"...)
		putReplyBuf(rb, b)
		b2, rb2 = getReplyBuf(100 << 10)
		if rb2 == rb {
			if len(b2) != 0 || &b2[:1][0] != &b[0] {
				t.Fatalf("a buffer given back came out again with length %d, or other memory", len(b2))
			}
			reused = true
			break
		}
	}
	if !reused {
		t.Error("no buffer given back was taken out again in 50 tries")
	}
	// A reply that outgrew its buffer is not pooled under the wrong class.
	grown := append(b2, make([]byte, cap(b2)+1)...)
	putReplyBuf(rb2, grown)
	if b3, _ := getReplyBuf(100 << 10); cap(b3) != replyBufCap(5) {
		t.Errorf("class of 128 KiB handed out a buffer of %d bytes", cap(b3))
	}
}
