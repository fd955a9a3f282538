package xdr

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func replyEqual(a, b *ReplyHeader) bool {
	return a.XID == b.XID && a.Stat == b.Stat && authEqual(a.Verf, b.Verf) &&
		a.AcceptStat == b.AcceptStat && a.Mismatch == b.Mismatch &&
		a.RejectStat == b.RejectStat && a.AuthStat == b.AuthStat
}

func fmtReply(h *ReplyHeader) string {
	return fmt.Sprintf("{xid %#x %v verf %v %x %v mismatch %v %v %v}", h.XID, h.Stat,
		h.Verf.Flavor, h.Verf.Body, h.AcceptStat, h.Mismatch, h.RejectStat, h.AuthStat)
}

func TestReplyVectors(t *testing.T) {
	for _, v := range replyVectors {
		t.Run(v.name, func(t *testing.T) {
			msg := unhex(t, v.hex)
			var h ReplyHeader
			off, err := h.Unmarshal(msg)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if off != v.resultsOffset {
				t.Errorf("resultsOffset = %d, want %d", off, v.resultsOffset)
			}
			if !replyEqual(&h, &v.hdr) {
				t.Errorf("decoded %s\nwant    %s", fmtReply(&h), fmtReply(&v.hdr))
			}
			enc := v.hdr.Append(nil)
			if !bytes.Equal(enc, msg[:v.resultsOffset]) {
				t.Errorf("Append = %x\nwant     %x", enc, msg[:v.resultsOffset])
			}
			if n := v.hdr.EncodedLen(); n != v.resultsOffset {
				t.Errorf("EncodedLen = %d, want %d", n, v.resultsOffset)
			}
		})
	}
}

// TestReplyEveryStat covers every accept_stat, reject_stat and auth_stat
// of RFC 5531 §9 with its expected wire length.
func TestReplyEveryStat(t *testing.T) {
	type tc struct {
		hdr  ReplyHeader
		size int
	}
	var cases []tc
	for s := AcceptSuccess; s <= AcceptSystemErr; s++ {
		h := ReplyHeader{XID: uint32(s), Stat: MsgAccepted, AcceptStat: s}
		size := 24
		if s == AcceptProgMismatch {
			h.Mismatch = Mismatch{Low: 3, High: 4}
			size = 32
		}
		cases = append(cases, tc{h, size})
	}
	cases = append(cases, tc{ReplyHeader{Stat: MsgDenied, RejectStat: RejectRPCMismatch,
		Mismatch: Mismatch{2, 2}}, 24})
	for s := AuthOK; s <= RPCSecGSSCtxProblem; s++ {
		cases = append(cases, tc{ReplyHeader{XID: 100 + uint32(s), Stat: MsgDenied,
			RejectStat: RejectAuthError, AuthStat: s}, 20})
	}
	for _, c := range cases {
		msg := c.hdr.Append(nil)
		if len(msg) != c.size || c.hdr.EncodedLen() != c.size {
			t.Errorf("%s: %d bytes, EncodedLen %d, want %d", fmtReply(&c.hdr), len(msg), c.hdr.EncodedLen(), c.size)
		}
		var got ReplyHeader
		off, err := got.Unmarshal(msg)
		if err != nil || off != c.size || !replyEqual(&got, &c.hdr) {
			t.Errorf("%s: got %s off %d err %v", fmtReply(&c.hdr), fmtReply(&got), off, err)
		}
	}
}

func TestReplyTruncated(t *testing.T) {
	for _, v := range replyVectors {
		msg := unhex(t, v.hex)
		for n := 0; n < v.resultsOffset; n++ {
			var h ReplyHeader
			if _, err := h.Unmarshal(msg[:n]); !errors.Is(err, ErrShortBuffer) {
				t.Errorf("%s: prefix %d/%d: err = %v, want ErrShortBuffer", v.name, n, v.resultsOffset, err)
			}
		}
	}
}

func TestReplyErrors(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want error
	}{
		{"call given to reply parser", "00000001 00000000 00000002", ErrMsgType},
		{"call in 8 bytes", "00000001 00000000", ErrMsgType},
		{"msg_type 7", "00000001 00000007 00000000 00000000 00000000 00000000", ErrMsgType},
		{"reply_stat 2", "00000001 00000001 00000002 00000000", ErrReplyStat},
		{"reject_stat 2", "00000001 00000001 00000001 00000002", ErrRejectStat},
		{"verf 401", "00000001 00000001 00000000 00000006 00000191", ErrTooLong},
		{"verf 2^32-1", "00000001 00000001 00000000 00000006 ffffffff", ErrTooLong},
		{"verf 400 short", "00000001 00000001 00000000 00000006 00000190 00000000", ErrShortBuffer},
	}
	for _, tt := range tests {
		var h ReplyHeader
		off, err := h.Unmarshal(unhex(t, tt.hex))
		if !errors.Is(err, tt.want) || off != 0 {
			t.Errorf("%s: off %d err = %v, want %v", tt.name, off, err, tt.want)
		}
	}
}

