package cmpriv

import (
	"bytes"
	"strconv"
)

// formatID is FormatID in network byte order (RFC 8797 §4), the word Parse
// searches for.
var formatID = [4]byte{0xf6, 0xab, 0x0e, 0x18}

// Status says what [Parse] found in the received private data. Every status
// but StatusFound means the peer is treated as having sent [Default]
// (RFC 8797 §5.1); the distinction exists to be logged and counted.
type Status uint8

// The Status values. The zero value is StatusEmpty, so that a zero Settings
// does not claim a message was received.
const (
	// StatusEmpty: the peer sent no private data. The buffer is empty or
	// holds only zero bytes, which is what an InfiniBand CM delivers (56
	// bytes on connect, 196 on accept) when the peer sent nothing.
	StatusEmpty Status = iota

	// StatusNotFound: there is private data but the format identifier is
	// not in it: the peer does not implement RFC 8797 or uses private data
	// for something else. RFC 8797 §5.2: the receiver "MUST behave as if no
	// RPC-over-RDMA version 1 CM Private Data has been provided".
	StatusNotFound

	// StatusBadVersion: the first occurrence of the format identifier is
	// followed by a version other than 1, and no later occurrence is a
	// valid version 1 message. RFC 8797 §5.2 asks the receiver to check
	// "that the format version number field contains a valid and
	// recognized version number"; an unrecognised version is treated as
	// absent (§5.1).
	StatusBadVersion

	// StatusTruncated: the first occurrence of the format identifier is too
	// close to the end of the buffer for a whole message (so no later one
	// can be whole either). RFC 8797 §5.2 asks the receiver to check that
	// "the size of the content does not overrun the length of the buffer".
	StatusTruncated

	// StatusFound: a valid version 1 message was found.
	StatusFound
)

var statusNames = [...]string{
	StatusEmpty:      "empty",
	StatusNotFound:   "not-found",
	StatusBadVersion: "bad-version",
	StatusTruncated:  "truncated",
	StatusFound:      "found",
}

// String returns a short lower-case name for s, usable as a metric label.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Parse finds and decodes the RPC-over-RDMA version 1 message in buf, the
// private data delivered by the CM with a connect request or an accept
// (RFC 8797 §5.2). It searches buf for the format identifier at every byte
// offset, since its offset "is not restricted to any alignment", and accepts
// the first occurrence whose version is 1 and whose 8 bytes lie inside buf.
// Reserved flag bits are ignored (§4).
//
// When no occurrence is acceptable, Parse returns [Default] (R clear, both
// sizes 1024), as RFC 8797 §5.1 requires, with a Status saying why: the
// status of the first occurrence of the identifier, or StatusNotFound, or
// StatusEmpty for an empty or all-zero buffer.
//
// Parse never panics, never reads outside buf and never allocates. The
// returned Message does not refer to buf.
func Parse(buf []byte) (Message, Status) {
	m, _, st := parse(buf)
	return m, st
}

// parse is Parse that also returns the offset of the message it decoded, or
// -1 when it decoded none.
func parse(buf []byte) (m Message, offset int, st Status) {
	st = StatusNotFound
	seen := false
	for base := 0; base <= len(buf)-len(formatID); {
		i := bytes.Index(buf[base:], formatID[:])
		if i < 0 {
			break
		}
		off := base + i
		var s Status
		switch {
		case len(buf)-off < Len:
			// RFC 8797 §5.2: the content must not overrun the buffer.
			s = StatusTruncated
		case buf[off+4] != Version:
			// RFC 8797 §5.2: a valid and recognized version number.
			s = StatusBadVersion
		default:
			return decodeMessage(buf[off : off+Len]), off, StatusFound
		}
		if !seen {
			st, seen = s, true
		}
		if s == StatusTruncated {
			break // every later occurrence would be truncated too
		}
		base = off + 1
	}
	if !seen && allZero(buf) {
		st = StatusEmpty
	}
	return Default(), -1, st
}

// allZero reports whether every byte of b is zero (true for an empty b).
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
