package rdmacore

import (
	"slices"
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
	for _, tc := range []struct {
		name     string
		min, max time.Duration
		gaps     []time.Duration
		want     time.Duration
	}{
		{"starts at min", 50 * us, 2000 * us, nil, 50 * us},
		{"min until the history is full", 50 * us, 2000 * us,
			slices.Repeat([]time.Duration{500 * us}, 7), 50 * us},
		{"twice the median of short gaps (one long gap does not move it)", 50 * us, 2000 * us,
			[]time.Duration{400 * us, 500 * us, 600 * us, 450 * us, 550 * us, 9000 * us, 500 * us, 500 * us}, 1000 * us},
		{"capped at max", 50 * us, 2000 * us,
			slices.Repeat([]time.Duration{1500 * us}, 8), 2000 * us},
		{"never under min", 50 * us, 2000 * us,
			slices.Repeat([]time.Duration{5 * us}, 8), 50 * us},
		{"fixed when max is not above min", 50 * us, 50 * us,
			slices.Repeat([]time.Duration{500 * us}, 8), 50 * us},
		{"never when min is 0", 0, 2000 * us,
			slices.Repeat([]time.Duration{500 * us}, 8), 0},
	} {
		p := newSpinPolicy(tc.min, tc.max)
		observe(&p, tc.gaps...)
		if got := p.limit(); got != tc.want {
			t.Errorf("%s: limit %v, want %v", tc.name, got, tc.want)
		}
	}
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
