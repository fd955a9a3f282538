package nfs3

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestEqual checks the comparison the other tests rely on.
func TestEqual(t *testing.T) {
	a := &ReaddirRes{Entries: []Entry{{Name: "a"}}}
	if !equal(a, &ReaddirRes{Entries: []Entry{{Name: "a"}}}) {
		t.Error("equal values compare unequal")
	}
	if !equal(&ReaddirRes{}, &ReaddirRes{Entries: []Entry{}}) {
		t.Error("nil and empty lists compare unequal")
	}
	for _, b := range []*ReaddirRes{
		{Entries: []Entry{{Name: "b"}}},
		{Entries: []Entry{{Name: "a"}, {}}},
		{Entries: []Entry{{Name: "a"}}, EOF: true},
		{Entries: []Entry{{Name: "a"}}, Verf: [8]byte{1}},
	} {
		if equal(a, b) {
			t.Errorf("%+v and %+v compare equal", a, b)
		}
	}
}

// TestRoundTrip encodes every sample, decodes it, and checks that the
// value, the bytes consumed and the encoding of the decoded value are the
// same; also that Append appends to what b already holds.
func TestRoundTrip(t *testing.T) {
	for _, s := range samples() {
		t.Run(s.name, func(t *testing.T) {
			b := s.v.Append(nil)
			if len(b)%4 != 0 {
				t.Fatalf("encoding of %d bytes, not a multiple of 4", len(b))
			}
			r := xdr.NewReader(b)
			got := fresh(s.v)
			if err := got.Decode(&r); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if r.Offset() != len(b) {
				t.Fatalf("Decode consumed %d of %d bytes", r.Offset(), len(b))
			}
			if !equal(got, s.v) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", got, s.v)
			}
			if b2 := got.Append(nil); !bytes.Equal(b2, b) {
				t.Fatalf("re-encoded\n%x\nwant\n%x", b2, b)
			}
			prefix := []byte{0xde, 0xad}
			if b3 := s.v.Append(prefix); !bytes.Equal(b3[:2], prefix) || !bytes.Equal(b3[2:], b) {
				t.Fatalf("Append after a prefix: %x", b3)
			}
		})
	}
}

// TestDecodeOverwrites decodes each sample into a value that already holds
// another sample of its type and checks that nothing of the old one
// remains.
func TestDecodeOverwrites(t *testing.T) {
	all := samples()
	for i, s := range all {
		for _, old := range all[i+1:] {
			if reflect.TypeOf(old.v) != reflect.TypeOf(s.v) {
				continue
			}
			x := fresh(s.v)
			r := xdr.NewReader(old.v.Append(nil))
			if err := x.Decode(&r); err != nil {
				t.Fatalf("%s: %v", old.name, err)
			}
			r = xdr.NewReader(s.v.Append(nil))
			if err := x.Decode(&r); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if !equal(x, s.v) {
				t.Errorf("%s decoded over %s: %+v", s.name, old.name, x)
			}
		}
	}
}

// TestTruncatedPrefixes decodes every strict prefix of every sample's
// encoding: each must fail, with xdr.ErrShortBuffer or, where a length word
// is cut short or data is bounded by what remains, xdr.ErrTooLong.
func TestTruncatedPrefixes(t *testing.T) {
	for _, s := range samples() {
		b := s.v.Append(nil)
		for i := range len(b) {
			r := xdr.NewReader(b[:i])
			err := fresh(s.v).Decode(&r)
			if err == nil {
				t.Errorf("%s: prefix of %d of %d bytes decoded", s.name, i, len(b))
				continue
			}
			if err != xdr.ErrShortBuffer && err != xdr.ErrTooLong {
				t.Errorf("%s: prefix of %d bytes: %v", s.name, i, err)
			}
		}
		r := xdr.NewReader(b)
		if err := fresh(s.v).Decode(&r); err != nil || r.Offset() != len(b) {
			t.Errorf("%s: whole: %v, consumed %d of %d", s.name, err, r.Offset(), len(b))
		}
	}
}
