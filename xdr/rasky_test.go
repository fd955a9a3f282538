package xdr

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	rasky "github.com/rasky/go-xdr/xdr2"
)

// Mirror types of the RFC 5531 structures for github.com/rasky/go-xdr, a
// reflection-based XDR codec used here as an independent implementation.

type rkAuth struct {
	Flavor uint32
	Body   []byte
}

type rkCall struct {
	XID, MsgType, RPCVers, Prog, Vers, Proc uint32
	Cred, Verf                              rkAuth
}

type rkMismatch struct{ Low, High uint32 }

type rkAccepted struct {
	Verf     rkAuth
	Stat     uint32     `xdr:"union"`
	Mismatch rkMismatch `xdr:"unioncase=2"`
}

type rkRejected struct {
	Stat     uint32     `xdr:"union"`
	Mismatch rkMismatch `xdr:"unioncase=0"`
	AuthStat uint32     `xdr:"unioncase=1"`
}

type rkReply struct {
	XID, MsgType uint32
	Stat         uint32     `xdr:"union"`
	Accepted     rkAccepted `xdr:"unioncase=0"`
	Rejected     rkRejected `xdr:"unioncase=1"`
}

type rkAuthSys struct {
	Stamp       uint32
	MachineName string
	UID, GID    uint32
	GIDs        []uint32
}

func rkMarshal(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := rasky.Marshal(&buf, v); err != nil {
		t.Fatalf("rasky.Marshal: %v", err)
	}
	return buf.Bytes()
}

func rkUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	n, err := rasky.Unmarshal(bytes.NewReader(b), v)
	if err != nil {
		t.Fatalf("rasky.Unmarshal: %v", err)
	}
	if n != len(b) {
		t.Fatalf("rasky.Unmarshal consumed %d of %d bytes", n, len(b))
	}
}

func TestRaskyCall(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 300; i++ {
		h := randomCall(rng)
		rk := rkCall{XID: h.XID, MsgType: 0, RPCVers: h.RPCVers, Prog: h.Prog, Vers: h.Vers, Proc: h.Proc,
			Cred: rkAuth{uint32(h.Cred.Flavor), h.Cred.Body}, Verf: rkAuth{uint32(h.Verf.Flavor), h.Verf.Body}}

		// rasky encodes, we decode.
		var got CallHeader
		off, err := got.Unmarshal(rkMarshal(t, &rk))
		if err != nil || !callEqual(&got, &h) || off != h.EncodedLen() {
			t.Fatalf("decode of rasky encoding: %s, off %d, %v; want %s", fmtCall(&got), off, err, fmtCall(&h))
		}
		// We encode, rasky decodes.
		var back rkCall
		rkUnmarshal(t, h.Append(nil), &back)
		if back.XID != h.XID || back.MsgType != 0 || back.RPCVers != 2 || back.Prog != h.Prog ||
			back.Vers != h.Vers || back.Proc != h.Proc ||
			back.Cred.Flavor != uint32(h.Cred.Flavor) || !bytes.Equal(back.Cred.Body, h.Cred.Body) ||
			back.Verf.Flavor != uint32(h.Verf.Flavor) || !bytes.Equal(back.Verf.Body, h.Verf.Body) {
			t.Fatalf("rasky decode of %s: %+v", fmtCall(&h), back)
		}
	}
}

