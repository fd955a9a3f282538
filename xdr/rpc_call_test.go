package xdr

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func authEqual(a, b OpaqueAuth) bool {
	return a.Flavor == b.Flavor && bytes.Equal(a.Body, b.Body)
}

func callEqual(a, b *CallHeader) bool {
	return a.XID == b.XID && a.RPCVers == b.RPCVers && a.Prog == b.Prog &&
		a.Vers == b.Vers && a.Proc == b.Proc &&
		authEqual(a.Cred, b.Cred) && authEqual(a.Verf, b.Verf)
}

func fmtCall(h *CallHeader) string {
	return fmt.Sprintf("{xid %#x vers %d prog %d/%d/%d cred %v %x verf %v %x}",
		h.XID, h.RPCVers, h.Prog, h.Vers, h.Proc, h.Cred.Flavor, h.Cred.Body, h.Verf.Flavor, h.Verf.Body)
}

func TestCallVectors(t *testing.T) {
	for _, v := range callVectors {
		t.Run(v.name, func(t *testing.T) {
			msg := unhex(t, v.hex)
			var h CallHeader
			off, err := h.Unmarshal(msg)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if off != v.argsOffset {
				t.Errorf("argsOffset = %d, want %d", off, v.argsOffset)
			}
			if !callEqual(&h, &v.hdr) {
				t.Errorf("decoded %s\nwant    %s", fmtCall(&h), fmtCall(&v.hdr))
			}
			enc := v.hdr.Append(nil)
			if !bytes.Equal(enc, msg[:v.argsOffset]) {
				t.Errorf("Append = %x\nwant     %x", enc, msg[:v.argsOffset])
			}
			if n := v.hdr.EncodedLen(); n != v.argsOffset {
				t.Errorf("EncodedLen = %d, want %d", n, v.argsOffset)
			}
		})
	}
}

// TestCallTruncated checks that every proper prefix of every valid call
// header fails with an error wrapping ErrShortBuffer.
func TestCallTruncated(t *testing.T) {
	for _, v := range callVectors {
		msg := unhex(t, v.hex)
		for n := 0; n < v.argsOffset; n++ {
			var h CallHeader
			if _, err := h.Unmarshal(msg[:n]); !errors.Is(err, ErrShortBuffer) {
				t.Errorf("%s: prefix %d/%d: err = %v, want ErrShortBuffer", v.name, n, v.argsOffset, err)
			}
		}
		var h CallHeader
		if off, err := h.Unmarshal(msg[:v.argsOffset]); err != nil || off != v.argsOffset {
			t.Errorf("%s: exact header: %d, %v", v.name, off, err)
		}
	}
}

func TestCallErrors(t *testing.T) {
	base := callVectors[0].hdr
	tests := []struct {
		name string
		msg  []byte
		want error
	}{
		{"reply given to call parser", (&ReplyHeader{XID: 1}).Append(nil), ErrMsgType},
		{"msg_type 2", []byte{0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2}, ErrMsgType},
		{"msg_type 1 in 8 bytes", []byte{0, 0, 0, 1, 0, 0, 0, 1}, ErrMsgType},
		{"rpcvers 3", (&CallHeader{XID: 9, RPCVers: 3}).Append(nil), ErrRPCVersion},
		{"rpcvers 1 truncated after it", (&CallHeader{XID: 9, RPCVers: 1}).Append(nil)[:12], ErrRPCVersion},
		{"cred 401 bytes", (&CallHeader{Cred: OpaqueAuth{FlavorGSS, make([]byte, 401)}}).Append(nil), ErrTooLong},
		{"verf 401 bytes", (&CallHeader{Verf: OpaqueAuth{FlavorGSS, make([]byte, 401)}}).Append(nil), ErrTooLong},
		{"cred length 2^32-1", append(base.Append(nil)[:24], 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff), ErrTooLong},
		{"cred length 400 but short", append(base.Append(nil)[:24], 0, 0, 0, 1, 0, 0, 1, 0x90, 1, 2), ErrShortBuffer},
	}
	for _, tt := range tests {
		var h CallHeader
		off, err := h.Unmarshal(tt.msg)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
		if err != nil && off != 0 {
			t.Errorf("%s: offset %d returned with an error", tt.name, off)
		}
	}
}

