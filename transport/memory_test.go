package transport

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// fakeRegions is a verbs.Conn whose AllocRegion hands out unregistered
// memory (fakeRegion) and counts the live regions; nothing else is
// implemented.
type fakeRegions struct {
	verbs.Conn
	live   int
	allocs int // AllocRegion calls
}

func (c *fakeRegions) AllocRegion(size int) (verbs.Region, error) {
	c.live++
	c.allocs++
	return &fakeRegion{p: make([]byte, size), live: &c.live}, nil
}

// TestChunkPoolArmsTrimOnce checks the pool's trim check is scheduled once
// per idle period, not moved on every put (a timer reset, and a clock read,
// per RPC that moves a chunk), and that the check frees the cache down to
// poolKeepIdle only after a whole period without use, and the rest after
// the next.
func TestChunkPoolArmsTrimOnce(t *testing.T) {
	vc := &fakeRegions{}
	arms := 0
	p := chunkPool{vc: vc, maxIdle: 4 << 20, armTrim: func() { arms++ }}
	cycle := func(n int) {
		t.Helper()
		var rs []verbs.Region
		for range n {
			r, err := p.get(128 << 10)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		for _, r := range rs {
			p.put(r)
		}
	}
	cycle(4) // 512 KiB cached: over poolKeepIdle
	for range 50 {
		cycle(4)
	}
	if arms != 1 {
		t.Fatalf("trim check armed %d times over 51 bursts, want 1", arms)
	}
	// The first check finds the pool used: it asks to be re-armed and
	// frees nothing.
	if again := p.trimIdle(); !again || p.idle != 512<<10 {
		t.Fatalf("check after use: again %v, %d bytes cached; want true, %d", again, p.idle, 512<<10)
	}
	cycle(2) // still armed (the caller re-armed): no new arm
	if arms != 1 {
		t.Fatalf("trim check armed %d times, want 1", arms)
	}
	// A period without use: trimmed to poolKeepIdle, still watched.
	p.trimIdle()
	if again := p.trimIdle(); !again || p.idle > poolKeepIdle || p.idle == 0 || vc.live != len(p.cached) {
		t.Fatalf("check after an idle period: again %v, %d bytes cached, %d regions live for %d cached; want true, at most %d bytes", again, p.idle, vc.live, len(p.cached), poolKeepIdle)
	}
	// Another: all freed, and nothing scheduled any more.
	if again := p.trimIdle(); again || p.idle != 0 || vc.live != 0 {
		t.Fatalf("check after a second idle period: again %v, %d bytes cached, %d regions live; want false, none", again, p.idle, vc.live)
	}
	// The next burst over poolKeepIdle arms it again.
	cycle(4)
	if arms != 2 {
		t.Fatalf("trim check armed %d times after a new burst, want 2", arms)
	}
}

// TestChunkPoolKeepsOnePerSlot: a pool with a slot count keeps a buffer for
// every slot across bursts that use them all (no registration on the call
// path), within maxIdle, and falls back to maxCachedBufs without slots.
func TestChunkPoolKeepsOnePerSlot(t *testing.T) {
	burst := func(p *chunkPool, n, size int) {
		t.Helper()
		rs := make([]verbs.Region, 0, n)
		for range n {
			r, err := p.get(size)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		for _, r := range rs {
			p.put(r)
		}
	}
	for _, c := range []struct {
		slots, inFlight, size, maxIdle int
		wantCached                     int
	}{
		{slots: 64, inFlight: 32, size: 64 << 10, maxIdle: 2 << 20, wantCached: 32},
		{slots: 64, inFlight: 64, size: 16 << 10, maxIdle: 2 << 20, wantCached: 64},
		{slots: 64, inFlight: 40, size: 64 << 10, maxIdle: 2 << 20, wantCached: 32}, // bytes bound
		{slots: 8, inFlight: 32, size: 16 << 10, maxIdle: 2 << 20, wantCached: 8},
		{slots: 0, inFlight: 32, size: 16 << 10, maxIdle: 2 << 20, wantCached: maxCachedBufs},
	} {
		vc := &fakeRegions{}
		p := &chunkPool{vc: vc, maxIdle: c.maxIdle, maxBufs: c.slots}
		burst(p, c.inFlight, c.size)
		if len(p.cached) != c.wantCached || vc.live != c.wantCached || p.idle > c.maxIdle {
			t.Errorf("%+v: %d cached (%d bytes), %d live; want %d", c, len(p.cached), p.idle, vc.live, c.wantCached)
		}
		// A second burst of the same size registers nothing new when the
		// first one's buffers were all kept.
		before := vc.allocs
		burst(p, c.inFlight, c.size)
		if c.wantCached == c.inFlight && vc.allocs != before {
			t.Errorf("%+v: the second burst registered %d buffers", c, vc.allocs-before)
		}
	}
}

// TestBufCacheKeepsNoStaleBuffers: a buffer taken out of the cache or
// trimmed is referenced nowhere in the cache's slice (not even past its
// length), so that a trimmed cache lets the garbage collector have it.
func TestBufCacheKeepsNoStaleBuffers(t *testing.T) {
	b := bufCache{maxIdle: 1 << 20}
	for _, n := range []int{1 << 10, 2 << 10, 4 << 10} {
		b.put(make([]byte, 0, n))
	}
	if got := b.get(1 << 10); cap(got) != 1<<10 {
		t.Fatalf("got a buffer of %d bytes, want the smallest that fits", cap(got))
	}
	b.trim(0)
	for i, s := range b.bufs[:cap(b.bufs)] {
		if s != nil {
			t.Fatalf("trimmed cache still references a buffer of %d bytes at %d", cap(s), i)
		}
	}
}
