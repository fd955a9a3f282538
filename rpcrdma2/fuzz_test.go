package rpcrdma2

import (
	"bytes"
	"testing"
)

// dirty returns a Header that has parsed a header with chunks and one with
// properties, to check that a parse does not depend on what it held.
func dirty(t *testing.T) *Header {
	var h Header
	for _, g := range goldens {
		if _, err := h.Unmarshal(g.wire, nil); err != nil {
			t.Fatal(err)
		}
	}
	return &h
}

// FuzzUnmarshal: Unmarshal never panics; it fails with a *ProtocolError,
// hdrLen 0 and no body, or succeeds, and then Len agrees with Append, the
// encoding parses back equal, and it is the bytes consumed up to the
// padding of property data (which Append writes as zeros). A Header that
// held other headers parses the same.
func FuzzUnmarshal(f *testing.F) {
	for _, g := range goldens {
		f.Add(g.wire)
	}
	for _, c := range hostile {
		f.Add(c.wire)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		n, err := h.Unmarshal(b, nil)
		d := dirty(t)
		dn, derr := d.Unmarshal(b, nil)
		if derr != err || dn != n || (err == nil && !equal(d, &h)) {
			t.Fatalf("a reused Header parses differently: %v/%d against %v/%d", derr, dn, err, n)
		}
		if err != nil {
			if _, ok := err.(*ProtocolError); !ok || n != 0 {
				t.Fatalf("error %T %v, hdrLen %d", err, err, n)
			}
			if h.InvHandle != 0 || len(h.Props) != 0 || h.Error != (Error{}) || len(h.Chunks.ReadList) != 0 {
				t.Fatalf("a failed parse left a body: %+v", h)
			}
			return
		}
		enc := h.Append(nil)
		if len(enc) != h.Len() || len(enc) != n {
			t.Fatalf("Append wrote %d bytes, Len says %d, the parse consumed %d", len(enc), h.Len(), n)
		}
		if len(h.Props) == 0 && !bytes.Equal(enc, b[:n]) {
			t.Fatalf("Append:\n%x\nconsumed:\n%x", enc, b[:n])
		}
		var back Header
		if m, err := back.Unmarshal(enc, nil); err != nil || m != n || !equal(&back, &h) {
			t.Fatalf("the encoding parses back as %+v (%d, %v), want %+v", back, m, err, h)
		}
	})
}
