package xdr

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestReaderScalars(t *testing.T) {
	var b []byte
	b = AppendUint32(b, 0xfeedface)
	b = AppendInt32(b, -7)
	b = AppendUint64(b, math.MaxUint64-1)
	b = AppendInt64(b, math.MinInt64)
	b = AppendBool(b, true)
	b = AppendBool(b, false)
	r := NewReader(b)
	if v, err := r.Uint32(); err != nil || v != 0xfeedface {
		t.Fatalf("Uint32 = %#x, %v", v, err)
	}
	if v, err := r.Int32(); err != nil || v != -7 {
		t.Fatalf("Int32 = %d, %v", v, err)
	}
	if v, err := r.Uint64(); err != nil || v != math.MaxUint64-1 {
		t.Fatalf("Uint64 = %d, %v", v, err)
	}
	if v, err := r.Int64(); err != nil || v != math.MinInt64 {
		t.Fatalf("Int64 = %d, %v", v, err)
	}
	if v, err := r.Bool(); err != nil || !v {
		t.Fatalf("Bool = %v, %v", v, err)
	}
	if v, err := r.Bool(); err != nil || v {
		t.Fatalf("Bool = %v, %v", v, err)
	}
	if r.Len() != 0 || r.Offset() != len(b) || len(r.Rest()) != 0 {
		t.Fatalf("Len %d Offset %d Rest %d after reading all", r.Len(), r.Offset(), len(r.Rest()))
	}
	if _, err := r.Uint32(); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("Uint32 at end: %v", err)
	}
}

// TestReaderShortDoesNotMove checks every decoder on every too-short input:
// ErrShortBuffer and an unmoved cursor.
func TestReaderShortDoesNotMove(t *testing.T) {
	type op struct {
		name string
		need int
		do   func(r *Reader) error
	}
	ops := []op{
		{"Uint32", 4, func(r *Reader) error { _, err := r.Uint32(); return err }},
		{"Int32", 4, func(r *Reader) error { _, err := r.Int32(); return err }},
		{"Uint64", 8, func(r *Reader) error { _, err := r.Uint64(); return err }},
		{"Int64", 8, func(r *Reader) error { _, err := r.Int64(); return err }},
		{"Bool", 4, func(r *Reader) error { _, err := r.Bool(); return err }},
		{"FixedOpaque(5)", 8, func(r *Reader) error { _, err := r.FixedOpaque(5); return err }},
		{"Skip(6)", 6, func(r *Reader) error { return r.Skip(6) }},
		{"Opaque", 12, func(r *Reader) error { _, err := r.Opaque(100); return err }},
		{"String", 12, func(r *Reader) error { _, err := r.String(100); return err }},
	}
	full := AppendOpaque(nil, []byte("hello")) // 12 bytes, a prefix of which feeds each op
	for _, o := range ops {
		for n := 0; n < o.need; n++ {
			buf := make([]byte, n+2)
			copy(buf[2:], full[:n])
			r := NewReader(buf)
			_ = r.Skip(2)
			err := o.do(&r)
			if !errors.Is(err, ErrShortBuffer) {
				t.Errorf("%s on %d bytes: err = %v, want ErrShortBuffer", o.name, n, err)
			}
			if r.Offset() != 2 {
				t.Errorf("%s on %d bytes: cursor moved to %d", o.name, n, r.Offset())
			}
		}
	}
}

func TestReaderBool(t *testing.T) {
	for _, v := range []uint32{2, 0xffffffff, 0x100} {
		r := NewReader(AppendUint32(nil, v))
		if _, err := r.Bool(); !errors.Is(err, ErrBadBool) {
			t.Errorf("Bool(%d): err = %v, want ErrBadBool", v, err)
		}
		if r.Offset() != 0 {
			t.Errorf("Bool(%d): cursor moved", v)
		}
	}
}

func TestReaderOpaque(t *testing.T) {
	payload := []byte{1, 2, 3, 4, 5, 6, 7}
	b := AppendOpaque(nil, payload)
	b = AppendUint32(b, 0xcafe)

	r := NewReader(b)
	p, err := r.Opaque(7)
	if err != nil || !bytes.Equal(p, payload) {
		t.Fatalf("Opaque = %x, %v", p, err)
	}
	if cap(p) != len(p) {
		t.Errorf("Opaque result capacity %d not clipped to %d", cap(p), len(p))
	}
	if &p[0] != &b[4] {
		t.Errorf("Opaque result does not alias the buffer")
	}
	if r.Offset() != 12 {
		t.Errorf("Offset after opaque<7> = %d, want 12 (padding skipped)", r.Offset())
	}
	if v, err := r.Uint32(); err != nil || v != 0xcafe {
		t.Errorf("next item = %#x, %v", v, err)
	}

	for _, max := range []int{6, 0, -1, math.MinInt} {
		r := NewReader(b)
		if _, err := r.Opaque(max); !errors.Is(err, ErrTooLong) {
			t.Errorf("Opaque(%d) of 7 bytes: err = %v, want ErrTooLong", max, err)
		}
		if r.Offset() != 0 {
			t.Errorf("Opaque(%d): cursor moved", max)
		}
	}

	// A negative max admits nothing, not even an empty item (taken as
	// uint64(-1), it would admit every length).
	r = NewReader(AppendOpaque(nil, nil))
	if _, err := r.Opaque(-1); !errors.Is(err, ErrTooLong) {
		t.Errorf("Opaque(-1) of empty: err = %v, want ErrTooLong", err)
	}
	r = NewReader(AppendOpaque(nil, nil))
	if p, err := r.Opaque(0); err != nil || len(p) != 0 {
		t.Errorf("Opaque(0) of empty = %x, %v", p, err)
	}

	// Hostile lengths: 2^32-1 and 2^31 with a generous max, few bytes.
	for _, n := range []uint32{math.MaxUint32, 1 << 31, 1<<31 - 1, 9} {
		h := AppendUint32(nil, n)
		h = append(h, 1, 2, 3, 4, 5, 6, 7, 8)
		r := NewReader(h)
		want := ErrShortBuffer
		if uint64(n) > math.MaxInt { // 32-bit int
			want = ErrTooLong
		}
		if _, err := r.Opaque(math.MaxInt); !errors.Is(err, want) {
			t.Errorf("Opaque len %d on 8 bytes: err = %v, want %v", n, err, want)
		}
	}
	// Padding must be present: length 5 with 5 data bytes but no padding.
	r = NewReader([]byte{0, 0, 0, 5, 1, 2, 3, 4, 5})
	if _, err := r.Opaque(10); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("Opaque without its padding: err = %v, want ErrShortBuffer", err)
	}
}

