package cmpriv

import (
	"math/rand/v2"
	"testing"
)

func TestParse(t *testing.T) {
	linux4096R := Message{RemoteInvalidate: true, SendSize: 4096, RecvSize: 4096}
	linux4096 := Message{SendSize: 4096, RecvSize: 4096}
	def := Default()
	v2 := hx("f6ab0e18 02 01 03 03")

	tests := []struct {
		name   string
		buf    []byte
		want   Message
		status Status
		offset int
	}{
		{"linux client, exact 8 bytes", linuxClient, linux4096R, StatusFound, 0},
		{"linux server, exact 8 bytes", linuxServer, linux4096, StatusFound, 0},
		{"linux client on connect: 56 bytes zero padded", padded(connectLen, nil, linuxClient), linux4096R, StatusFound, 0},
		{"linux server on accept: 196 bytes zero padded", padded(acceptLen, nil, linuxServer), linux4096, StatusFound, 0},
		{"nil", nil, def, StatusEmpty, -1},
		{"empty", []byte{}, def, StatusEmpty, -1},
		{"56 zero bytes (peer sent nothing, IB CM)", make([]byte, connectLen), def, StatusEmpty, -1},
		{"196 zero bytes (peer sent nothing, IB CM)", make([]byte, acceptLen), def, StatusEmpty, -1},
		{"garbage, 56 bytes", garbage(connectLen), def, StatusNotFound, -1},
		{"one non-zero byte", []byte{0, 0, 7, 0}, def, StatusNotFound, -1},
		{"identifier at odd offset 3 behind other data", padded(connectLen, []byte{0x10, 0x20, 0x30}, linuxClient), linux4096R, StatusFound, 3},
		{"identifier behind garbage", append(garbage(21), linuxServer...), linux4096, StatusFound, 21},
		{"identifier in little-endian order", padded(connectLen, nil, hx("180eabf6 01 01 03 03")), def, StatusNotFound, -1},
		{"version 2", padded(connectLen, nil, v2), def, StatusBadVersion, -1},
		{"version 0", hx("f6ab0e18 00 01 03 03"), def, StatusBadVersion, -1},
		{"version 255", hx("f6ab0e18 ff 01 03 03"), def, StatusBadVersion, -1},
		{"identifier alone", hx("f6ab0e18"), def, StatusTruncated, -1},
		{"7 bytes", linuxClient[:7], def, StatusTruncated, -1},
		{"identifier in the last 4 of 56 bytes", padded(connectLen, make([]byte, connectLen-4), formatID[:]), def, StatusTruncated, -1},
		{"message ending 1 byte early, 196 bytes", padded(acceptLen, make([]byte, acceptLen-7), linuxServer), def, StatusTruncated, -1},
		{"message in the last 8 of 196 bytes", padded(acceptLen, make([]byte, acceptLen-8), linuxServer), linux4096, StatusFound, acceptLen - 8},
		{"3 bytes of identifier", hx("f6ab0e"), def, StatusNotFound, -1},
		{"reserved bits set, R set", hx("f6ab0e18 01 ff 03 03"), linux4096R, StatusFound, 0},
		{"reserved bits set, R clear", hx("f6ab0e18 01 fe 03 03"), linux4096, StatusFound, 0},
		{"smallest sizes", hx("f6ab0e18 01 00 00 00"), def, StatusFound, 0},
		{"largest sizes", hx("f6ab0e18 01 01 ff ff"), Message{RemoteInvalidate: true, SendSize: MaxSize, RecvSize: MaxSize}, StatusFound, 0},
		{"asymmetric sizes", hx("f6ab0e18 01 00 00 3f"), Message{SendSize: 1024, RecvSize: 65536}, StatusFound, 0},
		{"version 2 then version 1: first valid wins", append(append([]byte{}, v2...), linuxServer...), linux4096, StatusFound, 8},
		{"two version 1 messages: first wins", append(append([]byte{}, linuxServer...), linuxClient...), linux4096, StatusFound, 0},
		{"version 2 then truncated: first occurrence's status", append(append([]byte{}, v2...), formatID[:]...), def, StatusBadVersion, -1},
		{"version 2 then garbage", append(append([]byte{}, v2...), garbage(40)...), def, StatusBadVersion, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, st := Parse(tt.buf)
			if m != tt.want || st != tt.status {
				t.Fatalf("Parse(% x) = %+v, %v; want %+v, %v", tt.buf, m, st, tt.want, tt.status)
			}
			if _, off, _ := parse(tt.buf); off != tt.offset {
				t.Fatalf("offset %d, want %d", off, tt.offset)
			}
			// The table and the naive reference must agree, which
			// checks the reference as much as the table.
			rm, roff, rst := referenceParse(tt.buf)
			if rm != tt.want || roff != tt.offset || rst != tt.status {
				t.Fatalf("referenceParse = %+v, %d, %v", rm, roff, rst)
			}
		})
	}
}

