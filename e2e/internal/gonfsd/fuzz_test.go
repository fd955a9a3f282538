package gonfsd_test

import (
	"slices"
	"testing"
)

// FuzzCallScanner: any byte stream, scanned at once or in pieces of any
// size, gives the calls and counts of the plain reference scanner.
func FuzzCallScanner(f *testing.F) {
	var stream []byte
	for i := range 4 {
		stream = appendCallRecord(stream, uint32(i), 1+i*7)
	}
	f.Add(stream, uint8(0))
	f.Add(stream, uint8(6))
	f.Add(stream[:len(stream)-9], uint8(2))
	f.Add([]byte{0x80, 0, 0, 0, 0x80, 0, 0, 3, 1, 2, 3}, uint8(1))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0}, uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, piece uint8) {
		all, s1 := scanAll(stream, nil)
		pieces, s2 := scanAll(stream, []int{int(piece) + 1})
		ref, other := scanReference(stream)
		if !slices.Equal(all, ref) || !slices.Equal(pieces, ref) {
			t.Fatalf("calls: at once %v, in pieces of %d %v, reference %v", all, int(piece)+1, pieces, ref)
		}
		if s1.Other != other || s2.Other != other || s1.Calls != uint64(len(ref)) || s2.Calls != uint64(len(ref)) {
			t.Fatalf("counts: %d/%d and %d/%d, reference %d/%d", s1.Calls, s1.Other, s2.Calls, s2.Other, len(ref), other)
		}
	})
}