func TestReaderFixedOpaque(t *testing.T) {
	b := AppendFixedOpaque(nil, []byte{9, 8, 7})
	r := NewReader(b)
	p, err := r.FixedOpaque(3)
	if err != nil || !bytes.Equal(p, []byte{9, 8, 7}) || r.Offset() != 4 || cap(p) != 3 {
		t.Fatalf("FixedOpaque(3) = %x (cap %d), %v, offset %d", p, cap(p), err, r.Offset())
	}
	r = NewReader(b)
	if _, err := r.FixedOpaque(-1); !errors.Is(err, ErrTooLong) {
		t.Errorf("FixedOpaque(-1): %v", err)
	}
	for _, n := range []int{math.MaxInt, math.MaxInt - 2, 5} {
		r = NewReader(b)
		if _, err := r.FixedOpaque(n); !errors.Is(err, ErrShortBuffer) {
			t.Errorf("FixedOpaque(%d): %v", n, err)
		}
	}
}

func TestReaderSkipReset(t *testing.T) {
	r := NewReader([]byte{1, 2, 3, 4, 5})
	if err := r.Skip(-1); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("Skip(-1): %v", err)
	}
	if err := r.Skip(2); err != nil || r.Offset() != 2 || !bytes.Equal(r.Rest(), []byte{3, 4, 5}) {
		t.Errorf("Skip(2): %v, offset %d, rest %x", err, r.Offset(), r.Rest())
	}
	if err := r.Skip(4); !errors.Is(err, ErrShortBuffer) || r.Offset() != 2 {
		t.Errorf("Skip past end: %v, offset %d", err, r.Offset())
	}
	r.Reset([]byte{0, 0, 0, 1})
	if v, err := r.Uint32(); err != nil || v != 1 {
		t.Errorf("after Reset: %d, %v", v, err)
	}
	var z Reader
	if z.Len() != 0 || len(z.Rest()) != 0 {
		t.Errorf("zero Reader not empty")
	}
	if _, err := z.Opaque(10); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("zero Reader Opaque: %v", err)
	}
}

// item is one randomly chosen XDR item for the round-trip test.
type item struct {
	kind int
	u64  uint64
	data []byte
}

func randomItems(rng *rand.Rand, n int) []item {
	items := make([]item, n)
	for i := range items {
		it := item{kind: rng.IntN(6), u64: rng.Uint64()}
		if it.kind >= 3 {
			it.data = make([]byte, rng.IntN(20))
			for j := range it.data {
				it.data[j] = byte(rng.Uint32())
			}
		}
		items[i] = it
	}
	return items
}

func appendItems(b []byte, items []item) []byte {
	for _, it := range items {
		switch it.kind {
		case 0:
			b = AppendUint32(b, uint32(it.u64))
		case 1:
			b = AppendUint64(b, it.u64)
		case 2:
			b = AppendBool(b, it.u64&1 == 1)
		case 3:
			b = AppendOpaque(b, it.data)
		case 4:
			b = AppendString(b, string(it.data))
		case 5:
			b = AppendFixedOpaque(b, it.data)
		}
	}
	return b
}

// TestReaderRoundTripRandom encodes random item sequences with the Append
// functions and decodes them with a Reader.
func TestReaderRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 500; iter++ {
		items := randomItems(rng, 1+rng.IntN(10))
		b := appendItems(nil, items)
		if len(b)%4 != 0 {
			t.Fatalf("encoding of %d items is %d bytes, not a multiple of 4", len(items), len(b))
		}
		r := NewReader(b)
		for i, it := range items {
			var ok bool
			switch it.kind {
			case 0:
				v, err := r.Uint32()
				ok = err == nil && v == uint32(it.u64)
			case 1:
				v, err := r.Uint64()
				ok = err == nil && v == it.u64
			case 2:
				v, err := r.Bool()
				ok = err == nil && v == (it.u64&1 == 1)
			case 3:
				v, err := r.Opaque(len(it.data))
				ok = err == nil && bytes.Equal(v, it.data)
			case 4:
				v, err := r.String(255)
				ok = err == nil && string(v) == string(it.data)
			case 5:
				v, err := r.FixedOpaque(len(it.data))
				ok = err == nil && bytes.Equal(v, it.data)
			}
			if !ok {
				t.Fatalf("iter %d item %d (kind %d) did not round-trip", iter, i, it.kind)
			}
		}
		if r.Len() != 0 {
			t.Fatalf("iter %d: %d bytes left", iter, r.Len())
		}
	}
}
