package cmpriv

import (
	"strconv"
	"strings"
)

// Adjustment is a set of bits reporting how [Message.Normalize] changed the
// sizes of a Message to make them representable (RFC 8797 §4.2). The zero
// value means nothing changed. At most one Send bit and one Recv bit are set.
type Adjustment uint8

// The Adjustment bits.
const (
	// SendRoundedDown: SendSize was not a multiple of 1024 and was rounded
	// down to one.
	SendRoundedDown Adjustment = 1 << iota
	// SendRaisedToMin: SendSize was below MinSize and was raised to it.
	SendRaisedToMin
	// SendLoweredToMax: SendSize was above MaxSize and was lowered to it.
	SendLoweredToMax
	// RecvRoundedDown: RecvSize was not a multiple of 1024 and was rounded
	// down to one.
	RecvRoundedDown
	// RecvRaisedToMin: RecvSize was below MinSize and was raised to it. The
	// advertised receive size now exceeds the caller's buffers: treat this
	// as a configuration error (RFC 8166 §3.3.3).
	RecvRaisedToMin
	// RecvLoweredToMax: RecvSize was above MaxSize and was lowered to it.
	RecvLoweredToMax
)

// recvShift moves a Send bit to the matching Recv bit.
const recvShift = 3

var adjustmentNames = [...]string{
	"send-rounded-down", "send-raised-to-min", "send-lowered-to-max",
	"recv-rounded-down", "recv-raised-to-min", "recv-lowered-to-max",
}

// String returns the names of the bits in a, joined by "|", or "none".
func (a Adjustment) String() string {
	if a == 0 {
		return "none"
	}
	var parts []string
	for i, name := range adjustmentNames {
		if a&(1<<i) != 0 {
			parts = append(parts, name)
		}
	}
	if rest := a &^ (1<<len(adjustmentNames) - 1); rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}
