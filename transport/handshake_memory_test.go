package transport

import (
	"context"
	"sync"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// TestHandshakeLimits: ListenerLimits.Handshakes follows from
// Config.HandshakeMemory and the registered size of one handshake, at
// least 1 and at most the backlog; Config.ListenerLimits says so without
// listening.
func TestHandshakeLimits(t *testing.T) {
	const half = 512 << 10 // 64 credits x (4 KiB + 4 KiB)
	for _, tc := range []struct {
		name             string
		cfg              Config
		per, mem, shakes int
	}{
		{"defaults", Config{}, half, DefaultHandshakeMemory, DefaultAcceptBacklog},
		{"8 MiB", Config{HandshakeMemory: 8 << 20}, half, 8 << 20, 8},
		{"backlog below the budget", Config{AcceptBacklog: 16}, half, DefaultHandshakeMemory, 16},
		{"backlog above the budget", Config{AcceptBacklog: 65535}, half, DefaultHandshakeMemory, 128},
		{"more credits", Config{Credits: 1024}, 8 << 20, DefaultHandshakeMemory, 8},
		{"larger inline", Config{InlineSend: 16 << 10, InlineRecv: 16 << 10}, 2 << 20, DefaultHandshakeMemory, 32},
		{"no private data", Config{NoPrivateData: true, AcceptBacklog: 1024}, 64 * 2048, DefaultHandshakeMemory, 512},
		{"one that does not fit", Config{Credits: MaxCredits, InlineSend: 256 << 10, InlineRecv: 256 << 10}, 8 << 30, DefaultHandshakeMemory, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := tc.cfg.ListenerLimits()
			if lim.HandshakeBytes != tc.per || lim.HandshakeMemory != tc.mem || lim.Handshakes != tc.shakes {
				t.Fatalf("limits %+v: want %d bytes a handshake, a budget of %d, %d handshakes", lim, tc.per, tc.mem, tc.shakes)
			}
		})
	}
	cfg := Config{Provider: &soft.Provider{}, HandshakeMemory: 8 << 20}
	l, err := Listen("127.0.0.1:0", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if got, want := l.Limits(), cfg.ListenerLimits(); got != want {
		t.Errorf("Listener.Limits %+v, Config.ListenerLimits %+v", got, want)
	}
}

// TestHandshakeMemoryBound (issue 36): with HandshakeMemory 8 MiB (8
// handshakes of 0.5 MiB in progress, and as many ending) and the default
// backlog of 128, a flood of 200 half-open peers holds 8 handshakes, and
// never more than 8 MiB registered, the newer requests evicting the older
// ones; a real Dial after them gets in.
func TestHandshakeMemoryBound(t *testing.T) {
	const (
		budget = 8 << 20
		peers  = 200
	)
	before := hpGoroutines()
	t.Cleanup(func() { hpCheckLeaks(t, before) })
	l, accepted := haListen(t, Config{HandshakeMemory: budget})
	haDials(t, l, accepted, 1)
	prov := l.cfg.Provider.(*soft.Provider)
	reg0 := prov.RegisteredBytes()
	limit := l.Limits().Handshakes
	if limit != 8 {
		t.Fatalf("limits %+v: want 8 handshakes", l.Limits())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*hpGuard)
	defer cancel()
	var mu sync.Mutex
	var open []*soft.HalfOpen
	defer func() {
		for _, h := range open {
			_ = h.Close()
		}
	}()
	var peak int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < peers; i += 4 {
				h, err := soft.DialHalfOpen(ctx, l.Addr().String(), hpLinuxClientPD)
				if err != nil {
					t.Errorf("half-open peer %d: %v", i, err)
					return
				}
				mu.Lock()
				open = append(open, h)
				mu.Unlock()
				_ = h.Await(ctx) // an accept, or its end once evicted
				mu.Lock()
				peak = max(peak, prov.RegisteredBytes()-reg0)
				if n := l.Stats().Handshakes; n > limit {
					t.Errorf("%d handshakes in progress, bound %d", n, limit)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if !haWait(func() bool { return l.Stats().Handshakes == limit }) {
		t.Fatalf("stats %+v: want %d handshakes in progress", l.Stats(), limit)
	}
	st := l.Stats()
	if st.HandshakesEvicted < peers-uint64(limit)-uint64(st.HandshakeTimeouts) {
		t.Errorf("stats %+v: want the newer requests to evict the older", st)
	}
	if peak > budget {
		t.Errorf("%d B registered over idle during the flood, budget %d", peak, budget)
	}
	haDials(t, l, accepted, 1)
	t.Logf("flood of %d half-open peers against a handshake budget of %d MiB: peak %.1f MiB registered, %d evicted",
		peers, budget>>20, float64(peak)/(1<<20), st.HandshakesEvicted)
}