// TestReplyLenientEnums: accept_stat has a void default arm, and auth_stat
// values beyond the RFC's are carried, not rejected.
func TestReplyLenientEnums(t *testing.T) {
	var h ReplyHeader
	msg := unhex(t, "00000001 00000001 00000000 00000000 00000000 00000006")
	if off, err := h.Unmarshal(msg); err != nil || off != 24 || h.AcceptStat != 6 {
		t.Errorf("accept_stat 6: off %d err %v stat %v", off, err, h.AcceptStat)
	}
	msg = unhex(t, "00000001 00000001 00000001 00000001 00000063")
	if off, err := h.Unmarshal(msg); err != nil || off != 20 || h.AuthStat != 99 {
		t.Errorf("auth_stat 99: off %d err %v stat %v", off, err, h.AuthStat)
	}
}

// TestReplyReuseClearsFields: decoding into a used ReplyHeader leaves no
// field of the previous reply behind.
func TestReplyReuseClearsFields(t *testing.T) {
	h := ReplyHeader{XID: 1, Stat: MsgDenied, RejectStat: RejectAuthError, AuthStat: AuthTooWeak,
		Mismatch: Mismatch{7, 8}, Verf: OpaqueAuth{FlavorGSS, []byte{1}}, AcceptStat: AcceptSystemErr}
	msg := (&ReplyHeader{XID: 2, Stat: MsgAccepted}).Append(nil)
	if _, err := h.Unmarshal(msg); err != nil {
		t.Fatal(err)
	}
	want := ReplyHeader{XID: 2, Stat: MsgAccepted}
	if !replyEqual(&h, &want) {
		t.Fatalf("got %s, want %s", fmtReply(&h), fmtReply(&want))
	}
}

func randomReply(rng *rand.Rand) ReplyHeader {
	h := ReplyHeader{XID: rng.Uint32(), Stat: ReplyStat(rng.IntN(2))}
	if h.Stat == MsgAccepted {
		h.Verf = randomAuth(rng)
		h.AcceptStat = AcceptStat(rng.IntN(7)) // 6 is outside the RFC's list
		if h.AcceptStat == AcceptProgMismatch {
			h.Mismatch = Mismatch{rng.Uint32(), rng.Uint32()}
		}
		return h
	}
	h.RejectStat = RejectStat(rng.IntN(2))
	if h.RejectStat == RejectRPCMismatch {
		h.Mismatch = Mismatch{rng.Uint32(), rng.Uint32()}
	} else {
		h.AuthStat = AuthStat(rng.IntN(16))
	}
	return h
}

func TestReplyRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var got ReplyHeader
	for i := 0; i < 2000; i++ {
		h := randomReply(rng)
		msg := h.Append(nil)
		if len(msg) != h.EncodedLen() {
			t.Fatalf("%s: len %d != EncodedLen %d", fmtReply(&h), len(msg), h.EncodedLen())
		}
		msg = append(msg, 0xee, 0xee, 0xee, 0xee)
		off, err := got.Unmarshal(msg)
		if err != nil || off != h.EncodedLen() || !replyEqual(&got, &h) {
			t.Fatalf("round trip of %s: got %s off %d err %v", fmtReply(&h), fmtReply(&got), off, err)
		}
	}
}

func TestPeekXID(t *testing.T) {
	call := callVectors[1]
	xid, mt, err := PeekXID(unhex(t, call.hex))
	if err != nil || xid != call.hdr.XID || mt != MsgCall {
		t.Errorf("call: %#x %v %v", xid, mt, err)
	}
	xid, mt, err = PeekXID(unhex(t, replyVectors[0].hex))
	if err != nil || xid != replyVectors[0].hdr.XID || mt != MsgReply {
		t.Errorf("reply: %#x %v %v", xid, mt, err)
	}
	for n := 0; n < 8; n++ {
		if _, _, err := PeekXID(make([]byte, n)); !errors.Is(err, ErrShortBuffer) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
	xid, mt, err = PeekXID(unhex(t, "00000042 00000002"))
	if !errors.Is(err, ErrMsgType) || xid != 0x42 || mt != 2 {
		t.Errorf("msg_type 2: %#x %v %v", xid, mt, err)
	}
}
