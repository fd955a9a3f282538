package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunOps(t *testing.T) {
	var calls atomic.Int64
	seen := make([]atomic.Int64, 4)
	m := runOps(context.Background(), 4, 100*time.Millisecond, func(w int) (int, error) {
		calls.Add(1)
		seen[w].Add(1)
		time.Sleep(time.Millisecond)
		return 10, nil
	})
	if m.ops == 0 || m.ops != uint64(calls.Load()) || m.bytes != 10*m.ops || len(m.lat) != int(m.ops) {
		t.Errorf("ops %d calls %d bytes %d latencies %d", m.ops, calls.Load(), m.bytes, len(m.lat))
	}
	for w := range seen {
		if seen[w].Load() == 0 {
			t.Errorf("worker %d did nothing", w)
		}
	}
	if m.elapsed < 100*time.Millisecond {
		t.Errorf("elapsed %v", m.elapsed)
	}
	for i := 1; i < len(m.lat); i++ {
		if m.lat[i] < m.lat[i-1] {
			t.Fatal("latencies not sorted")
		}
	}
	if p := percentile(m.lat, 50); p < 1000 {
		t.Errorf("p50 %v µs for a 1 ms operation", p)
	}
}

func TestRunOpsErrors(t *testing.T) {
	boom := errors.New("boom")
	m := runOps(context.Background(), 2, time.Second, func(int) (int, error) { return 0, boom })
	if m.ops != 0 || m.errors != 2*101 || !errors.Is(m.firstErr, boom) {
		t.Errorf("ops %d errors %d first %v: a failing cell must stop after 101 errors per worker", m.ops, m.errors, m.firstErr)
	}
	if m.elapsed > 500*time.Millisecond {
		t.Errorf("a failing cell ran %v", m.elapsed)
	}
	if percentile(nil, 50) != NA {
		t.Error("percentile of nothing is not NA")
	}
}
