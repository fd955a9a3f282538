package soft

import (
	"bytes"
	"encoding/hex"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// validHeaders returns one valid header of every frame type, with every
// field the type uses set.
func validHeaders() []frameHeader {
	return []frameHeader{
		{Type: frameSend, Seq: 0xfffffff0, Length: 1024},
		{Type: frameSend, Flags: flagInvalidate, Seq: 7, RKey: 0x00abcd12, Length: 0},
		{Type: frameWrite, Seq: 8, RKey: 0x00123401, Length: MaxMessageSize, Addr: 0x7f00_1234_5678},
		{Type: frameReadRequest, Seq: 9, RKey: 0x00123401, Length: 4096, Addr: 0x7f00_0000_1000},
		{Type: frameReadResponse, Seq: 9, Length: 4096},
		{Type: frameAck, Seq: 8},
		{Type: frameNak, Code: nakRNR, Seq: 10},
		{Type: frameNak, Code: nakRemoteOperation, Seq: 11},
		{Type: frameDisconnect},
	}
}

func TestFrameHeaderRoundTrip(t *testing.T) {
	for _, h := range validHeaders() {
		b := appendHeader(nil, &h)
		require.Len(t, b, headerLen)
		got, err := parseHeader(b)
		require.NoError(t, err, "%+v", h)
		require.Equal(t, h, got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		h := validHeaders()[rng.IntN(len(validHeaders()))]
		h.Seq = rng.Uint32()
		if h.Type == frameDisconnect {
			h.Seq = 0
		}
		if h.Type.hasPayload() || h.Type == frameReadRequest {
			h.Length = rng.Uint32N(MaxMessageSize + 1)
		}
		if h.Type == frameWrite || h.Type == frameReadRequest {
			h.Addr, h.RKey = rng.Uint64(), rng.Uint32()
		}
		b := appendHeader(nil, &h)
		got, err := parseHeader(b)
		require.NoError(t, err)
		require.Equal(t, h, got)
	}
}

func TestFrameHeaderTruncated(t *testing.T) {
	for _, h := range validHeaders() {
		b := appendHeader(nil, &h)
		for n := range len(b) {
			_, err := parseHeader(b[:n])
			require.ErrorIs(t, err, errShortHeader, "prefix of %d bytes of %+v", n, h)
		}
	}
}

func TestFrameHeaderRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    frameHeader
		edit func([]byte)
		want error
	}{
		{"type 0", frameHeader{}, nil, errFrameType},
		{"type 8", frameHeader{Type: 8}, nil, errFrameType},
		{"reserved byte", frameHeader{Type: frameAck}, func(b []byte) { b[3] = 1 }, errFrameReserved},
		{"length over max", frameHeader{Type: frameWrite, Length: MaxMessageSize + 1}, nil, errFrameLength},
		{"length 4 GiB", frameHeader{Type: frameSend, Length: 0xffffffff}, nil, errFrameLength},
		{"send with addr", frameHeader{Type: frameSend, Addr: 1}, nil, errFrameReserved},
		{"send with rkey but no invalidate", frameHeader{Type: frameSend, RKey: 5}, nil, errFrameReserved},
		{"send with unknown flag", frameHeader{Type: frameSend, Flags: 2}, nil, errFrameReserved},
		{"write with flags", frameHeader{Type: frameWrite, Flags: flagInvalidate}, nil, errFrameReserved},
		{"read request with code", frameHeader{Type: frameReadRequest, Code: nakRNR}, nil, errFrameReserved},
		{"read response with rkey", frameHeader{Type: frameReadResponse, RKey: 1}, nil, errFrameReserved},
		{"ack with length", frameHeader{Type: frameAck, Length: 1}, nil, errFrameReserved},
		{"nak code 0", frameHeader{Type: frameNak}, nil, errNakCode},
		{"nak code 5", frameHeader{Type: frameNak, Code: 5}, nil, errNakCode},
		{"nak with addr", frameHeader{Type: frameNak, Code: nakRNR, Addr: 1}, nil, errFrameReserved},
		{"disconnect with seq", frameHeader{Type: frameDisconnect, Seq: 1}, nil, errFrameReserved},
	} {
		b := appendHeader(nil, &tc.h)
		if tc.edit != nil {
			tc.edit(b)
		}
		_, err := parseHeader(b)
		require.ErrorIs(t, err, tc.want, tc.name)
	}
}

// validCMs returns valid CM messages of every type.
func validCMs() []cmMessage {
	return []cmMessage{
		{Type: cmREQ, ReadDepth: 16, StartSeq: 0xffffff01, PrivateData: []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}},
		{Type: cmREQ, ReadDepth: 1, PrivateData: bytes.Repeat([]byte{0xa5}, connectPrivateDataLen)},
		{Type: cmREP, ReadDepth: 255, StartSeq: 1, PrivateData: bytes.Repeat([]byte{0x5a}, acceptPrivateDataLen)},
		{Type: cmREP, ReadDepth: 4},
		{Type: cmREJ, PrivateData: []byte("no")},
		{Type: cmREJ, PrivateData: make([]byte, rejectPrivateDataLen)},
		{Type: cmRTU},
	}
}

