package xdr

// Padding returns the number of zero bytes that follow n bytes of opaque data
// or string to reach a multiple of four bytes (RFC 4506 §4.10, §4.11).
func Padding(n int) int { return (4 - n&3) & 3 }

// RoundUp returns n rounded up to the next multiple of four, the number of
// bytes that n bytes of opaque data occupy on the wire (RFC 4506 §3).
func RoundUp(n int) int { return (n + 3) &^ 3 }

// AppendUint32 appends an unsigned integer (RFC 4506 §4.2), big-endian.
func AppendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// AppendInt32 appends a signed integer (RFC 4506 §4.1) in two's complement.
func AppendInt32(b []byte, v int32) []byte { return AppendUint32(b, uint32(v)) }

// AppendUint64 appends an unsigned hyper integer (RFC 4506 §4.5).
func AppendUint64(b []byte, v uint64) []byte {
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32),
		byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// AppendInt64 appends a hyper integer (RFC 4506 §4.5) in two's complement.
func AppendInt64(b []byte, v int64) []byte { return AppendUint64(b, uint64(v)) }

// AppendBool appends a boolean (RFC 4506 §4.4): 1 for true, 0 for false.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return AppendUint32(b, 1)
	}
	return AppendUint32(b, 0)
}

// AppendFixedOpaque appends fixed-length opaque data (RFC 4506 §4.9): the
// bytes of p followed by zero padding to a multiple of four. No length is
// written; the receiver must know it.
func AppendFixedOpaque(b, p []byte) []byte {
	b = append(b, p...)
	return appendPad(b, len(p))
}

// AppendOpaque appends variable-length opaque data (RFC 4506 §4.10): a
// four-byte length, the bytes of p, and zero padding to a multiple of four.
func AppendOpaque(b, p []byte) []byte {
	b = AppendUint32(b, uint32(len(p)))
	return AppendFixedOpaque(b, p)
}

// AppendString appends a string (RFC 4506 §4.11), encoded as variable-length
// opaque data.
func AppendString(b []byte, s string) []byte {
	b = AppendUint32(b, uint32(len(s)))
	b = append(b, s...)
	return appendPad(b, len(s))
}

func appendPad(b []byte, n int) []byte {
	switch Padding(n) {
	case 1:
		b = append(b, 0)
	case 2:
		b = append(b, 0, 0)
	case 3:
		b = append(b, 0, 0, 0)
	}
	return b
}
