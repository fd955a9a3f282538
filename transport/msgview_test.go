package transport

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestMsgViewCopyAt: reading a three-piece message (head, data with its XDR
// pad, tail) in chunks of every size from every offset gives what appendTo
// gives, for data lengths around every pad size.
func TestMsgViewCopyAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	piece := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(255) + 1)
		}
		return b
	}
	for _, hn := range []int{0, 1, 8} {
		for dn := range 10 {
			for _, tn := range []int{0, 3, 4} {
				v := msgView{head: piece(hn), tail: piece(tn)}
				if dn > 0 {
					v.data = piece(dn)
				}
				want := v.appendTo(nil)
				if len(want) != v.len() {
					t.Fatalf("len %d, appendTo %d bytes", v.len(), len(want))
				}
				for chunk := 1; chunk <= len(want)+1; chunk++ {
					var got []byte
					buf := make([]byte, chunk)
					for off := 0; off < v.len(); {
						n := v.copyAt(buf, off)
						if n == 0 {
							t.Fatalf("copyAt(%d) copied nothing before the end", off)
						}
						got = append(got, buf[:n]...)
						off += n
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("head %d data %d tail %d, chunks of %d: %x, want %x", hn, dn, tn, chunk, got, want)
					}
				}
			}
		}
	}
}

// TestMsgViewAppendToAllocs: appendTo makes the message in one allocation,
// however many pieces it has (a call's head, the data an RDMA Read pulled,
// its pad and the tail), and none when dst has room.
func TestMsgViewAppendToAllocs(t *testing.T) {
	v := msgView{head: make([]byte, 100), data: make([]byte, 2047), tail: make([]byte, 60)}
	if n := testing.AllocsPerRun(100, func() { _ = v.appendTo(nil) }); n != 1 {
		t.Errorf("appendTo(nil): %v allocations, want 1", n)
	}
	buf := make([]byte, 0, v.len())
	if n := testing.AllocsPerRun(100, func() { buf = v.appendTo(buf[:0]) }); n != 0 {
		t.Errorf("appendTo(buf with room): %v allocations, want 0", n)
	}
	want := append(append(append([]byte(nil), v.head...), v.data...), 0)
	want = append(want, v.tail...)
	if got := v.appendTo([]byte("x")); !bytes.Equal(got[1:], want) || got[0] != 'x' {
		t.Error("appendTo does not append the pieces and the pad in order")
	}
}