// TestCallRPCVersionKeepsXID checks what a server needs to answer
// RPC_MISMATCH: the xid and the version it was sent.
func TestCallRPCVersionKeepsXID(t *testing.T) {
	msg := (&CallHeader{XID: 0xabcdef01, RPCVers: 3, Prog: 100003}).Append(nil)
	h := CallHeader{Prog: 42, Cred: OpaqueAuth{FlavorSys, []byte{1}}}
	_, err := h.Unmarshal(msg)
	if !errors.Is(err, ErrRPCVersion) {
		t.Fatalf("err = %v, want ErrRPCVersion", err)
	}
	if h.XID != 0xabcdef01 || h.RPCVers != 3 {
		t.Errorf("XID %#x RPCVers %d, want 0xabcdef01 and 3", h.XID, h.RPCVers)
	}
	if h.Prog != 0 || h.Cred.Body != nil {
		t.Errorf("stale fields kept: %s", fmtCall(&h))
	}
}

func TestCallAuthLimit(t *testing.T) {
	for _, n := range []int{0, 1, 399, 400} {
		h := CallHeader{XID: 1, Cred: OpaqueAuth{FlavorGSS, bytes.Repeat([]byte{7}, n)},
			Verf: OpaqueAuth{FlavorGSS, bytes.Repeat([]byte{8}, n)}}
		msg := h.Append(nil)
		var got CallHeader
		off, err := got.Unmarshal(msg)
		if err != nil || off != len(msg) || len(got.Cred.Body) != n || len(got.Verf.Body) != n {
			t.Errorf("body %d: off %d err %v", n, off, err)
		}
	}
}

func TestCallAppendDefaultsVersion(t *testing.T) {
	msg := (&CallHeader{XID: 5}).Append(nil)
	if !bytes.Equal(msg[8:12], []byte{0, 0, 0, 2}) {
		t.Fatalf("rpcvers written as %x, want 00000002", msg[8:12])
	}
	pre := []byte("prefix")
	out := (&CallHeader{XID: 5}).Append(pre)
	if !bytes.Equal(out[:6], pre) || !bytes.Equal(out[6:], msg) {
		t.Fatalf("Append does not append")
	}
}

func randomAuth(rng *rand.Rand) OpaqueAuth {
	a := OpaqueAuth{Flavor: AuthFlavor(rng.IntN(8))}
	if rng.IntN(4) == 0 {
		a.Flavor = AuthFlavor(rng.Uint32())
	}
	n := rng.IntN(MaxAuthBytes + 1)
	if rng.IntN(2) == 0 {
		n = rng.IntN(9)
	}
	a.Body = make([]byte, n)
	for i := range a.Body {
		a.Body[i] = byte(rng.Uint32())
	}
	return a
}

func randomCall(rng *rand.Rand) CallHeader {
	return CallHeader{XID: rng.Uint32(), RPCVers: RPCVersion, Prog: rng.Uint32(), Vers: rng.Uint32(),
		Proc: rng.Uint32(), Cred: randomAuth(rng), Verf: randomAuth(rng)}
}

// TestCallRoundTripRandom: Append then Unmarshal gives the same header, the
// arguments offset equals EncodedLen, and trailing arguments are untouched.
func TestCallRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var got CallHeader
	for i := 0; i < 2000; i++ {
		h := randomCall(rng)
		msg := h.Append([]byte{})
		if len(msg) != h.EncodedLen() {
			t.Fatalf("len %d != EncodedLen %d", len(msg), h.EncodedLen())
		}
		msg = AppendUint32(msg, 0x5a5a5a5a) // an argument
		off, err := got.Unmarshal(msg)
		if err != nil || off != h.EncodedLen() || !callEqual(&got, &h) {
			t.Fatalf("round trip of %s: got %s off %d err %v", fmtCall(&h), fmtCall(&got), off, err)
		}
	}
}
