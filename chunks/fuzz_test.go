package chunks

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// fuzzSeeds returns valid and malformed headers to start the fuzzers from:
// the golden headers, random headers, random valid calls, and a few broken
// ones.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for _, g := range goldens {
		seeds = append(seeds, g.h.Append(nil))
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 8 {
		seeds = append(seeds, randomHeader(r).Append(nil))
		b, _ := randomCall(r)
		seeds = append(seeds, b)
	}
	seeds = append(seeds,
		nil,
		words(0xabcd, 1, 32),
		words(0xabcd, 2, 32, msg, 0, 0, 0),
		words(cat(fx(msg), rs(6, 8), []uint32{0, 0, 0})...),
		words(cat(fx(msg), []uint32{0, 1, 0xffffffff}, ws(1))...),
		words(cat(fx(nomsg), rs(0, 64), rs(64, 8), []uint32{0, 0, 0})...),
		words(cat(fx(uint32(ProcError)), []uint32{1, 1, 1})...),
		words(fx(uint32(ProcDone))...),
	)
	return seeds
}

// dirty returns a Header that has parsed a large header, to check that a
// parse does not depend on what the Header held before.
func dirty(t *testing.T) *Header {
	var h Header
	if _, err := h.ParseCall(benchCall(benchHeaders["multichunk"]), nil); err != nil {
		t.Fatal(err)
	}
	return &h
}

// FuzzUnmarshal: Unmarshal never panics; it fails with a sentinel
// *ProtocolError and hdrLen 0, or it succeeds and Append reproduces exactly
// the bytes it consumed, Len agrees, and the encoding parses back Equal. A
// Header that held another header before parses the same.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		n, err := h.Unmarshal(b, nil)
		d := dirty(t)
		dn, derr := d.Unmarshal(b, nil)
		if derr != err || dn != n || (err == nil && !d.Equal(&h)) {
			t.Fatalf("reused Header parses differently: %v/%d vs %v/%d", derr, dn, err, n)
		}
		if err != nil {
			if _, ok := err.(*ProtocolError); !ok || n != 0 {
				t.Fatalf("err = %#v, hdrLen %d", err, n)
			}
			if (len(b) < MinHeaderSize) != (err == ErrShortHeader) {
				t.Fatalf("%d bytes: %v", len(b), err)
			}
			return
		}
		if n < MinHeaderSize || n > len(b) || n%4 != 0 {
			t.Fatalf("hdrLen = %d of %d", n, len(b))
		}
		enc := h.Append(nil)
		if !bytes.Equal(enc, b[:n]) {
			t.Fatalf("Append does not reproduce the header:\n got %x\nwant %x", enc, b[:n])
		}
		if h.Len() != n {
			t.Fatalf("Len = %d, hdrLen = %d", h.Len(), n)
		}
		var again Header
		if m, err := again.Unmarshal(enc, nil); err != nil || m != n || !again.Equal(&h) {
			t.Fatalf("re-parse: %v, %d, %+v", err, m, again)
		}
	})
}

// FuzzParseCall: the responder's outcome is always one of its three
// actions or OK, is consistent with the fixed part (short: drop; other
// version: ERR_VERS; RDMA_ERROR or RDMA_DONE: drop), and an accepted call
// re-encodes to the same bytes and passes ValidateCall again.
func FuzzParseCall(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		n, err := h.ParseCall(b, nil)
		o := OutcomeOf(err)
		if dn, derr := dirty(t).ParseCall(b, nil); derr != err || dn != n {
			t.Fatalf("reused Header parses differently: %v vs %v", derr, err)
		}
		switch o {
		case OutcomeOK, OutcomeErrVers, OutcomeErrChunk, OutcomeDrop:
		default:
			t.Fatalf("outcome %v for a call", o)
		}
		if (err == nil) != (o == OutcomeOK) {
			t.Fatalf("err %v with outcome %v", err, o)
		}
		if len(b) < MinHeaderSize {
			if o != OutcomeDrop {
				t.Fatalf("%d bytes: outcome %v", len(b), o)
			}
			return
		}
		switch {
		case h.Vers != Version1:
			if o != OutcomeErrVers {
				t.Fatalf("version %d: outcome %v", h.Vers, o)
			}
		case h.Proc == ProcError || h.Proc == ProcDone:
			if o != OutcomeDrop {
				t.Fatalf("%v at a responder: outcome %v", h.Proc, o)
			}
		}
		var u Header
		if _, uerr := u.Unmarshal(b, nil); uerr != nil && h.Proc != ProcError && uerr != err {
			t.Fatalf("Unmarshal fails with %v but ParseCall with %v", uerr, err)
		}
		if err != nil {
			return
		}
		if h.Proc != ProcMsg && h.Proc != ProcNoMsg {
			t.Fatalf("accepted %v", h.Proc)
		}
		if !bytes.Equal(h.Append(nil), b[:n]) {
			t.Fatal("accepted call does not re-encode to its bytes")
		}
		if err := h.ValidateCall(len(b)-n, nil); err != nil {
			t.Fatalf("accepted call fails ValidateCall: %v", err)
		}
	})
}

// FuzzParseReply: the requester's outcome is OK, drop or fail-the-RPC,
// drop exactly when the XID cannot be trusted, and an accepted reply
// re-encodes to the same bytes.
func FuzzParseReply(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		n, err := h.ParseReply(b, nil)
		o := ReplyOutcomeOf(err)
		if dn, derr := dirty(t).ParseReply(b, nil); derr != err || dn != n {
			t.Fatalf("reused Header parses differently: %v vs %v", derr, err)
		}
		switch o {
		case OutcomeOK, OutcomeDrop, OutcomeFailRPC:
		default:
			t.Fatalf("outcome %v for a reply", o)
		}
		if (err == nil) != (o == OutcomeOK) {
			t.Fatalf("err %v with outcome %v", err, o)
		}
		untrusted := len(b) < MinHeaderSize || h.Vers != Version1
		if untrusted != (o == OutcomeDrop) {
			t.Fatalf("%d bytes, version %d: outcome %v", len(b), h.Vers, o)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(h.Append(nil), b[:n]) {
			t.Fatal("accepted reply does not re-encode to its bytes")
		}
		if len(h.ReadList) != 0 {
			t.Fatal("accepted a reply with a Read list")
		}
	})
}
