package xdr

import (
	"bytes"
	"encoding/hex"
	"math"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(stripSpace(s))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func stripSpace(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\n', '\t', '\r':
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

func TestPaddingRoundUp(t *testing.T) {
	for n, want := range []int{0, 3, 2, 1, 0, 3, 2, 1, 0} {
		if got := Padding(n); got != want {
			t.Errorf("Padding(%d) = %d, want %d", n, got, want)
		}
		if got := RoundUp(n); got != n+want {
			t.Errorf("RoundUp(%d) = %d, want %d", n, got, n+want)
		}
	}
}

// TestAppendVectors checks the encoders against byte strings written out by
// hand from RFC 4506 §4.
func TestAppendVectors(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"uint32", AppendUint32(nil, 0xdeadbeef), "deadbeef"},
		{"int32 -1", AppendInt32(nil, -1), "ffffffff"},
		{"int32 min", AppendInt32(nil, math.MinInt32), "80000000"},
		{"uint64", AppendUint64(nil, 0x0102030405060708), "0102030405060708"},
		{"int64 -2", AppendInt64(nil, -2), "fffffffffffffffe"},
		{"bool true", AppendBool(nil, true), "00000001"},
		{"bool false", AppendBool(nil, false), "00000000"},
		{"fixed opaque 0", AppendFixedOpaque(nil, nil), ""},
		{"fixed opaque 1", AppendFixedOpaque(nil, []byte{0xaa}), "aa000000"},
		{"fixed opaque 2", AppendFixedOpaque(nil, []byte{0xaa, 0xbb}), "aabb0000"},
		{"fixed opaque 3", AppendFixedOpaque(nil, []byte{1, 2, 3}), "01020300"},
		{"fixed opaque 4", AppendFixedOpaque(nil, []byte{1, 2, 3, 4}), "01020304"},
		{"opaque empty", AppendOpaque(nil, nil), "00000000"},
		{"opaque 5", AppendOpaque(nil, []byte{1, 2, 3, 4, 5}), "00000005 01020304 05000000"},
		// RFC 4506 §4.11 example style: "sillyprog" is 9 bytes + 3 pad.
		{"string", AppendString(nil, "sillyprog"), "00000009 73696c6c7970726f 67000000"},
		{"append keeps prefix", AppendUint32([]byte{0xff}, 1), "ff00000001"},
	}
	for _, tt := range tests {
		if want := unhex(t, tt.want); !bytes.Equal(tt.got, want) {
			t.Errorf("%s: got %x, want %x", tt.name, tt.got, want)
		}
	}
}

func TestAppendOpaqueMatchesString(t *testing.T) {
	for n := 0; n < 12; n++ {
		s := string(bytes.Repeat([]byte{'x'}, n))
		a := AppendString(nil, s)
		b := AppendOpaque(nil, []byte(s))
		if !bytes.Equal(a, b) {
			t.Fatalf("n=%d: string %x != opaque %x", n, a, b)
		}
		if len(a) != 4+RoundUp(n) {
			t.Fatalf("n=%d: len %d, want %d", n, len(a), 4+RoundUp(n))
		}
	}
}
