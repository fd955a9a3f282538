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
	live int
}

func (c *fakeRegions) AllocRegion(size int) (verbs.Region, error) {
	c.live++
	return &fakeRegion{p: make([]byte, size), live: &c.live}, nil
}

// TestChunkPoolArmsTrimOnce checks the pool's trim check is scheduled once
// per idle period, not moved on every put (a timer reset, and a clock read,
// per RPC that moves a chunk), and that the check frees the cache down to
// poolKeepIdle only after a whole period without use.
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
	// A period without use: trimmed, and nothing scheduled any more.
	p.trimIdle()
	if again := p.trimIdle(); again || p.idle > poolKeepIdle || vc.live != len(p.cached) {
		t.Fatalf("check after an idle period: again %v, %d bytes cached, %d regions live for %d cached; want false, at most %d bytes", again, p.idle, vc.live, len(p.cached), poolKeepIdle)
	}
	// The next burst over poolKeepIdle arms it again.
	cycle(4)
	if arms != 2 {
		t.Fatalf("trim check armed %d times after a new burst, want 2", arms)
	}
}
