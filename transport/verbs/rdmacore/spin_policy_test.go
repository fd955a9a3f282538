package rdmacore

import (
	"testing"
	"time"
)

func TestSpinPolicy(t *testing.T) {
	const us = time.Microsecond
	observe := func(p *spinPolicy, gaps ...time.Duration) {
		for _, g := range gaps {
			p.observe(g)
		}
	}
	t.Run("starts at min", func(t *testing.T) {
		p := newSpinPolicy(50*us, 2000*us)
		if got := p.limit(); got != 50*us {
			t.Fatalf("limit %v, want 50µs", got)
		}
		observe(&p, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us)
		if got := p.limit(); got != 50*us {
			t.Fatalf("limit after 7 gaps %v, want 50µs until the history is full", got)
		}
	})
	t.Run("twice the median of short gaps", func(t *testing.T) {
		p := newSpinPolicy(50*us, 2000*us)
		observe(&p, 400*us, 500*us, 600*us, 450*us, 550*us, 9000*us, 500*us, 500*us)
		if got := p.limit(); got != 1000*us {
			t.Fatalf("limit %v, want 1ms (one long gap does not move the median)", got)
		}
	})
	t.Run("capped at max", func(t *testing.T) {
		p := newSpinPolicy(50*us, 2000*us)
		observe(&p, 1500*us, 1500*us, 1500*us, 1500*us, 1500*us, 1500*us, 1500*us, 1500*us)
		if got := p.limit(); got != 2000*us {
			t.Fatalf("limit %v, want max", got)
		}
	})
	t.Run("never under min", func(t *testing.T) {
		p := newSpinPolicy(50*us, 2000*us)
		observe(&p, 5*us, 5*us, 5*us, 5*us, 5*us, 5*us, 5*us, 5*us)
		if got := p.limit(); got != 50*us {
			t.Fatalf("limit %v, want min", got)
		}
	})
	t.Run("idle connection polls min", func(t *testing.T) {
		p := newSpinPolicy(50*us, 2000*us)
		observe(&p, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us)
		// The client slows down: gaps of 5 ms. The median, (500+5000)/2
		// µs after four of them, passes max, and the policy stops
		// polling long.
		for i := 1; i <= 5; i++ {
			observe(&p, 5000*us)
			want := 1000 * us
			if i >= 4 {
				want = 50 * us
			}
			if got := p.limit(); got != want {
				t.Fatalf("after %d slow gaps: limit %v, want %v", i, got, want)
			}
		}
		// And a burst of short gaps brings long polls back.
		observe(&p, 300*us, 300*us, 300*us, 300*us, 300*us)
		if got := p.limit(); got != 600*us {
			t.Fatalf("after the burst: limit %v, want 600µs", got)
		}
	})
	t.Run("fixed when max is not above min", func(t *testing.T) {
		p := newSpinPolicy(50*us, 50*us)
		observe(&p, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us)
		if got := p.limit(); got != 50*us {
			t.Fatalf("limit %v, want min", got)
		}
	})
	t.Run("never when min is 0", func(t *testing.T) {
		p := newSpinPolicy(0, 2000*us)
		observe(&p, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us, 500*us)
		if got := p.limit(); got != 0 {
			t.Fatalf("limit %v, want 0", got)
		}
	})
}

// TestSpinPolicyAllocs checks that the policy's decisions allocate nothing
// (one per Wait).
func TestSpinPolicyAllocs(t *testing.T) {
	p := newSpinPolicy(50*time.Microsecond, 2*time.Millisecond)
	if n := testing.AllocsPerRun(100, func() {
		p.observe(700 * time.Microsecond)
		_ = p.limit()
	}); n != 0 {
		t.Fatalf("%v allocations per Wait", n)
	}
}
