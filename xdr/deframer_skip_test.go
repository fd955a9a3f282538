package xdr

import (
	"bytes"
	"testing"
)

// TestDeframerSkipOversized: with SkipOversized, an oversized record in the
// middle of the stream is discarded and reported, the records around it come
// through, and the buffer never holds more than the limit, for every split.
func TestDeframerSkipOversized(t *testing.T) {
	big := bytes.Repeat([]byte{0xab}, 5000)
	copy(big, []byte{0xde, 0xad, 0xbe, 0xef})
	var stream []byte
	stream = AppendRecord(stream, []byte("before"), 0)
	stream = AppendRecord(stream, big, 700) // several fragments; the second crosses the limit
	stream = AppendRecord(stream, []byte("after!"), 3)
	stream = AppendRecord(stream, big[:3], 0) // oversized? no: 3 bytes
	for _, split := range []int{1, 2, 3, 5, 7, 100, 4096, len(stream)} {
		d := Deframer{MaxRecord: 1024, SkipOversized: true}
		var got [][]byte
		var skipped []Skipped
		for off := 0; off < len(stream); off += split {
			end := min(off+split, len(stream))
			if _, err := d.Write(stream[off:end]); err != nil {
				t.Fatalf("split %d: %v", split, err)
			}
			if d.Buffered() > 1024+64 {
				t.Fatalf("split %d: buffered %d bytes past the limit", split, d.Buffered())
			}
			for rec, ok := d.Next(); ok; rec, ok = d.Next() {
				got = append(got, bytes.Clone(rec))
			}
			for s, ok := d.NextSkipped(); ok; s, ok = d.NextSkipped() {
				skipped = append(skipped, s)
			}
		}
		if len(got) != 3 || string(got[0]) != "before" || string(got[1]) != "after!" || !bytes.Equal(got[2], big[:3]) {
			t.Fatalf("split %d: records %q", split, got)
		}
		if len(skipped) != 1 || skipped[0].HeadN != 4 || skipped[0].Head != [4]byte{0xde, 0xad, 0xbe, 0xef} || skipped[0].Len != 5000 {
			t.Fatalf("split %d: skipped %+v", split, skipped)
		}
		if d.Partial() {
			t.Fatalf("split %d: stream ends mid-record", split)
		}
	}
}

// TestDeframerSkipHuge: a header claiming 2 GiB is skipped without
// buffering; the stream continues after the bytes actually sent.
func TestDeframerSkipHuge(t *testing.T) {
	d := Deframer{MaxRecord: 1024, SkipOversized: true}
	hdr := AppendFragmentHeader(nil, 1<<31-1, true)
	if _, err := d.Write(append(hdr, 1, 2, 3, 4, 5)); err != nil {
		t.Fatal(err)
	}
	if d.Buffered() != 0 || !d.Partial() {
		t.Fatalf("buffered %d, partial %v", d.Buffered(), d.Partial())
	}
	if _, ok := d.NextSkipped(); ok {
		t.Fatal("a record not yet ended was reported")
	}
}
