package cmpriv

import (
	"bytes"
	"testing"
)

// FuzzParse checks Parse against the naive reference on arbitrary private
// data, that a found message re-encodes to the bytes it came from (reserved
// bits aside), that anything else yields the RFC 8797 §5.1 defaults, and
// that Negotiate built on it stays within bounds.
func FuzzParse(f *testing.F) {
	f.Add([]byte(nil))
	f.Add(linuxClient)
	f.Add(linuxServer)
	f.Add(padded(connectLen, nil, linuxClient))
	f.Add(padded(acceptLen, nil, linuxServer))
	f.Add(make([]byte, connectLen))
	f.Add(garbage(connectLen))
	f.Add(padded(connectLen, []byte{1, 2, 3}, linuxClient))
	f.Add(hx("f6ab0e18 02 01 03 03 f6ab0e18 01 fe ff 00"))
	f.Add(hx("00 f6ab0e18 01 01 03"))
	f.Add(hx("f6ab0e18 01 ff 00 ff"))

	local := Message{RemoteInvalidate: true, SendSize: 8192, RecvSize: 16384}
	f.Fuzz(func(t *testing.T, buf []byte) {
		in := bytes.Clone(buf)
		m, off, st := parse(buf)
		if !bytes.Equal(in, buf) {
			t.Fatal("parse modified its input")
		}
		rm, roff, rst := referenceParse(buf)
		if m != rm || off != roff || st != rst {
			t.Fatalf("parse = %+v %d %v, reference = %+v %d %v", m, off, st, rm, roff, rst)
		}
		if pm, pst := Parse(buf); pm != m || pst != st {
			t.Fatalf("Parse = %+v %v, parse = %+v %v", pm, pst, m, st)
		}

		switch st {
		case StatusFound:
			if off < 0 || off+Len > len(buf) {
				t.Fatalf("found at %d in %d bytes", off, len(buf))
			}
			want := bytes.Clone(buf[off : off+Len])
			want[5] &= flagRemoteInvalidate // receivers ignore reserved bits
			if got := m.Append(nil); !bytes.Equal(got, want) {
				t.Fatalf("re-encoded % x, want % x", got, want)
			}
			if n, adj := m.Normalize(); adj != 0 || n != m {
				t.Fatalf("found message %+v is not representable: %v", m, adj)
			}
		case StatusEmpty, StatusNotFound, StatusBadVersion, StatusTruncated:
			if m != Default() || off != -1 {
				t.Fatalf("status %v with %+v at %d", st, m, off)
			}
			hasID := bytes.Contains(buf, formatID[:])
			if hasID != (st == StatusBadVersion || st == StatusTruncated) {
				t.Fatalf("status %v, identifier present %v", st, hasID)
			}
			if (st == StatusEmpty) != allZero(buf) {
				t.Fatalf("status %v for % x", st, buf)
			}
		default:
			t.Fatalf("unknown status %v", st)
		}

		for _, role := range []Role{Requester, Responder} {
			s := Negotiate(role, local, buf)
			if s.Peer != m || s.PeerStatus != st {
				t.Fatalf("Negotiate saw %+v %v, Parse %+v %v", s.Peer, s.PeerStatus, m, st)
			}
			if s.SendInline < MinSize || s.SendInline > local.SendSize ||
				s.RecvInline < MinSize || s.RecvInline > local.RecvSize || s.RecvBuffer != local.RecvSize {
				t.Fatalf("%v: settings out of bounds: %+v", role, s)
			}
		}
	})
}
