package credits

import "testing"

// TestHotPathAllocations asserts that the per-call methods never allocate,
// error paths included (they return sentinel errors).
func TestHotPathAllocations(t *testing.T) {
	req := NewRequester(DefaultRequest)
	req.Update(64)
	rsp := NewResponder(Policy{HighWater: 8})
	if err := rsp.Post(64); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if !req.TryAcquire() {
			t.Fatal("TryAcquire refused")
		}
		_ = rsp.Received()
		_ = rsp.Post(1)
		g, _ := rsp.Reply(req.Requested())
		_, _ = req.Complete(g)
		_ = req.TryAcquire()
		_ = req.Release()
		_ = req.Release()   // ErrNotInFlight
		_, _ = rsp.Reply(0) // ErrNoRequest
		_ = rsp.Received()
		_ = rsp.Drop()
		_ = rsp.Post(1)
		_ = req.Available() + req.Limit() + rsp.Wanted() + rsp.Backlog()
	})
	if allocs != 0 {
		t.Errorf("hot path: %v allocations per run, want 0", allocs)
	}
}

func BenchmarkRequesterAcquireRelease(b *testing.B) {
	r := NewRequester(DefaultRequest)
	r.Update(64)
	b.ReportAllocs()
	for b.Loop() {
		if !r.TryAcquire() {
			b.Fatal("TryAcquire refused")
		}
		if _, err := r.Complete(64); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResponderGrant(b *testing.B) {
	r := NewResponder(Policy{HighWater: 16})
	if err := r.Post(64); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Received(); err != nil {
			b.Fatal(err)
		}
		if err := r.Post(1); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Reply(DefaultRequest); err != nil {
			b.Fatal(err)
		}
	}
}
