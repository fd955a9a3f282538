package xdr

import (
	"encoding/binary"
	"errors"
)

// Errors returned by Reader. They are sentinel values so that decoding never
// allocates; wrap them with context at a layer that can afford it.
var (
	// ErrShortBuffer means the input ended before the item being decoded.
	ErrShortBuffer = errors.New("xdr: short buffer")
	// ErrTooLong means a variable-length item declared a length above the
	// caller's maximum (RFC 4506 §4.10, §4.11 "maximum length").
	ErrTooLong = errors.New("xdr: length exceeds maximum")
	// ErrBadBool means a boolean was neither 0 nor 1 (RFC 4506 §4.4).
	ErrBadBool = errors.New("xdr: boolean is neither 0 nor 1")
)

// Reader is a decoding cursor over an XDR byte stream (RFC 4506). Its zero
// value reads from an empty buffer; NewReader or Reset point it at data.
// A Reader never panics on any input and never allocates: variable-length
// items are returned as sub-slices of the buffer. After an error the cursor
// does not move.
type Reader struct {
	buf []byte
	off int
}

// NewReader returns a Reader positioned at the start of b.
func NewReader(b []byte) Reader { return Reader{buf: b} }

// Reset points r at the start of b.
func (r *Reader) Reset(b []byte) { r.buf, r.off = b, 0 }

// Offset returns the number of bytes consumed so far.
func (r *Reader) Offset() int { return r.off }

// Len returns the number of bytes not yet consumed.
func (r *Reader) Len() int { return len(r.buf) - r.off }

// Rest returns the bytes not yet consumed, without consuming them.
func (r *Reader) Rest() []byte { return r.buf[r.off:] }

// Uint32 decodes an unsigned integer (RFC 4506 §4.2).
func (r *Reader) Uint32() (uint32, error) {
	if r.Len() < 4 {
		return 0, ErrShortBuffer
	}
	v := binary.BigEndian.Uint32(r.buf[r.off:])
	r.off += 4
	return v, nil
}

// Int32 decodes a signed integer (RFC 4506 §4.1).
func (r *Reader) Int32() (int32, error) {
	v, err := r.Uint32()
	return int32(v), err
}

// Uint64 decodes an unsigned hyper integer (RFC 4506 §4.5).
func (r *Reader) Uint64() (uint64, error) {
	if r.Len() < 8 {
		return 0, ErrShortBuffer
	}
	v := binary.BigEndian.Uint64(r.buf[r.off:])
	r.off += 8
	return v, nil
}

// Int64 decodes a hyper integer (RFC 4506 §4.5).
func (r *Reader) Int64() (int64, error) {
	v, err := r.Uint64()
	return int64(v), err
}

// Bool decodes a boolean (RFC 4506 §4.4). Values other than 0 and 1 are
// rejected with ErrBadBool.
func (r *Reader) Bool() (bool, error) {
	if r.Len() < 4 {
		return false, ErrShortBuffer
	}
	switch binary.BigEndian.Uint32(r.buf[r.off:]) {
	case 0:
		r.off += 4
		return false, nil
	case 1:
		r.off += 4
		return true, nil
	}
	return false, ErrBadBool
}

// FixedOpaque decodes n bytes of fixed-length opaque data and skips its
// padding (RFC 4506 §4.9). The result aliases the buffer. Padding bytes are
// not checked for zero, as RFC 4506 asks of receivers only that they skip
// them.
func (r *Reader) FixedOpaque(n int) ([]byte, error) {
	if n < 0 {
		return nil, ErrTooLong
	}
	total := RoundUp(n)
	if total < n || r.Len() < total {
		return nil, ErrShortBuffer
	}
	p := r.buf[r.off : r.off+n : r.off+n]
	r.off += total
	return p, nil
}

// Opaque decodes variable-length opaque data (RFC 4506 §4.10) whose length
// may not exceed max; a negative max admits no length at all. The declared
// length is checked against max and against the bytes present before
// anything is consumed, so a hostile length never causes an allocation or a
// large read. The result aliases the buffer.
func (r *Reader) Opaque(max int) ([]byte, error) {
	if r.Len() < 4 {
		return nil, ErrShortBuffer
	}
	n := binary.BigEndian.Uint32(r.buf[r.off:])
	// Compare as int64: a negative max admits nothing (converting it to
	// uint64 would have admitted every length).
	if int64(n) > int64(max) {
		return nil, ErrTooLong
	}
	if uint64(RoundUp(int(n))) > uint64(r.Len()-4) {
		return nil, ErrShortBuffer
	}
	r.off += 4
	p := r.buf[r.off : r.off+int(n) : r.off+int(n)]
	r.off += RoundUp(int(n))
	return p, nil
}

// String decodes a string (RFC 4506 §4.11) of at most max bytes, as a
// sub-slice of the buffer; convert it with string(...) only if it must
// outlive the buffer.
func (r *Reader) String(max int) ([]byte, error) { return r.Opaque(max) }

// Skip consumes n bytes without decoding them.
func (r *Reader) Skip(n int) error {
	if n < 0 || r.Len() < n {
		return ErrShortBuffer
	}
	r.off += n
	return nil
}
