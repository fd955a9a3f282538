package credits

import (
	"errors"
	"math"
	"testing"
)

func TestNewRequester(t *testing.T) {
	r := NewRequester(DefaultRequest)
	if r.Limit() != 1 {
		t.Errorf("Limit = %d, want 1 (RFC 8166 §3.3.3: one credit before the first reply)", r.Limit())
	}
	if r.InFlight() != 0 || r.Available() != 1 {
		t.Errorf("InFlight %d Available %d, want 0 and 1", r.InFlight(), r.Available())
	}
	if r.Requested() != 128 || r.Max() != 128 {
		t.Errorf("Requested %d Max %d, want 128", r.Requested(), r.Max())
	}
	z := NewRequester(0)
	if z.Max() != 1 {
		t.Errorf("NewRequester(0).Max() = %d, want 1", z.Max())
	}
	if got := z.Update(50); got != 1 {
		t.Errorf("max 1: Update(50) = %d, want 1", got)
	}
}

func TestRequesterOneCallBeforeFirstReply(t *testing.T) {
	r := NewRequester(DefaultRequest)
	if !r.TryAcquire() {
		t.Fatal("first call refused")
	}
	if r.TryAcquire() {
		t.Fatal("second call allowed before any grant")
	}
	if s := r.Stats().Stalls; s != 1 {
		t.Errorf("Stalls = %d, want 1", s)
	}
	limit, err := r.Complete(64)
	if err != nil || limit != 64 {
		t.Fatalf("Complete(64) = %d, %v; want 64, nil", limit, err)
	}
	for i := range 64 {
		if !r.TryAcquire() {
			t.Fatalf("call %d of 64 refused", i)
		}
	}
	if r.TryAcquire() {
		t.Fatal("65th call allowed with a limit of 64")
	}
	if s := r.Stats().Stalls; s != 2 {
		t.Errorf("Stalls = %d, want 2", s)
	}
}

func TestRequesterUpdate(t *testing.T) {
	tests := []struct {
		name          string
		max, granted  uint32
		want          uint32
		zero, clamped uint64
	}{
		{"zero is read as one (don't deadlock)", 128, 0, 1, 1, 0},
		{"one", 128, 1, 1, 0, 0},
		{"svcrdma default", 128, 64, 64, 0, 0},
		{"exactly max", 128, 128, 128, 0, 0},
		{"above max", 128, 129, 128, 0, 1},
		{"hostile", 128, math.MaxUint32, 128, 0, 1},
		{"max of one", 1, 2, 1, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRequester(tc.max)
			if got := r.Update(tc.granted); got != tc.want || r.Limit() != tc.want {
				t.Errorf("Update(%d) = %d, Limit %d; want %d", tc.granted, got, r.Limit(), tc.want)
			}
			want := RequesterStats{ZeroGrants: tc.zero, ClampedGrants: tc.clamped}
			if r.Stats() != want {
				t.Errorf("Stats = %+v, want %+v", r.Stats(), want)
			}
		})
	}
}

func TestRequesterReleaseWithNothingInFlight(t *testing.T) {
	r := NewRequester(8)
	r.Update(4)
	if err := r.Release(); !errors.Is(err, ErrNotInFlight) {
		t.Errorf("Release = %v, want ErrNotInFlight", err)
	}
	limit, err := r.Complete(8)
	if !errors.Is(err, ErrNotInFlight) || limit != 4 || r.Limit() != 4 {
		t.Errorf("Complete(8) = %d, %v (Limit %d); want 4, ErrNotInFlight: a reply that answers no call must not change the limit",
			limit, err, r.Limit())
	}
	if r.InFlight() != 0 {
		t.Errorf("InFlight = %d, want 0", r.InFlight())
	}
	if !r.TryAcquire() {
		t.Fatal("TryAcquire refused")
	}
	if err := r.Release(); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(); !errors.Is(err, ErrNotInFlight) {
		t.Errorf("double Release = %v, want ErrNotInFlight", err)
	}
	if r.InFlight() != 0 {
		t.Errorf("InFlight = %d after double release, want 0", r.InFlight())
	}
}

