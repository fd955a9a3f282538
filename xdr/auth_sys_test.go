package xdr

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func authSysEqual(a, b *AuthSys) bool {
	return a.Stamp == b.Stamp && bytes.Equal(a.MachineName, b.MachineName) &&
		a.UID == b.UID && a.GID == b.GID && slices.Equal(a.GIDs, b.GIDs)
}

func TestAuthSysVector(t *testing.T) {
	body := unhex(t, authSysBodyHex)
	want := AuthSys{Stamp: 1, MachineName: []byte("client"), UID: 1000, GID: 1000, GIDs: []uint32{1000, 10}}
	var a AuthSys
	if err := a.Unmarshal(body); err != nil {
		t.Fatal(err)
	}
	if !authSysEqual(&a, &want) {
		t.Fatalf("got %+v, want %+v", a, want)
	}
	if enc := want.Append(nil); !bytes.Equal(enc, body) {
		t.Fatalf("Append = %x, want %x", enc, body)
	}
	if want.EncodedLen() != len(body) {
		t.Fatalf("EncodedLen %d, want %d", want.EncodedLen(), len(body))
	}
	// Through the credential of the call vector.
	var h CallHeader
	if _, err := h.Unmarshal(unhex(t, callVectors[1].hex)); err != nil {
		t.Fatal(err)
	}
	var b AuthSys
	if err := h.Cred.AuthSys(&b); err != nil || !authSysEqual(&b, &want) {
		t.Fatalf("Cred.AuthSys: %+v, %v", b, err)
	}
	if err := h.Verf.AuthSys(&b); !errors.Is(err, ErrAuthFlavor) {
		t.Fatalf("Verf (AUTH_NONE).AuthSys: %v, want ErrAuthFlavor", err)
	}
	cred := want.OpaqueAuth(make([]byte, 0, MaxAuthBytes))
	if cred.Flavor != FlavorSys || !bytes.Equal(cred.Body, body) {
		t.Fatalf("OpaqueAuth = %v %x", cred.Flavor, cred.Body)
	}
}

func TestAuthSysLimits(t *testing.T) {
	ok := func(a AuthSys) {
		t.Helper()
		var got AuthSys
		if err := got.Unmarshal(a.Append(nil)); err != nil || !authSysEqual(&got, &a) {
			t.Errorf("%d-byte name, %d gids: %v", len(a.MachineName), len(a.GIDs), err)
		}
	}
	fail := func(a AuthSys, want error) {
		t.Helper()
		var got AuthSys
		if err := got.Unmarshal(a.Append(nil)); !errors.Is(err, want) {
			t.Errorf("%d-byte name, %d gids: err %v, want %v", len(a.MachineName), len(a.GIDs), err, want)
		}
	}
	ok(AuthSys{MachineName: make([]byte, 255), GIDs: make([]uint32, 16)})
	ok(AuthSys{})
	fail(AuthSys{MachineName: make([]byte, 256)}, ErrTooLong)
	fail(AuthSys{GIDs: make([]uint32, 17)}, ErrTooLong)
	// The largest legal body fits in MAX_AUTH_BYTES.
	max := AuthSys{MachineName: make([]byte, 255), GIDs: make([]uint32, 16)}
	if n := max.EncodedLen(); n > MaxAuthBytes {
		t.Errorf("largest AUTH_SYS body is %d bytes, over %d", n, MaxAuthBytes)
	}
}

func TestAuthSysMalformed(t *testing.T) {
	body := unhex(t, authSysBodyHex)
	var a AuthSys
	for n := 0; n < len(body); n++ {
		if err := a.Unmarshal(body[:n]); !errors.Is(err, ErrShortBuffer) {
			t.Errorf("prefix %d/%d: err %v, want ErrShortBuffer", n, len(body), err)
		}
	}
	if err := a.Unmarshal(append(body[:len(body):len(body)], 0, 0, 0, 0)); !errors.Is(err, ErrTrailingData) {
		t.Errorf("trailing word: err %v, want ErrTrailingData", err)
	}
	// A gid count of 2^32-1 with no gids: rejected by the limit, before
	// any allocation.
	huge := unhex(t, "00000000 00000000 00000000 00000000 ffffffff")
	if err := a.Unmarshal(huge); !errors.Is(err, ErrTooLong) {
		t.Errorf("gid count 2^32-1: err %v", err)
	}
	// A count of 16 with 15 gids present.
	short := append(unhex(t, "00000000 00000000 00000000 00000000 00000010"), make([]byte, 60)...)
	if err := a.Unmarshal(short); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("16 gids announced, 15 present: err %v", err)
	}
}

