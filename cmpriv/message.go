package cmpriv

import "strconv"

// Wire constants of RFC 8797 §4 and the size limits of §4.2.
const (
	// FormatID is the Format Identifier of RPC-over-RDMA version 1 CM
	// private data (RFC 8797 §4, registered in §8), sent in network byte
	// order.
	FormatID uint32 = 0xf6ab0e18

	// Version is the only message format version this package knows
	// (RFC 8797 §4): the message is exactly Len octets in the layout of §4.
	// Other versions are treated as absent (§5.2, §6).
	Version uint8 = 1

	// Len is the length in octets of a version 1 message (RFC 8797 §8).
	Len = 8

	// MinSize is the smallest inline threshold that can be advertised, the
	// RPC-over-RDMA version 1 minimum (RFC 8797 §4.2, RFC 8166 §3.3.3).
	MinSize = 1024

	// MaxSize is the largest inline threshold that can be advertised
	// (RFC 8797 §4.2): code 255 in a size field.
	MaxSize = 256 * 1024

	// DefaultSize is the inline threshold each way when the peer sent no
	// usable private data (RFC 8797 §5.1, RFC 8166 §3.3.3).
	DefaultSize = 1024
)

// flagRemoteInvalidate is the R bit in the flags octet (RFC 8797 §4, §4.1).
// The other seven bits are reserved.
const flagRemoteInvalidate = 0x01

// sizeUnit is the granularity of the size fields (RFC 8797 §4.2).
const sizeUnit = 1024

// Message is an RPC-over-RDMA version 1 CM private data message
// (RFC 8797 §4). The sizes are in bytes. A Message produced by [Parse] or by
// [Message.Normalize] always has sizes that the wire can carry: multiples of
// 1024 from [MinSize] to [MaxSize].
type Message struct {
	// RemoteInvalidate is the R bit (RFC 8797 §4.1): the sender supports
	// remote invalidation. From a requester it promises that every STag it
	// advertises may be invalidated by the responder; from a responder it
	// says that the responder can post Send With Invalidate.
	RemoteInvalidate bool

	// SendSize is the largest message, in bytes, that the sender is
	// prepared to transmit in a single RDMA Send (RFC 8797 §4).
	SendSize int

	// RecvSize is the largest message, in bytes, that the sender is
	// prepared to receive with a single RDMA Receive (RFC 8797 §4).
	RecvSize int
}

// Default returns the message a peer is taken to have sent when it sent none
// that conforms to RFC 8797 §4: R clear and both sizes 1024 (RFC 8797 §5.1).
func Default() Message {
	return Message{SendSize: DefaultSize, RecvSize: DefaultSize}
}

// Normalize returns m with its sizes made representable on the wire
// (RFC 8797 §4.2) and reports what had to change. A size that is not a
// multiple of 1024 is rounded down, which is always safe: advertising less
// than one can handle never causes a failed Send or Receive. A size above
// [MaxSize] is lowered to it, which is equally safe. A size below [MinSize]
// (zero and negative sizes included) is raised to it, because no smaller
// value can be encoded; that is NOT safe for a receive size, since it claims
// buffers the caller does not have, and callers should treat
// [RecvRaisedToMin] as a configuration error (RFC 8166 §3.3.3 requires
// Receive buffers of at least 1024 bytes).
func (m Message) Normalize() (Message, Adjustment) {
	var adj, a Adjustment
	m.SendSize, a = normalizeSize(m.SendSize)
	adj |= a
	m.RecvSize, a = normalizeSize(m.RecvSize)
	adj |= a << recvShift
	return m, adj
}

// normalizeSize returns size as it can be represented in a size field and
// the send-side Adjustment bits describing the change.
func normalizeSize(size int) (int, Adjustment) {
	switch {
	case size < MinSize:
		return MinSize, SendRaisedToMin
	case size > MaxSize:
		return MaxSize, SendLoweredToMax
	case size%sizeUnit != 0:
		return size - size%sizeUnit, SendRoundedDown
	}
	return size, 0
}

// encodeSize returns the size field for size: bytes/1024 - 1 (RFC 8797
// §4.2), after normalizing size as Normalize does.
func encodeSize(size int) byte {
	n, _ := normalizeSize(size)
	return byte(n/sizeUnit - 1)
}

// decodeSize returns the size in bytes that a size field stands for: the
// field plus one, times 1024 (RFC 8797 §4.2).
func decodeSize(code byte) int {
	return (int(code) + 1) * sizeUnit
}

// Append appends the 8-byte wire form of m to b and returns the extended
// slice (RFC 8797 §4). Sizes are encoded as [Message.Normalize] would adjust
// them; call Normalize first to learn whether they were. The reserved flag
// bits are zero ("Senders MUST set these bits to zero"). Append does not
// allocate when b has room for [Len] more bytes.
//
// Send the result at offset 0 of the CM private data: Linux looks for the
// format identifier only there.
func (m Message) Append(b []byte) []byte {
	var flags byte
	if m.RemoteInvalidate {
		flags |= flagRemoteInvalidate
	}
	return append(b,
		formatID[0], formatID[1], formatID[2], formatID[3],
		Version, flags, encodeSize(m.SendSize), encodeSize(m.RecvSize))
}

// decodeMessage decodes a version 1 message from the first Len bytes of b,
// which the caller has checked (RFC 8797 §4). Reserved bits are ignored:
// "receivers MUST ignore their value".
func decodeMessage(b []byte) Message {
	_ = b[Len-1]
	return Message{
		RemoteInvalidate: b[5]&flagRemoteInvalidate != 0,
		SendSize:         decodeSize(b[6]),
		RecvSize:         decodeSize(b[7]),
	}
}

// String returns m in the form "R=1 send=4096 recv=4096", for logs.
func (m Message) String() string {
	b := make([]byte, 0, 40)
	b = append(b, "R="...)
	if m.RemoteInvalidate {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	b = append(b, " send="...)
	b = strconv.AppendInt(b, int64(m.SendSize), 10)
	b = append(b, " recv="...)
	b = strconv.AppendInt(b, int64(m.RecvSize), 10)
	return string(b)
}
