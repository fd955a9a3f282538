package marshal

import (
	"errors"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// RemoteOp is one RDMA Read or Write of a transfer split over the segments of
// a chunk: Len bytes between local offset Local and the peer's memory named by
// Handle and Offset.
type RemoteOp struct {
	Handle uint32
	Offset uint64
	Local  int
	Len    int
}

// ErrChunkOverflow: a transfer is longer than the chunk's segments hold.
var ErrChunkOverflow = errors.New("rpcrdma: transfer longer than the chunk")

// AppendWriteOps appends the RDMA Writes that place n bytes, starting at local
// offset local, into the segments of a Write or Reply chunk, in segment order
// (RFC 8166 §3.4.6). Zero-length pieces are skipped.
func AppendWriteOps(dst []RemoteOp, local, n int, segs chunks.WriteChunk) ([]RemoteOp, error) {
	if uint64(n) > segs.Length() {
		return dst, ErrChunkOverflow
	}
	for _, s := range segs {
		if n == 0 {
			break
		}
		l := min(int(s.Length), n)
		if l > 0 {
			dst = append(dst, RemoteOp{Handle: s.Handle, Offset: s.Offset, Local: local, Len: l})
		}
		local += l
		n -= l
	}
	return dst, nil
}

// AppendReadOps appends the RDMA Reads that pull a Read chunk into local
// memory starting at local offset local, one per segment in list order (RFC
// 8166 §3.4.5: the responder concatenates the segments).
func AppendReadOps(dst []RemoteOp, local int, c chunks.ReadChunk) []RemoteOp {
	for _, s := range c {
		if s.Length > 0 {
			dst = append(dst, RemoteOp{Handle: s.Handle, Offset: s.Offset, Local: local, Len: int(s.Length)})
		}
		local += int(s.Length)
	}
	return dst
}
