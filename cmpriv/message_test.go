package cmpriv

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

func TestFormatIDBytes(t *testing.T) {
	if got := binary.BigEndian.Uint32(formatID[:]); got != FormatID {
		t.Fatalf("formatID = %#x, FormatID = %#x", got, FormatID)
	}
	if FormatID != 0xf6ab0e18 {
		t.Fatalf("FormatID = %#x, RFC 8797 §8 registers 0xf6ab0e18", FormatID)
	}
}

func TestDefault(t *testing.T) {
	// RFC 8797 §5.1: R clear, both Size fields zero, i.e. 1024 bytes.
	want := Message{RemoteInvalidate: false, SendSize: 1024, RecvSize: 1024}
	if got := Default(); got != want {
		t.Fatalf("Default() = %+v, want %+v", got, want)
	}
	if got := Default().Append(nil); !bytes.Equal(got, hx("f6ab0e18 01 00 00 00")) {
		t.Fatalf("Default().Append = % x", got)
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		size int
		want int
		adj  Adjustment // send-side bit
	}{
		{math.MinInt, 1024, SendRaisedToMin},
		{-1, 1024, SendRaisedToMin},
		{0, 1024, SendRaisedToMin},
		{1, 1024, SendRaisedToMin},
		{1023, 1024, SendRaisedToMin},
		{1024, 1024, 0},
		{1025, 1024, SendRoundedDown},
		{2047, 1024, SendRoundedDown},
		{2048, 2048, 0},
		{4096, 4096, 0},
		{5000, 4096, SendRoundedDown},
		{262143, 261120, SendRoundedDown},
		{262144, 262144, 0},
		{262145, 262144, SendLoweredToMax},
		{1 << 30, 262144, SendLoweredToMax},
		{math.MaxInt, 262144, SendLoweredToMax},
	}
	for _, tt := range tests {
		m, adj := Message{SendSize: tt.size, RecvSize: 4096}.Normalize()
		if m.SendSize != tt.want || m.RecvSize != 4096 || adj != tt.adj {
			t.Errorf("send %d: got %d/%d %v, want %d/4096 %v", tt.size, m.SendSize, m.RecvSize, adj, tt.want, tt.adj)
		}
		m, adj = Message{SendSize: 4096, RecvSize: tt.size, RemoteInvalidate: true}.Normalize()
		if m.RecvSize != tt.want || m.SendSize != 4096 || adj != tt.adj<<recvShift || !m.RemoteInvalidate {
			t.Errorf("recv %d: got %+v %v, want recv %d %v", tt.size, m, adj, tt.want, tt.adj<<recvShift)
		}
		// Append encodes exactly what Normalize reports.
		enc := Message{SendSize: tt.size, RecvSize: tt.size}.Append(nil)
		if got := decodeSize(enc[6]); got != tt.want {
			t.Errorf("Append(send %d) encodes %d, want %d", tt.size, got, tt.want)
		}
		if got := decodeSize(enc[7]); got != tt.want {
			t.Errorf("Append(recv %d) encodes %d, want %d", tt.size, got, tt.want)
		}
	}
}

func TestNormalizeBothSides(t *testing.T) {
	m, adj := Message{SendSize: 300000, RecvSize: 512}.Normalize()
	if m.SendSize != MaxSize || m.RecvSize != MinSize {
		t.Fatalf("got %+v", m)
	}
	if adj != SendLoweredToMax|RecvRaisedToMin {
		t.Fatalf("adj = %v", adj)
	}
	if s := adj.String(); s != "send-lowered-to-max|recv-raised-to-min" {
		t.Fatalf("adj.String() = %q", s)
	}
}

func TestAppendGolden(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		want []byte
	}{
		{"linux client", Message{RemoteInvalidate: true, SendSize: 4096, RecvSize: 4096}, linuxClient},
		{"linux server", Message{SendSize: 4096, RecvSize: 4096}, linuxServer},
		{"asymmetric", Message{RemoteInvalidate: true, SendSize: 1024, RecvSize: 65536}, hx("f6ab0e18 01 01 00 3f")},
		{"max", Message{SendSize: MaxSize, RecvSize: MaxSize}, hx("f6ab0e18 01 00 ff ff")},
		{"rounded", Message{SendSize: 8191, RecvSize: 9000}, hx("f6ab0e18 01 00 06 07")},
		{"clamped", Message{SendSize: -5, RecvSize: 1 << 40}, hx("f6ab0e18 01 00 00 ff")},
	}
	for _, tt := range tests {
		if got := tt.m.Append(nil); !bytes.Equal(got, tt.want) {
			t.Errorf("%s: Append = % x, want % x", tt.name, got, tt.want)
		}
	}
}

func TestAppendKeepsPrefix(t *testing.T) {
	prefix := []byte{1, 2, 3}
	b := make([]byte, len(prefix), 64)
	copy(b, prefix)
	got := Message{RemoteInvalidate: true, SendSize: 4096, RecvSize: 4096}.Append(b)
	if want := append(prefix, linuxClient...); !bytes.Equal(got, want) {
		t.Fatalf("Append = % x, want % x", got, want)
	}
	if &got[0] != &b[0] {
		t.Fatal("Append reallocated although b had room")
	}
}

// TestRoundTripAllCodes covers every value of both size fields with R set
// and clear: decode, re-encode, and check that the decoded sizes need no
// adjustment.
func TestRoundTripAllCodes(t *testing.T) {
	buf := make([]byte, Len)
	out := make([]byte, 0, Len)
	for send := 0; send < 256; send++ {
		for recv := 0; recv < 256; recv++ {
			for _, flags := range []byte{0, 1} {
				copy(buf, formatID[:])
				buf[4], buf[5], buf[6], buf[7] = 1, flags, byte(send), byte(recv)
				m, st := Parse(buf)
				if st != StatusFound {
					t.Fatalf("% x: status %v", buf, st)
				}
				if m.SendSize != (send+1)*1024 || m.RecvSize != (recv+1)*1024 || m.RemoteInvalidate != (flags == 1) {
					t.Fatalf("% x: decoded %+v", buf, m)
				}
				if n, adj := m.Normalize(); adj != 0 || n != m {
					t.Fatalf("% x: decoded %+v needs adjustment %v", buf, m, adj)
				}
				if out = m.Append(out[:0]); !bytes.Equal(out, buf) {
					t.Fatalf("re-encoded % x, want % x", out, buf)
				}
			}
		}
	}
}

func TestMessageString(t *testing.T) {
	m, _ := Parse(linuxClient)
	if got, want := m.String(), "R=1 send=4096 recv=4096"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if got, want := Default().String(), "R=0 send=1024 recv=1024"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestAdjustmentString(t *testing.T) {
	tests := []struct {
		a    Adjustment
		want string
	}{
		{0, "none"},
		{SendRoundedDown, "send-rounded-down"},
		{SendRaisedToMin, "send-raised-to-min"},
		{SendLoweredToMax, "send-lowered-to-max"},
		{RecvRoundedDown, "recv-rounded-down"},
		{RecvRaisedToMin, "recv-raised-to-min"},
		{RecvLoweredToMax, "recv-lowered-to-max"},
		{SendRoundedDown | RecvRoundedDown, "send-rounded-down|recv-rounded-down"},
		{0x40, "0x40"},
		{0xc1, "send-rounded-down|0xc0"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("Adjustment(%#x).String() = %q, want %q", uint8(tt.a), got, tt.want)
		}
	}
}