// TestParseEveryOffset plants a message at every offset of an accept-sized
// buffer, behind zeros and behind garbage.
func TestParseEveryOffset(t *testing.T) {
	want := Message{RemoteInvalidate: true, SendSize: 4096, RecvSize: 4096}
	for _, fill := range []func(int) []byte{func(n int) []byte { return make([]byte, n) }, garbage} {
		for off := 0; off+Len <= acceptLen; off++ {
			buf := padded(acceptLen, fill(off), linuxClient)
			m, got, st := parse(buf)
			if st != StatusFound || m != want || got != off {
				t.Fatalf("offset %d: got %+v at %d, %v", off, m, got, st)
			}
		}
	}
}

// TestParseTruncatedPrefixes checks that every proper prefix of a buffer
// holding one message at offset off fails cleanly: truncated once the whole
// identifier is in the prefix, otherwise not found (or empty).
func TestParseTruncatedPrefixes(t *testing.T) {
	for _, lead := range [][]byte{nil, {0x42}, {0, 0, 0}, garbage(13)} {
		buf := append(append([]byte{}, lead...), linuxClient...)
		off := len(lead)
		for n := 0; n < len(buf); n++ {
			m, st := Parse(buf[:n])
			var want Status
			switch {
			case n >= off+4:
				want = StatusTruncated
			case allZero(buf[:n]):
				want = StatusEmpty
			default:
				want = StatusNotFound
			}
			if st != want || m != Default() {
				t.Errorf("lead %d, prefix %d: got %+v, %v; want default, %v", off, n, m, st, want)
			}
		}
		if _, st := Parse(buf); st != StatusFound {
			t.Errorf("lead %d: whole buffer: %v", off, st)
		}
	}
}

// TestParseMatchesReference compares Parse with the naive reference on
// random buffers in which identifiers, versions and truncation are planted
// often enough to hit every status.
func TestParseMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(8797, 8166))
	counts := map[Status]int{}
	for range 20000 {
		n := r.IntN(acceptLen + 1)
		buf := make([]byte, n)
		if r.IntN(4) != 0 {
			for i := range buf {
				if r.IntN(3) == 0 {
					buf[i] = byte(r.Uint32())
				}
			}
		}
		for k := r.IntN(3); k > 0 && n >= 4; k-- {
			off := r.IntN(n - 3)
			copy(buf[off:], formatID[:])
			if off+4 < n && r.IntN(2) == 0 {
				buf[off+4] = 1
			}
		}
		m, off, st := parse(buf)
		rm, roff, rst := referenceParse(buf)
		if m != rm || off != roff || st != rst {
			t.Fatalf("% x: parse = %+v %d %v, reference = %+v %d %v", buf, m, off, st, rm, roff, rst)
		}
		counts[st]++
	}
	for st := StatusEmpty; st <= StatusFound; st++ {
		if counts[st] == 0 {
			t.Errorf("random inputs never produced %v", st)
		}
	}
}

func TestStatusString(t *testing.T) {
	want := map[Status]string{
		StatusEmpty:      "empty",
		StatusNotFound:   "not-found",
		StatusBadVersion: "bad-version",
		StatusTruncated:  "truncated",
		StatusFound:      "found",
		Status(9):        "status(9)",
	}
	for s, w := range want {
		if got := s.String(); got != w {
			t.Errorf("Status(%d).String() = %q, want %q", uint8(s), got, w)
		}
	}
	var zero Status
	if zero != StatusEmpty {
		t.Error("the zero Status must not claim a message was found")
	}
}