// TestAuthSysReusesGIDs: the GIDs slice is reused once large enough.
func TestAuthSysReusesGIDs(t *testing.T) {
	var a AuthSys
	if err := a.Unmarshal((&AuthSys{GIDs: []uint32{1, 2, 3}}).Append(nil)); err != nil {
		t.Fatal(err)
	}
	if cap(a.GIDs) != MaxAuthSysGIDs {
		t.Fatalf("first allocation has cap %d, want %d", cap(a.GIDs), MaxAuthSysGIDs)
	}
	p := &a.GIDs[:1][0]
	if err := a.Unmarshal((&AuthSys{GIDs: make([]uint32, 16)}).Append(nil)); err != nil {
		t.Fatal(err)
	}
	if &a.GIDs[0] != p || len(a.GIDs) != 16 {
		t.Fatalf("GIDs reallocated")
	}
	if err := a.Unmarshal((&AuthSys{}).Append(nil)); err != nil || len(a.GIDs) != 0 {
		t.Fatalf("empty gids: len %d, %v", len(a.GIDs), err)
	}
}

func randomAuthSys(rng *rand.Rand) AuthSys {
	a := AuthSys{Stamp: rng.Uint32(), UID: rng.Uint32(), GID: rng.Uint32(),
		MachineName: make([]byte, rng.IntN(MaxMachineNameLen+1)), GIDs: make([]uint32, rng.IntN(MaxAuthSysGIDs+1))}
	for i := range a.MachineName {
		a.MachineName[i] = byte('a' + rng.IntN(26))
	}
	for i := range a.GIDs {
		a.GIDs[i] = rng.Uint32()
	}
	return a
}

func TestAuthSysRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var got AuthSys
	for i := 0; i < 1000; i++ {
		a := randomAuthSys(rng)
		body := a.Append(nil)
		if len(body) != a.EncodedLen() {
			t.Fatalf("len %d != EncodedLen %d", len(body), a.EncodedLen())
		}
		if err := got.Unmarshal(body); err != nil || !authSysEqual(&got, &a) {
			t.Fatalf("round trip: %+v -> %+v, %v", a, got, err)
		}
	}
}

func TestOpaqueAuthDecode(t *testing.T) {
	a := OpaqueAuth{Flavor: FlavorDH, Body: []byte{1, 2, 3, 4, 5}}
	b := a.Append(nil)
	if len(b) != a.EncodedLen() || len(b) != 16 {
		t.Fatalf("encoded %d bytes, EncodedLen %d", len(b), a.EncodedLen())
	}
	r := NewReader(b)
	var got OpaqueAuth
	if err := got.Decode(&r); err != nil || !authEqual(got, a) || r.Offset() != 16 {
		t.Fatalf("Decode: %v %x, %v, offset %d", got.Flavor, got.Body, err, r.Offset())
	}
	// Errors leave the cursor and the destination untouched.
	for n := 0; n < len(b); n++ {
		r := NewReader(b[:n])
		got := OpaqueAuth{Flavor: 99}
		if err := got.Decode(&r); !errors.Is(err, ErrShortBuffer) || r.Offset() != 0 || got.Flavor != 99 {
			t.Errorf("prefix %d: err %v offset %d flavor %v", n, err, r.Offset(), got.Flavor)
		}
	}
	long := OpaqueAuth{Flavor: FlavorGSS, Body: make([]byte, MaxAuthBytes+1)}.Append(nil)
	r = NewReader(long)
	if err := got.Decode(&r); !errors.Is(err, ErrTooLong) || r.Offset() != 0 {
		t.Errorf("401-byte body: err %v offset %d", err, r.Offset())
	}
}
