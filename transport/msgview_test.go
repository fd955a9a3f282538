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
