package transport

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// Every soft connection comes from 127.0.0.1. fromProvider is the soft
// provider whose connection requests come from 10.0.0.k when their
// private data carries k at fromMarkOff, after the 8 bytes of RFC 8797's
// message (a half-open peer's), and from their real address otherwise (a
// real Dial's): so the flooders of a test are sources of their own.
type fromProvider struct{ verbs.Provider }

// fromMarkOff is where a half-open peer's private data names its source.
const fromMarkOff = 40

func (p fromProvider) Listen(addr string) (verbs.Listener, error) {
	vl, err := p.Provider.Listen(addr)
	if err != nil {
		return nil, err
	}
	return fromListener{vl}, nil
}

type fromListener struct{ verbs.Listener }

func (l fromListener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	r, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return fromRequest{r}, nil
}

type fromRequest struct{ verbs.ConnRequest }

func (r fromRequest) RemoteAddr() net.Addr {
	pd := r.PrivateData()
	real := r.ConnRequest.RemoteAddr()
	if len(pd) <= fromMarkOff || pd[fromMarkOff] == 0 {
		return real
	}
	ta, _ := real.(*net.TCPAddr)
	port := 0
	if ta != nil {
		port = ta.Port
	}
	return &net.TCPAddr{IP: net.IPv4(10, 0, 0, pd[fromMarkOff]), Port: port}
}

// fromPD returns a half-open peer's private data naming source 10.0.0.k.
func fromPD(k byte) []byte {
	pd := make([]byte, fromMarkOff+1)
	copy(pd, hpLinuxClientPD)
	pd[fromMarkOff] = k
	return pd
}

// TestSourceOf: a request's source is its IP address, whatever the port,
// IPv4-mapped IPv6 unmapped.
func TestSourceOf(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 6}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 7, Zone: "eth0"}, "fe80::1"},
		{stringAddr("192.168.1.2:20049"), "192.168.1.2"},
		{stringAddr("[fe80::2%ib0]:20049"), "fe80::2"},
		{stringAddr("garbage"), "invalid IP"},
		{nil, "invalid IP"},
	} {
		if got := sourceOf(tc.addr).String(); got != tc.want {
			t.Errorf("sourceOf(%v) = %s, want %s", tc.addr, got, tc.want)
		}
	}
}

// TestSourceLoadsVictim: the victim is the oldest handshake of the source
// holding the most, the requester's own when it holds as many; a source
// with fewer loses none while a heavier one exists; the map forgets a
// source with none.
func TestSourceLoadsVictim(t *testing.T) {
	var s sourceLoads
	a, b, c := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	add := func(src netip.Addr) *halfOpen {
		h := &halfOpen{}
		s.add(src, h)
		return h
	}
	a1, a2, a3 := add(a), add(a), add(a)
	b1, b2 := add(b), add(b)
	c1 := add(c)
	if v := s.victim(c); v != a1 {
		t.Fatalf("victim for c: %p, want a's oldest", v)
	}
	if v := s.victim(a); v != a1 {
		t.Fatalf("victim for a: %p, want a's own oldest", v)
	}
	s.remove(a1)
	// a and b hold 2 each: a request from b replaces b's own; one from c
	// (1) takes the oldest of whichever reached 2 first (b).
	if v := s.victim(b); v != b1 {
		t.Fatalf("victim for b: want b's own oldest")
	}
	if v := s.victim(c); v != b1 {
		t.Fatalf("victim for c: want b's oldest (b reached 2 first)")
	}
	s.remove(b1)
	if v := s.victim(c); v != a2 {
		t.Fatalf("victim for c: want a's oldest")
	}
	for _, h := range []*halfOpen{a2, a3, b2} {
		s.remove(h)
	}
	// c alone, with 1.
	if v := s.victim(a); v != c1 || s.top != 1 {
		t.Fatalf("victim for a: want c's, top %d", s.top)
	}
	s.remove(c1)
	if len(s.bySrc) != 0 || s.top != 0 {
		t.Fatalf("%d sources left, top %d: want none", len(s.bySrc), s.top)
	}
}

