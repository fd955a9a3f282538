package xdr

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// ReadRecord reads one record-marked record (RFC 5531 §11) from r, the
// pull-side counterpart of Deframer for code that owns a blocking stream.
// The record's fragments are concatenated, without their headers, into
// buf[:0] (reusing its capacity) and the result is returned.
//
// A record larger than max bytes (DefaultMaxRecord if max is zero or
// negative) fails with an error wrapping ErrRecordTooLarge as soon as the
// offending fragment header is read, before its data. Memory grows with the
// bytes actually read, never with what a header claims, so a hostile
// header cannot make ReadRecord allocate 2 GiB.
//
// ReadRecord returns io.EOF if r ends before the first byte of a record and
// io.ErrUnexpectedEOF if it ends inside one. On error the returned slice
// holds the data read so far, so it can be passed back as buf.
func ReadRecord(r io.Reader, buf []byte, max int) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxRecord
	}
	// Capacity never exceeds the record limit plus room for one header.
	upper := max
	if max <= math.MaxInt-4 {
		upper = max + 4
	}
	rec := buf[:0]
	for first := true; ; first = false {
		// The header is read into the spare capacity of rec, where the
		// fragment data will go, so that it needs no allocation of its own.
		if cap(rec)-len(rec) < 4 {
			rec = growRecord(rec, 4, upper)
		}
		h := rec[len(rec) : len(rec)+4]
		if _, err := io.ReadFull(r, h); err != nil {
			if err == io.EOF && !first {
				err = io.ErrUnexpectedEOF
			}
			return rec, err
		}
		v := binary.BigEndian.Uint32(h)
		size := int(v &^ LastFragment)
		if size > max-len(rec) {
			return rec, fmt.Errorf("%w: fragment of %d bytes after %d bytes of the record, limit %d",
				ErrRecordTooLarge, size, len(rec), max)
		}
		for size > 0 {
			if len(rec) == cap(rec) {
				rec = growRecord(rec, min(size, 64<<10), upper)
			}
			k := min(size, cap(rec)-len(rec))
			n, err := io.ReadFull(r, rec[len(rec):len(rec)+k])
			rec = rec[:len(rec)+n]
			if err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return rec, err
			}
			size -= k
		}
		if v&LastFragment != 0 {
			return rec, nil
		}
	}
}

// growRecord returns b with room for at least k more bytes, growing
// geometrically but to no more than upper bytes of capacity.
func growRecord(b []byte, k, upper int) []byte {
	c := min(max(2*cap(b), len(b)+k, 512), max(upper, len(b)+k))
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}
