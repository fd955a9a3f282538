package xdr

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// knownError reports whether err is one of the package's documented
// decoding errors.
func knownError(err error) bool {
	for _, e := range []error{ErrShortBuffer, ErrTooLong, ErrBadBool, ErrMsgType, ErrRPCVersion,
		ErrReplyStat, ErrRejectStat, ErrAuthFlavor, ErrTrailingData} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// FuzzCallHeader: Unmarshal never panics, fails only with documented
// errors, and a decoded header re-encodes to the same length and decodes
// back to itself (bytes may differ only in XDR padding).
func FuzzCallHeader(f *testing.F) {
	for _, v := range callVectors {
		msg := unhexConst(v.hex)
		f.Add(msg)
		f.Add(msg[:len(msg)/2])
	}
	f.Add((&CallHeader{RPCVers: 3}).Append(nil))
	f.Add((&CallHeader{Cred: OpaqueAuth{FlavorGSS, make([]byte, 401)}}).Append(nil))
	f.Add(unhexConst(replyVectors[0].hex))
	f.Fuzz(func(t *testing.T, data []byte) {
		var h CallHeader
		off, err := h.Unmarshal(data)
		if err != nil {
			if !knownError(err) || off != 0 {
				t.Fatalf("off %d, unexpected error %v", off, err)
			}
			return
		}
		if off > len(data) || off != h.EncodedLen() || len(h.Cred.Body) > MaxAuthBytes || len(h.Verf.Body) > MaxAuthBytes {
			t.Fatalf("off %d of %d, EncodedLen %d", off, len(data), h.EncodedLen())
		}
		enc := h.Append(nil)
		if len(enc) != off || !bytes.Equal(enc[:24], data[:24]) {
			t.Fatalf("re-encoding %x differs from %x", enc, data[:off])
		}
		var h2 CallHeader
		if off2, err := h2.Unmarshal(enc); err != nil || off2 != off || !callEqual(&h, &h2) {
			t.Fatalf("re-decode: %s vs %s, %v", fmtCall(&h), fmtCall(&h2), err)
		}
	})
}

// FuzzReplyHeader: as FuzzCallHeader, for replies.
func FuzzReplyHeader(f *testing.F) {
	for _, v := range replyVectors {
		msg := unhexConst(v.hex)
		f.Add(msg)
		f.Add(msg[:len(msg)-1])
	}
	f.Add(unhexConst("00000001 00000001 00000002 00000000"))
	f.Add(unhexConst("00000001 00000001 00000001 00000007"))
	f.Add(unhexConst("00000001 00000001 00000000 00000006 ffffffff"))
	f.Add(unhexConst(callVectors[0].hex))
	f.Fuzz(func(t *testing.T, data []byte) {
		var h ReplyHeader
		off, err := h.Unmarshal(data)
		if err != nil {
			if !knownError(err) || off != 0 {
				t.Fatalf("off %d, unexpected error %v", off, err)
			}
			return
		}
		if off > len(data) || off != h.EncodedLen() || len(h.Verf.Body) > MaxAuthBytes {
			t.Fatalf("off %d of %d, EncodedLen %d", off, len(data), h.EncodedLen())
		}
		enc := h.Append(nil)
		if len(enc) != off || !bytes.Equal(enc[:12], data[:12]) {
			t.Fatalf("re-encoding %x differs from %x", enc, data[:off])
		}
		var h2 ReplyHeader
		if off2, err := h2.Unmarshal(enc); err != nil || off2 != off || !replyEqual(&h, &h2) {
			t.Fatalf("re-decode: %s vs %s, %v", fmtReply(&h), fmtReply(&h2), err)
		}
	})
}

// FuzzAuthSys: Unmarshal accepts exactly the bodies Append can produce
// within the limits; accepted bodies re-encode to the same length and
// decode back to the same credential.
func FuzzAuthSys(f *testing.F) {
	f.Add(unhexConst(authSysBodyHex))
	f.Add((&AuthSys{}).Append(nil))
	f.Add((&AuthSys{MachineName: make([]byte, 255), GIDs: make([]uint32, 16)}).Append(nil))
	f.Add((&AuthSys{GIDs: make([]uint32, 17)}).Append(nil))
	f.Add(unhexConst("00000000 00000000 00000000 00000000 ffffffff"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var a AuthSys
		if err := a.Unmarshal(body); err != nil {
			if !knownError(err) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(a.MachineName) > MaxMachineNameLen || len(a.GIDs) > MaxAuthSysGIDs {
			t.Fatalf("limits exceeded: %d-byte name, %d gids", len(a.MachineName), len(a.GIDs))
		}
		enc := a.Append(nil)
		if len(enc) != len(body) || len(enc) != a.EncodedLen() {
			t.Fatalf("re-encoding is %d bytes, body %d", len(enc), len(body))
		}
		var b AuthSys
		if err := b.Unmarshal(enc); err != nil || !authSysEqual(&a, &b) {
			t.Fatalf("re-decode: %+v vs %+v, %v", a, b, err)
		}
	})
}

// FuzzReader drives a Reader with an operation sequence taken from ops over
// data: no panic, the cursor stays in bounds and never moves on error, and
// results alias data.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6}, unhexConst(callVectors[1].hex))
	f.Add([]byte{3, 3, 3}, unhexConst("00000002 61620000 ffffffff"))
	f.Fuzz(func(t *testing.T, ops, data []byte) {
		r := NewReader(data)
		for i, op := range ops {
			before := r.Offset()
			var err error
			var p []byte
			switch op % 8 {
			case 0:
				_, err = r.Uint32()
			case 1:
				_, err = r.Uint64()
			case 2:
				_, err = r.Bool()
			case 3:
				p, err = r.Opaque(int(op) * 4)
			case 4:
				p, err = r.String(-1 + int(op)/8)
			case 5:
				p, err = r.FixedOpaque(int(op)/8 - 1)
			case 6:
				err = r.Skip(int(op) / 8)
			case 7:
				p = r.Rest()
			}
			if err != nil {
				if !knownError(err) || r.Offset() != before {
					t.Fatalf("op %d (%d): error %v, cursor %d -> %d", i, op, err, before, r.Offset())
				}
				continue
			}
			if r.Offset() < before || r.Offset() > len(data) || r.Len() != len(data)-r.Offset() {
				t.Fatalf("op %d: cursor %d -> %d of %d", i, before, r.Offset(), len(data))
			}
			start := before // where the result's bytes must be in data
			if op%8 == 3 || op%8 == 4 {
				start += 4 // after the length word
			}
			if len(p) > 0 && &p[0] != &data[start] {
				t.Fatalf("op %d: result does not alias the input", i)
			}
		}
	})
}

// FuzzDeframer has two parts. First, records cut from data are framed with
// AppendRecord (fragment size from frag) and pushed through a Deframer in
// pieces chosen by seed: the records must come back unchanged. Second, data
// itself is treated as a hostile stream and deframed two independent ways,
// by a Deframer fed in random pieces and by ReadRecord: both must return the
// same records and agree on whether the stream fails, and no record may
// exceed the limit.
func FuzzDeframer(f *testing.F) {
	f.Add(AppendRecord(AppendRecord(nil, []byte("hello"), 2), nil, 0), uint8(3), uint64(1))
	f.Add(unhexConst("80000004 01020304 00000000 80000001 ff"), uint8(0), uint64(2))
	f.Add(unhexConst("ffffffff 00"), uint8(1), uint64(3))
	f.Add(unhexConst("00000010 0102"), uint8(255), uint64(4))
	f.Fuzz(func(t *testing.T, data []byte, frag uint8, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed>>1|1))

		// Part 1: round trip through reference framing.
		var records [][]byte
		for rest := data; len(rest) > 0; {
			n := min(int(rest[0]), len(rest)-1)
			records = append(records, rest[1:1+n])
			rest = rest[1+n:]
		}
		var stream []byte
		for _, r := range records {
			stream = AppendRecord(stream, r, int(frag))
		}
		d := Deframer{MaxRecord: 255}
		var got [][]byte
		for off := 0; off < len(stream); {
			n := min(len(stream)-off, 1+rng.IntN(40))
			if w, err := d.Write(stream[off : off+n]); err != nil || w != n {
				t.Fatalf("Write: %d, %v", w, err)
			}
			off += n
			for rec, ok := d.Next(); ok; rec, ok = d.Next() {
				got = append(got, bytes.Clone(rec))
			}
		}
		if len(got) != len(records) || d.Partial() {
			t.Fatalf("%d records back, want %d (partial %v)", len(got), len(records), d.Partial())
		}
		for i := range got {
			if !bytes.Equal(got[i], records[i]) {
				t.Fatalf("record %d: %x, want %x", i, got[i], records[i])
			}
		}

		// Part 2: data as a hostile stream, two implementations agree.
		const limit = 64
		var e Deframer
		e.MaxRecord = limit
		var viaDeframer [][]byte
		var deframerErr error
		for off := 0; off < len(data) && deframerErr == nil; {
			n := min(len(data)-off, 1+rng.IntN(16))
			var w int
			w, deframerErr = e.Write(data[off : off+n])
			if deframerErr == nil && w != n {
				t.Fatalf("Write consumed %d of %d without error", w, n)
			}
			off += n
			for rec, ok := e.Next(); ok; rec, ok = e.Next() {
				viaDeframer = append(viaDeframer, bytes.Clone(rec))
			}
			if e.Buffered() > limit {
				t.Fatalf("Buffered %d > limit after taking all records", e.Buffered())
			}
		}
		if deframerErr != nil && !errors.Is(deframerErr, ErrRecordTooLarge) {
			t.Fatalf("deframer error %v", deframerErr)
		}
		r := bytes.NewReader(data)
		var viaRead [][]byte
		var readErr error
		for {
			var rec []byte
			rec, readErr = ReadRecord(r, nil, limit)
			if readErr != nil {
				break
			}
			viaRead = append(viaRead, rec)
		}
		if len(viaRead) != len(viaDeframer) {
			t.Fatalf("ReadRecord found %d records, Deframer %d", len(viaRead), len(viaDeframer))
		}
		for i := range viaRead {
			if len(viaRead[i]) > limit || !bytes.Equal(viaRead[i], viaDeframer[i]) {
				t.Fatalf("record %d differs: %x vs %x", i, viaRead[i], viaDeframer[i])
			}
		}
		switch {
		case errors.Is(readErr, ErrRecordTooLarge) != errors.Is(deframerErr, ErrRecordTooLarge):
			t.Fatalf("disagreement on size: ReadRecord %v, Deframer %v", readErr, deframerErr)
		case readErr == io.ErrUnexpectedEOF && !e.Partial():
			t.Fatal("ReadRecord saw a truncated record, Deframer no partial one")
		case readErr == io.EOF && e.Partial():
			t.Fatal("Deframer holds a partial record at a clean end of stream")
		}
	})
}
