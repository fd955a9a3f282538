package chunks

// Segment is a plain RDMA segment (RFC 8166 §3.4.3, rpcrdma1_segment): a
// registered memory region of the peer, named by its handle (R_key), its
// length in bytes and its offset (the remote address). The offset is opaque
// to the party that uses the segment; Linux puts the XID in its upper bits.
type Segment struct {
	Handle uint32
	Length uint32
	Offset uint64
}

// ReadSegment is an entry of the Read list (RFC 8166 §3.4.5,
// rpcrdma1_read_segment): a Segment plus the XDR Position, the byte offset in
// the unreduced RPC message where the data it holds belongs.
type ReadSegment struct {
	Position uint32
	Segment
}

// ReadChunk is one Read chunk (RFC 8166 §3.4.5): consecutive entries of the
// Read list that share one Position, whose contents the responder
// concatenates in list order. A position-zero Read chunk carries a whole RPC
// Call (a Long Call, RFC 8166 §3.5.3).
type ReadChunk []ReadSegment

// Position returns the XDR Position shared by the segments of c, or 0 if c is
// empty.
func (c ReadChunk) Position() uint32 {
	if len(c) == 0 {
		return 0
	}
	return c[0].Position
}

// Length returns the total length in bytes of the segments of c. It is
// computed in 64 bits, so it cannot wrap.
func (c ReadChunk) Length() uint64 {
	var n uint64
	for i := range c {
		n += uint64(c[i].Length)
	}
	return n
}

// WriteChunk is a Write chunk or the Reply chunk (RFC 8166 §3.4.6,
// rpcrdma1_write_chunk): a counted array of segments that the responder fills
// in order. In a reply, the segment lengths give the bytes actually written.
type WriteChunk []Segment

// Length returns the total length in bytes of the segments of c, computed in
// 64 bits.
func (c WriteChunk) Length() uint64 {
	var n uint64
	for i := range c {
		n += uint64(c[i].Length)
	}
	return n
}
