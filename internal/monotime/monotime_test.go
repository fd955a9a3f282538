package monotime

import (
	"strings"
	"testing"
	"time"
)

// TestNow: Now has a monotonic reading, moves forward with the monotonic
// clock, and measures durations as time.Now does.
func TestNow(t *testing.T) {
	a := Now()
	if !strings.Contains(a.String(), " m=") {
		t.Fatalf("Now() = %v: no monotonic reading", a)
	}
	before := time.Now()
	time.Sleep(20 * time.Millisecond)
	b := Now()
	after := time.Now()
	if d := b.Sub(a); d < 20*time.Millisecond {
		t.Fatalf("Now moved %v over a sleep of 20ms", d)
	}
	if b.Before(before) || b.After(after) {
		t.Fatalf("Now() = %v, not between %v and %v", b, before, after)
	}
	if d := time.Since(b); d < 0 || d > after.Sub(b)+time.Second {
		t.Fatalf("time.Since(Now()) = %v", d)
	}
}

// BenchmarkNow is one reading of the monotonic clock; BenchmarkTimeNow
// the two of time.Now, for comparison.
func BenchmarkNow(b *testing.B) {
	for b.Loop() {
		_ = Now()
	}
}

func BenchmarkTimeNow(b *testing.B) {
	for b.Loop() {
		_ = time.Now()
	}
}
