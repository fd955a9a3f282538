//go:build e2eguest && linux && cgo

// The test in this file runs inside the project's Soft-RoCE VM, started by
// e2e/rdmacore_flood_test.go: issue 29's flood of half-open peers over
// rdma-core on rxe, from rxe1 (10.0.0.2) to a Listener on rxe0 (10.0.0.1),
// where the IB CM's own timers (REP retries) apply.

package transport

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// TestRdmacoreHalfOpenFlood: 1,000 half-open peers (rdmacore.DialHalfOpen:
// a REQ, then no RTU) from 8 goroutines against a Listener with the
// default settings; 10 real Dials after them must each connect and be
// served, within the handshake timeout. It prints the Dial latencies (the
// goal is under 1 s), and the heap and registered memory the flood adds:
// the heap bounded by haFloodHeapSlack, as on the soft provider, the
// registered memory by twice the backlog's worth of what one half-open
// handshake registers (measured first): the Listener's bound.
func TestRdmacoreHalfOpenFlood(t *testing.T) {
	prov := &rdmacore.Provider{}
	dialer := &rdmacore.Provider{LocalAddr: "10.0.0.2"}
	l, accepted := haListenAt(t, "10.0.0.1:0", Config{Provider: prov})
	addr := l.Addr().String()
	haDialsWith(t, l, dialer, accepted, 1)
	heap0 := haHeap()
	reg0 := prov.RegisteredBytes()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// What one half-open handshake keeps registered on rdma-core.
	waitHandshakes := func(n int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for l.Stats().Handshakes != n {
			if time.Now().After(deadline) {
				t.Fatalf("stats %+v: want %d handshakes in progress", l.Stats(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	one, err := rdmacore.DialHalfOpen(ctx, addr, "10.0.0.2", hpLinuxClientPD)
	if err != nil {
		t.Fatal(err)
	}
	// Its handshake counts from the request on; its buffers are
	// registered a moment later.
	waitHandshakes(1)
	deadline := time.Now().Add(time.Minute)
	for prov.RegisteredBytes() == reg0 {
		if time.Now().After(deadline) {
			t.Fatal("a half-open handshake registered nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	perHandshake := prov.RegisteredBytes() - reg0
	_ = one.Close()
	waitHandshakes(0)
	// The Listener's bound: the newest DefaultAcceptBacklog handshakes,
	// and as many evicted or timed out ones still ending.
	regBound := 2 * DefaultAcceptBacklog * perHandshake
	peers := make([]*rdmacore.HalfOpen, haFlood)
	defer func() {
		for _, h := range peers {
			if h != nil {
				_ = h.Close()
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < haFlood; i += 8 {
				h, err := rdmacore.DialHalfOpen(ctx, addr, "10.0.0.2", hpLinuxClientPD)
				if err != nil {
					t.Errorf("half-open peer %d: %v", i, err)
					return
				}
				peers[i] = h
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	sent := time.Since(start)
	// The requests reached the Listener: the newest hold the backlog,
	// the others were evicted (or, on a host slow enough, timed out). A
	// few may not reach it (1% allowed): the provider's own queue rejects
	// requests beyond 128 not yet taken, and the CM may drop one.
	deadline = time.Now().Add(time.Minute)
	for {
		st := l.Stats()
		if st.Handshakes == DefaultAcceptBacklog && st.Handshakes+int(st.HandshakesEvicted+st.HandshakeTimeouts+st.HandshakeFailures) >= haFlood*99/100 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("stats %+v: want %d handshakes in progress, the other %d requests evicted", st, DefaultAcceptBacklog, haFlood-DefaultAcceptBacklog)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	flooded := time.Since(start)
	heapFlood := haHeap()
	regFlood := prov.RegisteredBytes() - reg0
	if heapFlood > heap0+haFloodHeapSlack {
		t.Errorf("live heap %d B over idle during the flood, bound %d", heapFlood-heap0, haFloodHeapSlack)
	}
	if regFlood > regBound {
		t.Errorf("%d B registered over idle during the flood, bound %d (2 x %d handshakes x %d B)", regFlood, regBound, DefaultAcceptBacklog, perHandshake)
	}

	tokens := len(l.setups)
	inOrder := haDialsInOrder(t, l, dialer, accepted, 10)
	took := slices.Sorted(slices.Values(inOrder))
	t.Logf("FLOOD rdmacore: %d half-open peers sent in %v, all handled in %v; %d handshakes holding resources; 10 real Dials after them: min %v, median %v, max %v (in order: %v); live heap %+.1f MiB, registered %+.1f MiB over idle during the flood (one half-open handshake: %.2f MiB); stats %+v",
		haFlood, sent, flooded, tokens, took[0], took[len(took)/2], took[len(took)-1], inOrder,
		(float64(heapFlood)-float64(heap0))/(1<<20), float64(regFlood)/(1<<20), float64(perHandshake)/(1<<20), l.Stats())

	for i, h := range peers {
		_ = h.Close()
		peers[i] = nil
	}
	deadline = time.Now().Add(2 * time.Minute)
	for l.Stats().Handshakes != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("handshakes still in progress after the peers left: %+v", l.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := l.Stats()
	t.Logf("FLOOD rdmacore after the peers left: registered %+.1f MiB over idle; stats %+v",
		float64(prov.RegisteredBytes()-reg0)/(1<<20), st)
	if st.Accepted != 11 || st.RejectedBacklog != 0 || st.RejectedCap != 0 {
		t.Errorf("stats %+v: want 11 accepted, none rejected", st)
	}
}

// haDialsInOrder is haDialsWith returning the latencies in the order of the
// Dials.
func haDialsInOrder(t *testing.T, l *Listener, p verbs.Provider, accepted <-chan *Conn, n int) []time.Duration {
	t.Helper()
	var took []time.Duration
	for range n {
		took = append(took, haDialsWith(t, l, p, accepted, 1)...)
	}
	return took
}
