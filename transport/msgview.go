package transport

import "github.com/go-rpcrdma/rpcrdma/xdr"

// msgView is a received message in up to three pieces: head, then data
// (a DDP-eligible result where the responder's RDMA Write placed it) with
// its XDR pad, then tail. Reading it copies each byte once (RFC 8166 §3.5.5:
// the requester reinserts the Write chunk's data at its XDR position).
type msgView struct {
	head, data, tail []byte
}

// pad is the XDR roundup of data (RFC 4506 §4.10).
func (v *msgView) pad() int { return xdr.RoundUp(len(v.data)) - len(v.data) }

// len returns the message's length.
func (v *msgView) len() int { return len(v.head) + len(v.data) + v.pad() + len(v.tail) }

// copyAt copies the message from byte off into p and returns the count.
func (v *msgView) copyAt(p []byte, off int) int {
	n := 0
	for _, part := range [...]struct {
		b   []byte
		pad int
	}{{v.head, 0}, {v.data, v.pad()}, {v.tail, 0}} {
		plen := len(part.b) + part.pad
		if off >= plen {
			off -= plen
			continue
		}
		for off < plen && n < len(p) {
			if off < len(part.b) {
				k := copy(p[n:], part.b[off:])
				n += k
				off += k
				continue
			}
			p[n] = 0 // XDR pad
			n++
			off++
		}
		off = 0
		if n == len(p) {
			break
		}
	}
	return n
}

// appendTo appends the message to dst, growing it at most once.
func (v *msgView) appendTo(dst []byte) []byte {
	if n := v.len(); cap(dst)-len(dst) < n {
		// One allocation (slices.Grow makes two under the race detector).
		grown := make([]byte, len(dst), len(dst)+n)
		copy(grown, dst)
		dst = grown
	}
	dst = append(dst, v.head...)
	if v.data != nil {
		dst = append(dst, v.data...)
		for range v.pad() {
			dst = append(dst, 0)
		}
	}
	return append(dst, v.tail...)
}
