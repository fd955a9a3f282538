package soft

import (
	"encoding/binary"
	"errors"
)

// frameType is the first byte of every frame of the data phase.
type frameType uint8

// Frame types. Requests (Send, Write, Read Request) carry a sequence number
// that the responder checks against the one it expects, like an IB PSN;
// Ack, Nak and Read Response answer them.
const (
	frameSend frameType = iota + 1
	frameWrite
	frameReadRequest
	frameReadResponse
	frameAck
	frameNak
	frameDisconnect
)

// headerLen is the length of a frame header:
//
//	0 type | 1 nak code | 2 flags | 3 zero | 4..7 seq | 8..11 rkey |
//	12..15 length | 16..23 addr              (all big-endian)
//
// Send, Write and Read Response frames are followed by Length payload bytes
// and a one-byte trailer (trailerOK or trailerAborted).
const headerLen = 24

// flagInvalidate marks a Send With Invalidate; RKey is the rkey to
// invalidate at the responder.
const flagInvalidate = 0x01

// Trailer values that end every payload. A sender whose local memory went
// away while it was streaming the payload (the region was closed) ends the
// frame with trailerAborted: the receiver drops the message, as a real
// responder never completes a message whose last packet never came.
const (
	trailerOK      = 0
	trailerAborted = 1
)

// nakCode says why a responder refused a request; the names follow the IB
// AETH NAK codes (IBA 9.7.5.2.8) and map onto the requester's status.
type nakCode uint8

const (
	nakRNR             nakCode = iota + 1 // receiver not ready: no Receive posted
	nakRemoteAccess                       // rkey, bounds or rights violation
	nakInvalidRequest                     // e.g. a Send longer than the Receive
	nakRemoteOperation                    // the responder's Receive was unusable
)

// MaxMessageSize is the largest message (Send, or data of one RDMA Read or
// Write) the software provider moves: 8 MiB, the max_msg_sz rxe reports
// (RXE_PORT_MAX_MSG_SZ).
const MaxMessageSize = 8 << 20

// frameHeader is a decoded frame header. Fields a type does not use are
// zero on the wire.
type frameHeader struct {
	Type   frameType
	Code   nakCode
	Flags  uint8
	Seq    uint32
	RKey   uint32
	Length uint32
	Addr   uint64
}

// Errors of parseHeader. Every one of them kills the connection: the byte
// stream can no longer be trusted.
var (
	errShortHeader   = errors.New("soft: short frame header")
	errFrameType     = errors.New("soft: unknown frame type")
	errFrameReserved = errors.New("soft: nonzero reserved or unused frame field")
	errFrameLength   = errors.New("soft: frame length over MaxMessageSize")
	errNakCode       = errors.New("soft: unknown NAK code")
)

// hasPayload reports whether frames of type t carry Length payload bytes
// and a trailer.
func (t frameType) hasPayload() bool {
	return t == frameSend || t == frameWrite || t == frameReadResponse
}

// put encodes h into b, which must hold headerLen bytes.
func (h *frameHeader) put(b []byte) {
	_ = b[headerLen-1]
	b[0] = byte(h.Type)
	b[1] = byte(h.Code)
	b[2] = h.Flags
	b[3] = 0
	binary.BigEndian.PutUint32(b[4:], h.Seq)
	binary.BigEndian.PutUint32(b[8:], h.RKey)
	binary.BigEndian.PutUint32(b[12:], h.Length)
	binary.BigEndian.PutUint64(b[16:], h.Addr)
}

// appendHeader appends the encoding of h to dst.
func appendHeader(dst []byte, h *frameHeader) []byte {
	var b [headerLen]byte
	h.put(b[:])
	return append(dst, b[:]...)
}

// parseHeader decodes and validates a frame header from the first headerLen
// bytes of b. It checks the length against MaxMessageSize before anything
// is read or allocated for the payload, and rejects any field a frame type
// does not use, so that every accepted header has exactly one encoding.
func parseHeader(b []byte) (frameHeader, error) {
	if len(b) < headerLen {
		return frameHeader{}, errShortHeader
	}
	h := frameHeader{
		Type:   frameType(b[0]),
		Code:   nakCode(b[1]),
		Flags:  b[2],
		Seq:    binary.BigEndian.Uint32(b[4:]),
		RKey:   binary.BigEndian.Uint32(b[8:]),
		Length: binary.BigEndian.Uint32(b[12:]),
		Addr:   binary.BigEndian.Uint64(b[16:]),
	}
	if b[3] != 0 {
		return frameHeader{}, errFrameReserved
	}
	if h.Length > MaxMessageSize {
		return frameHeader{}, errFrameLength
	}
	ok := true
	switch h.Type {
	case frameSend:
		ok = h.Code == 0 && h.Flags&^flagInvalidate == 0 && h.Addr == 0 &&
			(h.Flags&flagInvalidate != 0 || h.RKey == 0)
	case frameWrite, frameReadRequest:
		ok = h.Code == 0 && h.Flags == 0
	case frameReadResponse:
		ok = h.Code == 0 && h.Flags == 0 && h.RKey == 0 && h.Addr == 0
	case frameAck:
		ok = h.Code == 0 && h.Flags == 0 && h.RKey == 0 && h.Length == 0 && h.Addr == 0
	case frameNak:
		if h.Code < nakRNR || h.Code > nakRemoteOperation {
			return frameHeader{}, errNakCode
		}
		ok = h.Flags == 0 && h.RKey == 0 && h.Length == 0 && h.Addr == 0
	case frameDisconnect:
		ok = h.Code == 0 && h.Flags == 0 && h.Seq == 0 && h.RKey == 0 && h.Length == 0 && h.Addr == 0
	default:
		return frameHeader{}, errFrameType
	}
	if !ok {
		return frameHeader{}, errFrameReserved
	}
	return h, nil
}
