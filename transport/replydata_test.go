package transport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestReplyDataBeyondMaxRPC: a call whose reply may carry a DDP-eligible
// result larger than MaxRPCSize (a READ of count 0xffffffff, which once made
// the requester lay out and register 8 GiB of chunk memory) fails with
// ErrMessageTooLarge before anything is registered or offered, by Call,
// CallInto and WriteMsg alike, holding no credit or slot: the connection
// goes on carrying calls. A READ of exactly MaxRPCSize is still planned.
func TestReplyDataBeyondMaxRPC(t *testing.T) {
	const maxRPC = 64 << 10
	b := testBinding{ddp: true}
	p := newPair(t, &Config{Binding: b, MaxRPCSize: maxRPC}, &Config{Binding: b, MaxRPCSize: maxRPC, Credits: 2})
	prov := p.client.cfg.Provider
	ctx := context.Background()
	readOf := func(xid, n uint32) []byte { return xdr.AppendUint32(appendCall(nil, xid, procRead), n) }

	// Warm up the connection's memory with a call that needs no chunk.
	if got := p.call(t, 1, procEcho, xdr.AppendOpaque(nil, []byte("hi"))); !bytes.Equal(got, xdr.AppendOpaque(nil, []byte("hi"))) {
		t.Fatalf("echo: %x", got)
	}
	regBefore := registered(t, prov)
	statsBefore := p.client.Stats()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapBefore := ms.HeapAlloc

	dst := make([]byte, 4096)
	for i, n := range []uint32{0xffffffff, 1 << 31, maxRPC + 1} {
		xid := uint32(10 + 3*i)
		check := func(what string, err error) {
			t.Helper()
			var oe *net.OpError
			if !errors.Is(err, ErrMessageTooLarge) || !errors.As(err, &oe) {
				t.Fatalf("%s of a READ of %d: err = %v, want ErrMessageTooLarge in a *net.OpError", what, n, err)
			}
		}
		_, err := p.client.Call(ctx, readOf(xid, n), nil)
		check("Call", err)
		_, _, err = p.client.CallInto(ctx, readOf(xid+1, n), nil, dst)
		check("CallInto", err)
		check("WriteMsg", p.client.WriteMsg(readOf(xid+2, n)))
	}
	if got := registered(t, prov); got != regBefore {
		t.Errorf("registered %d bytes, %d before the refused calls", got, regBefore)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if grew := int64(ms.HeapAlloc) - int64(heapBefore); grew > 4<<20 {
		t.Errorf("heap grew by %d bytes", grew)
	}
	s := p.client.Stats()
	if s.ChunkBytesOffered != statsBefore.ChunkBytesOffered || s.WriteChunks != statsBefore.WriteChunks || s.Sends != statsBefore.Sends {
		t.Errorf("stats moved: %+v, before %+v", s, statsBefore)
	}

	// No credit or slot was kept (2 credits, 9 refused calls): the
	// connection carries calls, a READ of MaxRPCSize included.
	for i := range 4 {
		if got := p.call(t, uint32(100+i), procEcho, xdr.AppendOpaque(nil, []byte("again"))); !bytes.Equal(got, xdr.AppendOpaque(nil, []byte("again"))) {
			t.Fatalf("echo after the refused calls: %x", got)
		}
	}
	const n = maxRPC - 64 // what the test server's reply can carry
	got := p.call(t, 200, procRead, xdr.AppendUint32(nil, n))
	if want := xdr.AppendOpaque(nil, pattern(n, 200)); !bytes.Equal(got, want) {
		t.Fatalf("READ of %d bytes: reply differs", n)
	}
	if _, err := p.client.Call(ctx, readOf(201, maxRPC), nil); errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("a READ of exactly MaxRPCSize was refused: %v", err)
	}
}