func TestCMRoundTrip(t *testing.T) {
	for _, m := range validCMs() {
		require.NoError(t, m.check())
		b := appendCM(nil, &m)
		got, n, err := parseCM(b)
		require.NoError(t, err)
		require.Equal(t, len(b), n)
		require.Equal(t, m.Type, got.Type)
		require.Equal(t, m.ReadDepth, got.ReadDepth)
		require.Equal(t, m.StartSeq, got.StartSeq)
		require.Equal(t, len(m.PrivateData), len(got.PrivateData))
		require.True(t, bytes.Equal(m.PrivateData, got.PrivateData))
		require.LessOrEqual(t, n, cmMaxLen)
	}
}

func TestCMTruncated(t *testing.T) {
	for _, m := range validCMs() {
		b := appendCM(nil, &m)
		for n := range len(b) {
			_, _, err := parseCM(b[:n])
			require.ErrorIs(t, err, errCMShort, "prefix of %d bytes of a type %d message", n, m.Type)
		}
	}
}

func TestCMRejects(t *testing.T) {
	valid := func(m cmMessage) []byte { return appendCM(nil, &m) }
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"magic", append([]byte("SRDX"), valid(cmMessage{Type: cmRTU})[4:]...), errCMMagic},
		{"version", func() []byte { b := valid(cmMessage{Type: cmRTU}); b[4] = 2; return b }(), errCMVersion},
		{"type 0", func() []byte { b := valid(cmMessage{Type: cmRTU}); b[5] = 0; return b }(), errCMType},
		{"type 5", func() []byte { b := valid(cmMessage{Type: cmRTU}); b[5] = 5; return b }(), errCMType},
		{"reserved", func() []byte { b := valid(cmMessage{Type: cmRTU}); b[15] = 1; return b }(), errCMField},
		{"REQ read depth 0", valid(cmMessage{Type: cmREQ}), errCMField},
		{"RTU with read depth", valid(cmMessage{Type: cmRTU, ReadDepth: 1}), errCMField},
		{"REJ with sequence", valid(cmMessage{Type: cmREJ, StartSeq: 1}), errCMField},
		{"REQ 57 bytes", valid(cmMessage{Type: cmREQ, ReadDepth: 1, PrivateData: make([]byte, 57)}), errCMPrivateData},
		{"REP 197 bytes", valid(cmMessage{Type: cmREP, ReadDepth: 1, PrivateData: make([]byte, 197)}), errCMPrivateData},
		{"REJ 149 bytes", valid(cmMessage{Type: cmREJ, PrivateData: make([]byte, 149)}), errCMPrivateData},
		{"RTU 1 byte", valid(cmMessage{Type: cmRTU, PrivateData: []byte{0}}), errCMPrivateData},
		{"REQ claims 65535 bytes", func() []byte { b := valid(cmMessage{Type: cmREQ, ReadDepth: 1}); b[12], b[13] = 0xff, 0xff; return b }(), errCMPrivateData},
	} {
		_, _, err := parseCM(tc.b)
		require.ErrorIs(t, err, tc.want, tc.name)
	}
}

// TestWireGolden pins the wire encoding of frames and CM messages: a
// change to the protocol must be deliberate (go test -run Golden -update).
func TestWireGolden(t *testing.T) {
	var sb strings.Builder
	for _, h := range validHeaders() {
		sb.WriteString(hex.EncodeToString(appendHeader(nil, &h)) + "\n")
	}
	for _, m := range validCMs() {
		sb.WriteString(hex.EncodeToString(appendCM(nil, &m)) + "\n")
	}
	path := filepath.Join("testdata", "wire.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), sb.String())
}

// FuzzParseHeader: no input panics; an accepted header re-encodes to the
// same bytes (one encoding per header) and claims at most MaxMessageSize.
func FuzzParseHeader(f *testing.F) {
	for _, h := range validHeaders() {
		f.Add(appendHeader(nil, &h))
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, headerLen))
	f.Add(append(appendHeader(nil, &frameHeader{Type: frameAck}), 1, 2, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHeader(b)
		if err != nil {
			return
		}
		if h.Length > MaxMessageSize {
			t.Fatalf("accepted length %d", h.Length)
		}
		if got := appendHeader(nil, &h); !bytes.Equal(got, b[:headerLen]) {
			t.Fatalf("re-encoding %x differs from %x", got, b[:headerLen])
		}
	})
}

// FuzzParseCM: no input panics; an accepted message is within the limits
// of its type and re-encodes to the bytes it was parsed from.
func FuzzParseCM(f *testing.F) {
	for _, m := range validCMs() {
		f.Add(appendCM(nil, &m))
	}
	f.Add([]byte("SRDM"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := parseCM(b)
		if err != nil {
			return
		}
		if n > len(b) || n > cmMaxLen || len(m.PrivateData) > maxPrivateData(m.Type) {
			t.Fatalf("message of %d bytes, %d bytes of private data for type %d", n, len(m.PrivateData), m.Type)
		}
		if err := m.check(); err != nil {
			t.Fatalf("accepted an invalid message: %v", err)
		}
		if got := appendCM(nil, &m); !bytes.Equal(got, b[:n]) {
			t.Fatalf("re-encoding %x differs from %x", got, b[:n])
		}
	})
}
