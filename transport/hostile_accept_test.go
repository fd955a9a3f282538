package transport

// The hostile-peer suite's connection-setup cases (issue 9, defect 1):
// peers that send connection requests and never complete the handshake
// must not stall or exhaust our Listener. A half-open peer is
// soft.DialHalfOpen: a connect request with private data, then silence.

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// haFlood is the number of half-open peers of the flood.
const haFlood = 1000

// haListen listens with cfg (on the soft provider) and runs an Accept loop
// that hands the connections out on the returned channel; Close of the
// Listener ends the loop, and cleanup closes every connection accepted.
func haListen(t *testing.T, cfg Config) (*Listener, <-chan *Conn) {
	t.Helper()
	cfg.Provider = &soft.Provider{}
	l, err := Listen("127.0.0.1:0", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan *Conn, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.AcceptRDMA()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for {
			select {
			case c := <-accepted:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return l, accepted
}

// haDial dials l as a real requester, within guard.
func haDial(l *Listener, guard time.Duration) (*Conn, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	start := time.Now()
	c, err := Dial(ctx, l.Addr().String(), &Config{Provider: &soft.Provider{}})
	return c, time.Since(start), err
}

// haWait waits, within hpGuard, until cond holds, and reports whether it
// did.
func haWait(cond func() bool) bool {
	deadline := time.Now().Add(hpGuard)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// haHeap returns the live Go heap after a collection.
func haHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// haCheckHeap fails t unless the live heap comes back to within slack of
// base (within hpGuard: the last connections are freed asynchronously).
func haCheckHeap(t *testing.T, base, slack uint64) uint64 {
	t.Helper()
	var h uint64
	if !haWait(func() bool { h = haHeap(); return h <= base+slack }) {
		t.Errorf("live heap %d B, baseline %d B: %d B more, bound %d", h, base, h-base, slack)
	}
	return h
}

// haRoundTrip makes one call on c, served by srv.
func haRoundTrip(t *testing.T, c, srv *Conn) {
	t.Helper()
	served := make(chan error, 1)
	go func() { served <- hpServe(srv) }()
	_ = c.SetDeadline(time.Now().Add(hpGuard))
	call := hpRPCCall(7, 0, []byte("ping"))
	if err := c.WriteMsg(call); err != nil {
		t.Fatalf("call: %v", err)
	}
	if _, err := c.ReadMsg(nil); err != nil {
		t.Fatalf("reply: %v", err)
	}
	_ = srv.Close()
	<-served
}

// TestAcceptHalfOpenFlood: 1,000 half-open peers, from 8 goroutines, each
// get their accept at once (none waits behind another's handshake) and
// hold a handshake in progress; a real requester still connects in under
// a second, and once the peers are gone the Listener is back to its idle
// goroutines and heap.
func TestAcceptHalfOpenFlood(t *testing.T) {
	before := hpGoroutines()
	t.Cleanup(func() { hpCheckLeaks(t, before) }) // runs last
	// A backlog with room for the flood: the backlog's own bound is
	// TestAcceptBacklog's.
	l, accepted := haListen(t, Config{AcceptBacklog: haFlood + 100})
	addr := l.Addr().String()

	// Warm up (one real connection), then take the idle baselines.
	c, _, err := haDial(l, hpGuard)
	if err != nil {
		t.Fatal(err)
	}
	haRoundTrip(t, c, <-accepted)
	_ = c.Close()
	idle := hpGoroutines()
	heap0 := haHeap()

	ctx, cancel := context.WithTimeout(context.Background(), 4*hpGuard)
	defer cancel()
	peers := make([]*soft.HalfOpen, haFlood)
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
				h, err := soft.DialHalfOpen(ctx, addr, hpLinuxClientPD)
				if err != nil {
					t.Errorf("half-open peer %d: %v", i, err)
					return
				}
				peers[i] = h
				// The accept (REP) says the handshake is in
				// progress; it never comes if the Listener
				// handshakes one at a time.
				actx, acancel := context.WithTimeout(ctx, 2*time.Second)
				err = h.Await(actx)
				acancel()
				if err != nil {
					t.Errorf("half-open peer %d: no accept: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	flooded := time.Since(start)
	if st := l.Stats(); st.Handshakes != haFlood {
		t.Errorf("%d half-open handshakes in progress, want %d (stats %+v)", st.Handshakes, haFlood, st)
	}
	heapFlood := haHeap()
	if t.Failed() {
		t.FailNow()
	}

	c, took, err := haDial(l, 5*time.Second)
	if err != nil {
		t.Fatalf("a real Dial during the flood failed after %v: %v", took, err)
	}
	if took > time.Second {
		t.Errorf("a real Dial during the flood took %v, want under 1s", took)
	}
	select {
	case srv := <-accepted:
		haRoundTrip(t, c, srv)
	case <-time.After(hpGuard):
		t.Fatal("the real connection was not accepted")
	}
	_ = c.Close()

	t.Logf("flood of %d half-open peers held in %v; real Dial during it: %v; live heap %.1f MiB over idle during the flood",
		haFlood, flooded, took, float64(heapFlood-heap0)/(1<<20))

	// The peers leave: their handshakes fail, and everything they held
	// is freed.
	for i, h := range peers {
		_ = h.Close()
		peers[i] = nil
	}
	if !haWait(func() bool { return l.Stats().Handshakes == 0 }) {
		t.Errorf("handshakes still in progress: %+v", l.Stats())
	}
	checkLeaks(t, idle, hpGuard)
	heap1 := haCheckHeap(t, heap0, 2<<20)
	st := l.Stats()
	t.Logf("after the flood: live heap %+d B against idle; stats %+v", int64(heap1)-int64(heap0), st)
	// Each peer's handshake fails when it leaves, or times out before
	// (HandshakeTimeout) where a loaded host stretched the test past it:
	// a handshake that ended either way, never a connection.
	if st.HandshakeFailures+st.HandshakeTimeouts != haFlood || st.RejectedBacklog != 0 || st.RejectedCap != 0 || st.Accepted != 2 || st.Conns != 0 {
		t.Errorf("stats %+v: want %d handshakes failed or timed out, 2 accepted, no reject, no connection", st, haFlood)
	}
}

// haExpectRejected checks that a Dial that took took failed at once with
// a reject.
func haExpectRejected(t *testing.T, what string, took time.Duration, err error) {
	t.Helper()
	var rej *verbs.RejectedError
	var oe *net.OpError
	switch {
	case err == nil:
		t.Fatalf("%s: connected, want a reject", what)
	case !errors.Is(err, verbs.ErrRejected) || !errors.As(err, &rej) || !errors.As(err, &oe):
		t.Fatalf("%s: %v, want a *net.OpError wrapping a *verbs.RejectedError", what, err)
	case took > time.Second:
		t.Errorf("%s: rejected after %v, want at once", what, took)
	}
}

// TestAcceptConnCap: with MaxConns 2, the third Dial is rejected at once;
// after Close of an accepted connection the next Dial succeeds.
func TestAcceptConnCap(t *testing.T) {
	before := hpGoroutines()
	t.Cleanup(func() { hpCheckLeaks(t, before) })
	l, accepted := haListen(t, Config{MaxConns: 2})
	var clients []*Conn
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	var srvs []*Conn
	for range 2 {
		c, _, err := haDial(l, hpGuard)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		srvs = append(srvs, <-accepted)
	}
	_, took, err := haDial(l, 5*time.Second)
	haExpectRejected(t, "third Dial", took, err)
	if st := l.Stats(); st.RejectedCap != 1 || st.Conns != 2 {
		t.Errorf("stats %+v: want 1 rejected for the cap, 2 connections", st)
	}

	// A connection whose peer left still holds its place until it is
	// closed.
	_ = clients[0].Close()
	_ = srvs[0].SetReadDeadline(time.Now().Add(hpGuard))
	if _, err := srvs[0].ReadMsg(nil); err == nil {
		t.Fatal("the server side of a closed connection read a message")
	}
	_, took, err = haDial(l, 5*time.Second)
	haExpectRejected(t, "Dial with a dead but open connection", took, err)

	_ = srvs[0].Close()
	if st := l.Stats(); st.Conns != 1 {
		t.Errorf("stats %+v after Close: want 1 connection", st)
	}
	c, took, err := haDial(l, 5*time.Second)
	if err != nil {
		t.Fatalf("Dial after Close of a connection: %v (after %v)", err, took)
	}
	clients = append(clients, c)
	srv := <-accepted
	haRoundTrip(t, c, srv)
	_ = srvs[1].Close()
	if st := l.Stats(); st.Conns != 0 {
		t.Errorf("stats %+v: want no connection", st)
	}
	if st := l.Stats(); st.RejectedCap != 2 || st.Accepted != 3 {
		t.Errorf("stats %+v: want 2 rejected for the cap, 3 accepted", st)
	}
}

// TestAcceptBacklog: with AcceptBacklog 4, two half-open handshakes and two
// connections nobody Accepted yet fill the backlog; a request beyond it is
// rejected at once, not after the handshake timeout. The half-open
// handshakes time out and free their places; Accept frees the others;
// Close closes the connections nobody took.
func TestAcceptBacklog(t *testing.T) {
	before := hpGoroutines()
	t.Cleanup(func() { hpCheckLeaks(t, before) })
	const timeout = 2 * time.Second
	l, err := Listen("127.0.0.1:0", &Config{Provider: &soft.Provider{}, AcceptBacklog: 4, HandshakeTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	addr := l.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
	defer cancel()
	var clients []*Conn
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()

	halfStart := time.Now()
	for range 2 {
		h, err := soft.DialHalfOpen(ctx, addr, hpLinuxClientPD)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = h.Close() }()
		if err := h.Await(ctx); err != nil {
			t.Fatalf("half-open peer: no accept: %v", err)
		}
	}
	for range 2 {
		c, _, err := haDial(l, 5*time.Second)
		if err != nil {
			t.Fatalf("Dial into the backlog: %v", err)
		}
		clients = append(clients, c)
	}
	// A Dial returns once it sent its confirmation (RTU); the Listener
	// has it a moment later.
	if !haWait(func() bool { st := l.Stats(); return st.Handshakes == 2 && st.Queued == 2 }) {
		t.Errorf("stats %+v: want 2 handshakes and 2 queued", l.Stats())
	}

	_, took, err := haDial(l, 5*time.Second)
	haExpectRejected(t, "Dial beyond the backlog", took, err)
	h, err := soft.DialHalfOpen(ctx, addr, hpLinuxClientPD)
	if err != nil {
		t.Fatal(err)
	}
	var rej *verbs.RejectedError
	if err := h.Await(ctx); !errors.As(err, &rej) {
		t.Errorf("half-open peer beyond the backlog: %v, want a reject", err)
	}
	_ = h.Close()
	if st := l.Stats(); st.RejectedBacklog != 2 {
		t.Errorf("stats %+v: want 2 rejected for the backlog", st)
	}

	// The half-open handshakes time out.
	if !haWait(func() bool { return l.Stats().HandshakeTimeouts == 2 }) {
		t.Fatalf("stats %+v: want 2 handshake timeouts", l.Stats())
	}
	if held := time.Since(halfStart); held < timeout {
		t.Errorf("half-open handshakes timed out after %v, want %v", held, timeout)
	}
	for range 2 {
		c, _, err := haDial(l, 5*time.Second)
		if err != nil {
			t.Fatalf("Dial after the timeouts: %v", err)
		}
		clients = append(clients, c)
	}
	if !haWait(func() bool { return l.Stats().Queued == 4 }) {
		t.Errorf("stats %+v: want 4 queued", l.Stats())
	}
	_, took, err = haDial(l, 5*time.Second)
	haExpectRejected(t, "Dial beyond a backlog of 4 queued", took, err)

	// Accept takes them, in order, and frees their places.
	var srvs []*Conn
	defer func() {
		for _, s := range srvs {
			_ = s.Close()
		}
	}()
	for range 4 {
		s, err := l.AcceptRDMA()
		if err != nil {
			t.Fatal(err)
		}
		srvs = append(srvs, s)
	}
	// Our side of the last client (the handshakes of two Dials in a row
	// may end in either order).
	served := false
	for _, s := range srvs {
		if s.RemoteAddr().String() == clients[3].LocalAddr().String() {
			haRoundTrip(t, clients[3], s)
			served = true
		}
	}
	if !served {
		t.Error("Accept did not return our side of the last client")
	}

	// A connection established but never taken is closed by Close.
	c, _, err := haDial(l, 5*time.Second)
	if err != nil {
		t.Fatalf("Dial after Accept: %v", err)
	}
	clients = append(clients, c)
	haWait(func() bool { return l.Stats().Queued == 1 })
	if st := l.Stats(); st.Queued != 1 || st.Conns != 4 || st.Accepted != 5 || st.RejectedBacklog != 3 {
		t.Errorf("stats %+v: want 1 queued, 4 connections, 5 accepted, 3 rejected", st)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(hpGuard))
	if _, err := c.ReadMsg(nil); err == nil || errors.Is(err, errDeadline) {
		t.Errorf("the connection nobody accepted: read %v, want its end", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	if !haWait(func() bool { st := l.Stats(); return st.Queued == 0 && st.Conns == 3 }) {
		t.Errorf("stats %+v: want none queued, 3 connections", l.Stats())
	}
}