// TestRequesterShrinkWhileInFlight checks that a smaller grant cancels no
// call: the calls in flight stay in flight, and new calls wait until the
// count has fallen below the new limit.
func TestRequesterShrinkWhileInFlight(t *testing.T) {
	r := NewRequester(DefaultRequest)
	r.Update(64)
	for range 64 {
		if !r.TryAcquire() {
			t.Fatal("TryAcquire refused under the limit")
		}
	}
	if limit, err := r.Complete(8); err != nil || limit != 8 { // one reply, smaller grant
		t.Fatalf("Complete(8) = %d, %v", limit, err)
	}
	if r.InFlight() != 63 || r.Available() != 0 {
		t.Fatalf("InFlight %d Available %d, want 63 and 0: no call is cancelled", r.InFlight(), r.Available())
	}
	for r.InFlight() > 8 {
		if r.TryAcquire() {
			t.Fatalf("call allowed with %d in flight, limit 8", r.InFlight()-1)
		}
		if _, err := r.Complete(8); err != nil {
			t.Fatal(err)
		}
	}
	if r.TryAcquire() {
		t.Fatal("call allowed with 8 in flight, limit 8")
	}
	if _, err := r.Complete(8); err != nil {
		t.Fatal(err)
	}
	if r.Available() != 1 || !r.TryAcquire() || r.InFlight() != 8 {
		t.Fatalf("after falling below the limit: Available %d InFlight %d", r.Available(), r.InFlight())
	}
}

// TestGrantOfOneManyCalls runs many pending calls against a responder that
// grants 1: never more than one call is in flight, and every call completes.
func TestGrantOfOneManyCalls(t *testing.T) {
	const calls = 1000
	req := NewRequester(DefaultRequest)
	rsp := NewResponder(Policy{Max: 1})
	if err := rsp.Post(1); err != nil {
		t.Fatal(err)
	}
	waiting, done := calls, 0
	for waiting > 0 {
		sent := 0
		for waiting > 0 && req.TryAcquire() {
			waiting--
			sent++
		}
		if sent != 1 || req.InFlight() != 1 {
			t.Fatalf("round %d: sent %d, in flight %d; want exactly one per round trip", done, sent, req.InFlight())
		}
		if err := rsp.Received(); err != nil {
			t.Fatal(err)
		}
		if err := rsp.Post(1); err != nil { // repost before replying
			t.Fatal(err)
		}
		g, err := rsp.Reply(req.Requested())
		if err != nil || g != 1 {
			t.Fatalf("Reply = %d, %v; want 1", g, err)
		}
		if _, err := req.Complete(g); err != nil {
			t.Fatal(err)
		}
		done++
	}
	if done != calls {
		t.Errorf("%d calls completed, want %d", done, calls)
	}
	if s := req.Stats().Stalls; s != calls-1 {
		t.Errorf("Stalls = %d, want %d: one refusal in every round but the last", s, calls-1)
	}
}

func TestRequesterReset(t *testing.T) {
	r := NewRequester(DefaultRequest)
	r.Update(64)
	for range 10 {
		r.TryAcquire()
	}
	r.Update(0)
	r.TryAcquire() // a stall
	r.Reset()
	if r.Limit() != 1 || r.InFlight() != 0 {
		t.Errorf("after Reset: Limit %d InFlight %d, want 1 and 0 (RFC 8166 §3.3.3)", r.Limit(), r.InFlight())
	}
	if want := (RequesterStats{Stalls: 1, ZeroGrants: 1}); r.Stats() != want {
		t.Errorf("Stats = %+v, want %+v: statistics survive a reconnect", r.Stats(), want)
	}
	if !r.TryAcquire() || r.TryAcquire() {
		t.Error("after Reset, exactly one call may be sent")
	}
}