// TestAcceptFloodFromSources (issue 36): flooders from 4 source addresses
// keep a backlog of 32 full of half-open handshakes, as fast as they can,
// while a legitimate client from another address Dials 40 times, one
// after the other: every Dial connects and gets a call served. Its
// handshake is never the one evicted: it holds one, each flooder some 8,
// and the flooders' requests take the places of their own sources'
// oldest handshakes (Stats.HandshakesDisplaced counts the places the
// client's requests took from them). Evicting the oldest handshake,
// whoever sent it, lost Dials here.
func TestAcceptFloodFromSources(t *testing.T) {
	const (
		backlog  = 16
		flooders = 4
		dials    = 40
	)
	before := hpGoroutines()
	t.Cleanup(func() { hpCheckLeaks(t, before) })
	prov := fromProvider{&soft.Provider{}}
	l, accepted := haListenAt(t, "127.0.0.1:0", Config{Provider: prov, AcceptBacklog: backlog, Credits: 4})
	addr := l.Addr().String()
	if lim := l.Limits(); lim.Handshakes != backlog {
		t.Fatalf("limits %+v: want %d handshakes", lim, backlog)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var sent atomic.Int64
	for k := range 4 * flooders {
		pd := fromPD(byte(k%flooders + 1))
		wg.Go(func() {
			// Each keeps its last 2 x backlog requests open (the
			// Listener closes the others as it evicts them).
			var ring [2 * backlog]*soft.HalfOpen
			defer func() {
				for _, h := range ring {
					if h != nil {
						_ = h.Close()
					}
				}
			}()
			for i := 0; ctx.Err() == nil; i++ {
				h, err := soft.DialHalfOpen(ctx, addr, pd)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("half-open peer: %v", err)
					}
					return
				}
				if old := ring[i%len(ring)]; old != nil {
					_ = old.Close()
				}
				ring[i%len(ring)] = h
				sent.Add(1)
				// The next request once the Listener answered this
				// one: the flood goes as fast as the Listener takes
				// it, and the soft listener below (whose own backlog
				// drops the oldest connections it has not read a
				// request from) never falls behind.
				_ = h.Await(ctx)
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	if !haWait(func() bool { st := l.Stats(); return st.Handshakes == backlog && st.HandshakesEvicted > backlog }) {
		t.Fatalf("stats %+v: the flood did not fill the backlog", l.Stats())
	}
	// Our side serves every connection accepted until it is closed.
	var served sync.WaitGroup
	var srvs []*Conn
	stopServing := make(chan struct{})
	served.Go(func() {
		for {
			select {
			case srv := <-accepted:
				srvs = append(srvs, srv)
				served.Go(func() { _ = hpServe(srv) })
			case <-stopServing:
				return
			}
		}
	})
	defer func() {
		close(stopServing)
		served.Wait() // the loop first: srvs is then ours
		for _, srv := range srvs {
			_ = srv.Close()
		}
		served.Wait()
	}()

	st0 := l.Stats()
	sent0 := sent.Load()
	start := time.Now()
	failed := 0
	var worst time.Duration
	for i := range dials {
		// A Dial succeeds, and its call gets its reply, or it failed:
		// a handshake evicted after the client confirmed it ends in
		// a Dial that succeeded and a connection our side closes.
		c, took, err := haDialWith(l, prov, DefaultHandshakeTimeout)
		worst = max(worst, took)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(hpGuard))
			if err = c.WriteMsg(hpRPCCall(uint32(i+1), 0, []byte("ping"))); err == nil {
				_, err = c.ReadMsg(nil)
			}
			_ = c.Close()
		}
		if err != nil {
			failed++
			t.Errorf("Dial %d during the flood failed (Dial took %v): %v", i, took, err)
		}
	}
	elapsed := time.Since(start)
	st := l.Stats()
	cancel()
	wg.Wait()
	evicted := st.HandshakesEvicted - st0.HandshakesEvicted
	t.Logf("%d legitimate Dials during a flood from %d sources (%.0f requests/s, %.0f evictions/s): %d failed, slowest %v; %d handshakes displaced",
		dials, flooders, float64(sent.Load()-sent0)/elapsed.Seconds(), float64(evicted)/elapsed.Seconds(),
		failed, worst, st.HandshakesDisplaced-st0.HandshakesDisplaced)
	if evicted < uint64(dials) {
		t.Errorf("stats %+v: %d evictions during the Dials, want the flood to keep evicting", st, evicted)
	}
	if st.Accepted-st0.Accepted != dials-uint64(failed) {
		t.Errorf("stats %+v: want %d more accepted", st, dials-failed)
	}
}
