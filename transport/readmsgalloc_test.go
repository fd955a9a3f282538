package transport

import (
	"bytes"
	"testing"
	"time"
)

// TestReadMsgAlloc: the responder's ReadMsgAlloc asks for a buffer of the
// message's exact length and returns the message in it (the same backing
// array), and a buffer from get that is too small still yields the whole
// message, in a buffer of its own.
func TestReadMsgAlloc(t *testing.T) {
	cl, srv := loopbackPair(t, 10*time.Second)
	for i, size := range []int{0, 100, 3000, 64 << 10} {
		call := append(appendCall(nil, uint32(i+1), 0), pattern(size, byte(i))...)
		if err := cl.WriteMsg(call); err != nil {
			t.Fatal(err)
		}
		var asked int
		pool := make([]byte, 0, len(call)+512)
		small := i == 2
		msg, err := srv.ReadMsgAlloc(func(n int) []byte {
			asked = n
			if small {
				return make([]byte, 0, n/2)
			}
			return pool
		})
		if err != nil {
			t.Fatal(err)
		}
		if asked != len(call) {
			t.Errorf("size %d: get(%d), want get(%d)", size, asked, len(call))
		}
		if !bytes.Equal(msg, call) {
			t.Fatalf("size %d: message differs (%d bytes, want %d)", size, len(msg), len(call))
		}
		if inPool := cap(msg) > 0 && &msg[:cap(msg)][cap(msg)-1] == &pool[:cap(pool)][cap(pool)-1]; inPool == small {
			t.Errorf("size %d: message in get's buffer %v, want %v", size, inPool, !small)
		}
		if err := srv.WriteMsg(appendReply(nil, uint32(i+1))); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.ReadMsg(nil); err != nil {
			t.Fatal(err)
		}
	}
}
