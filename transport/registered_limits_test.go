package transport

import (
	"bytes"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// TestRegisteredLimits: a call that would take a responder's registered
// buffers over MemoryLimits.Registered (the connection's) or
// ListenerRegistered (the Listener's meter, shared with its other
// connections) is pulled into the connection's own memory instead, and
// read intact: counted in RegisterLimited, not in ReadChunksInPlace, and
// nothing over the bound is registered. Once there is room again, calls
// are pulled into the RPC server's buffers again, and the cache's count
// (Stats.Registered) falls to zero within seconds of idle.
func TestRegisteredLimits(t *testing.T) {
	b := testBinding{ddp: true}
	pool := &testCallBufs{} // 128 KiB buffers, registered whole
	const maxRPC = 160 << 10
	cl, srv := netconvPair(t, &Config{Binding: b, CallBuffers: pool, MaxRPCSize: maxRPC,
		Memory: MemoryLimits{Registered: maxRPC}}, &Config{Binding: b, MaxRPCSize: maxRPC})
	_ = srv.SetDeadline(time.Now().Add(30 * time.Second))
	xid := uint32(0)
	// exchange sends a 64 KiB WRITE and reads it, and reports whether it
	// was pulled into the pool's buffer.
	exchange := func() bool {
		t.Helper()
		xid++
		msg := writeCall(xid, 64<<10)
		if err := cl.WriteMsg(msg); err != nil {
			t.Fatal(err)
		}
		got, err := srv.ReadMsgAlloc(func(n int) []byte { return make([]byte, 0, n) })
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("call %d read as %d bytes that differ", xid, len(got))
		}
		lent := pool.isLent(got)
		if lent {
			pool.giveBack(got)
		}
		if err := srv.WriteMsg(appendReply(nil, xid)); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.ReadMsg(nil); err != nil {
			t.Fatal(err)
		}
		if r := srv.Stats().Registered; r > maxRPC {
			t.Fatalf("%d bytes registered, over MemoryLimits.Registered %d", r, maxRPC)
		}
		return lent
	}
	if !exchange() {
		t.Fatal("first call not pulled into the pool's buffer")
	}
	st := srv.Stats()
	if st.Registered != 128<<10 || st.RegisterLimited != 0 {
		t.Fatalf("Registered %d, RegisterLimited %d; want the buffer cached, 131072, 0", st.Registered, st.RegisterLimited)
	}

	// The connection's bound: 64 KiB held in use (as by a reply in
	// flight) leaves no room for a 128 KiB buffer once the cached one is
	// evicted.
	srv.mu.Lock()
	ep := srv.ep
	held, _, _, err := ep.regs.get(ep.vc.(verbs.Registrar), make([]byte, 64<<10))
	srv.unlock()
	if err != nil {
		t.Fatal(err)
	}
	if exchange() {
		t.Fatal("pulled into the pool's buffer over MemoryLimits.Registered")
	}
	st = srv.Stats()
	if st.RegisterLimited != 1 || st.Registered != 64<<10 {
		t.Fatalf("RegisterLimited %d, Registered %d; want 1, the 65536 held (the cached one evicted first)", st.RegisterLimited, st.Registered)
	}
	srv.mu.Lock()
	err = ep.regs.put(held)
	srv.unlock()
	if err != nil {
		t.Fatal(err)
	}
	if !exchange() {
		t.Fatal("not pulled into the pool's buffer once there was room")
	}

	// The Listener's bound: other connections hold all of it. A fresh
	// buffer (the cached one would be reused: it is counted already).
	pool.mu.Lock()
	pool.free = nil
	pool.mu.Unlock()
	meter := srv.svcState.listenerRegs
	inUse := meter.inUse()
	meter.used.Add(meter.limit)
	if exchange() {
		t.Fatal("pulled into the pool's buffer over MemoryLimits.ListenerRegistered")
	}
	if st := srv.Stats(); st.RegisterLimited != 2 || st.Registered != 0 {
		t.Fatalf("RegisterLimited %d, Registered %d; want 2, 0 (this connection's cached ones evicted first)", st.RegisterLimited, st.Registered)
	}
	meter.used.Add(-meter.limit)
	if !exchange() {
		t.Fatal("not pulled into the pool's buffer once the listener had room")
	}
	if got := meter.inUse(); got != int64(srv.Stats().Registered) || inUse == 0 {
		t.Fatalf("listener meter %d (before %d), connection's Registered %d", got, inUse, srv.Stats().Registered)
	}

	// Idle: the cached registration is released within two trim periods.
	netconvWaitFor(t, "the cached registration released", func() bool { return srv.Stats().Registered == 0 })
	if got := meter.inUse(); got != 0 {
		t.Fatalf("listener meter %d after idle, want 0", got)
	}
}