func TestRaskyReply(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for i := 0; i < 300; i++ {
		h := randomReply(rng)
		rk := rkReply{XID: h.XID, MsgType: 1, Stat: uint32(h.Stat)}
		if h.Stat == MsgAccepted {
			rk.Accepted = rkAccepted{Verf: rkAuth{uint32(h.Verf.Flavor), h.Verf.Body},
				Stat: uint32(h.AcceptStat), Mismatch: rkMismatch(h.Mismatch)}
		} else {
			rk.Rejected = rkRejected{Stat: uint32(h.RejectStat), Mismatch: rkMismatch(h.Mismatch),
				AuthStat: uint32(h.AuthStat)}
		}
		var got ReplyHeader
		off, err := got.Unmarshal(rkMarshal(t, &rk))
		if err != nil || !replyEqual(&got, &h) || off != h.EncodedLen() {
			t.Fatalf("decode of rasky encoding: %s, off %d, %v; want %s", fmtReply(&got), off, err, fmtReply(&h))
		}
		var back rkReply
		rkUnmarshal(t, h.Append(nil), &back)
		back.Accepted.Verf.Body = nonNil(back.Accepted.Verf.Body)
		rk.Accepted.Verf.Body = nonNil(rk.Accepted.Verf.Body)
		if !rkReplyEqual(back, rk) {
			t.Fatalf("rasky decode of %s: %+v, want %+v", fmtReply(&h), back, rk)
		}
	}
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func rkReplyEqual(a, b rkReply) bool {
	return a.XID == b.XID && a.MsgType == b.MsgType && a.Stat == b.Stat &&
		a.Accepted.Verf.Flavor == b.Accepted.Verf.Flavor && bytes.Equal(a.Accepted.Verf.Body, b.Accepted.Verf.Body) &&
		a.Accepted.Stat == b.Accepted.Stat && a.Accepted.Mismatch == b.Accepted.Mismatch &&
		a.Rejected == b.Rejected
}

func TestRaskyAuthSys(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for i := 0; i < 300; i++ {
		a := randomAuthSys(rng)
		rk := rkAuthSys{Stamp: a.Stamp, MachineName: string(a.MachineName), UID: a.UID, GID: a.GID, GIDs: a.GIDs}
		var got AuthSys
		if err := got.Unmarshal(rkMarshal(t, &rk)); err != nil || !authSysEqual(&got, &a) {
			t.Fatalf("decode of rasky encoding: %+v, %v; want %+v", got, err, a)
		}
		var back rkAuthSys
		rkUnmarshal(t, a.Append(nil), &back)
		if back.Stamp != a.Stamp || back.MachineName != string(a.MachineName) || back.UID != a.UID ||
			back.GID != a.GID || !slices.Equal(back.GIDs, a.GIDs) {
			t.Fatalf("rasky decode of %+v: %+v", a, back)
		}
	}
}

// TestRaskyPrimitives cross-checks the Append functions and Reader on
// random values of every primitive type.
func TestRaskyPrimitives(t *testing.T) {
	type prims struct {
		U32 uint32
		I32 int32
		U64 uint64
		I64 int64
		B   bool
		Op  []byte
		S   string
		Fix [7]byte
	}
	rng := rand.New(rand.NewPCG(17, 18))
	for i := 0; i < 300; i++ {
		p := prims{U32: rng.Uint32(), I32: int32(rng.Uint32()), U64: rng.Uint64(), I64: int64(rng.Uint64()),
			B: rng.IntN(2) == 1, Op: make([]byte, rng.IntN(30)), S: string(make([]byte, rng.IntN(30)))}
		for j := range p.Op {
			p.Op[j] = byte(rng.Uint32())
		}
		for j := range p.Fix {
			p.Fix[j] = byte(rng.Uint32())
		}
		var b []byte
		b = AppendUint32(b, p.U32)
		b = AppendInt32(b, p.I32)
		b = AppendUint64(b, p.U64)
		b = AppendInt64(b, p.I64)
		b = AppendBool(b, p.B)
		b = AppendOpaque(b, p.Op)
		b = AppendString(b, p.S)
		b = AppendFixedOpaque(b, p.Fix[:])
		if want := rkMarshal(t, &p); !bytes.Equal(b, want) {
			t.Fatalf("Append* = %x\nrasky    %x", b, want)
		}
		r := NewReader(b)
		u32, _ := r.Uint32()
		i32, _ := r.Int32()
		u64, _ := r.Uint64()
		i64, _ := r.Int64()
		bo, _ := r.Bool()
		op, _ := r.Opaque(30)
		s, _ := r.String(30)
		fix, err := r.FixedOpaque(7)
		if err != nil || u32 != p.U32 || i32 != p.I32 || u64 != p.U64 || i64 != p.I64 || bo != p.B ||
			!bytes.Equal(op, p.Op) || string(s) != p.S || !bytes.Equal(fix, p.Fix[:]) || r.Len() != 0 {
			t.Fatalf("Reader disagrees with rasky on %+v (err %v)", p, err)
		}
	}
}
