package credits

import (
	"errors"
	"math"
	"testing"
)

// mustNoErr fails the test at once on a non-nil error.
func mustNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestPolicyNormalized(t *testing.T) {
	tests := []struct {
		in, want Policy
	}{
		{Policy{}, Policy{Max: 64, Min: 1}},
		{Policy{Max: 8, Min: 20}, Policy{Max: 8, Min: 8}},
		{Policy{Max: 8, LowWater: 3}, Policy{Max: 8, Min: 1}},
		{Policy{HighWater: 16}, Policy{Max: 64, Min: 1, HighWater: 16, LowWater: 8}},
		{Policy{HighWater: 1}, Policy{Max: 64, Min: 1, HighWater: 1, LowWater: 1}},
		{Policy{HighWater: 10, LowWater: 11}, Policy{Max: 64, Min: 1, HighWater: 10, LowWater: 5}},
		{Policy{HighWater: 10, LowWater: 10}, Policy{Max: 64, Min: 1, HighWater: 10, LowWater: 10}},
	}
	for _, tc := range tests {
		r := NewResponder(tc.in)
		if r.Policy() != tc.want || r.Target() != tc.want.Max {
			t.Errorf("NewResponder(%+v): Policy %+v Target %d, want %+v and %d",
				tc.in, r.Policy(), r.Target(), tc.want, tc.want.Max)
		}
	}
}

func TestResponderReceivedWithoutPostedReceive(t *testing.T) {
	r := NewResponder(Policy{})
	if err := r.Received(); !errors.Is(err, ErrNoReceivePosted) {
		t.Errorf("Received = %v, want ErrNoReceivePosted", err)
	}
	if r.Posted() != 0 || r.Unanswered() != 0 {
		t.Errorf("Posted %d Unanswered %d after error, want 0 and 0", r.Posted(), r.Unanswered())
	}
}

func TestResponderReplyWithoutRequest(t *testing.T) {
	r := NewResponder(Policy{})
	mustNoErr(t, r.Post(4))
	if _, err := r.Reply(128); !errors.Is(err, ErrNoRequest) {
		t.Errorf("Reply = %v, want ErrNoRequest", err)
	}
	if err := r.Drop(); !errors.Is(err, ErrNoRequest) {
		t.Errorf("Drop = %v, want ErrNoRequest", err)
	}
	if r.Posted() != 4 {
		t.Errorf("Posted = %d, want 4", r.Posted())
	}
}

// TestResponderReplyUnbacked is the smallest case of the Receive bound: one
// Receive posted, one call received, no Receive reposted. A grant of 1 would
// let the requester send a call that finds no Receive, so Reply refuses until
// a Receive is posted.
func TestResponderReplyUnbacked(t *testing.T) {
	r := NewResponder(Policy{})
	mustNoErr(t, r.Post(1))
	mustNoErr(t, r.Received())
	if _, err := r.Reply(128); !errors.Is(err, ErrUnbacked) {
		t.Fatalf("Reply = %v, want ErrUnbacked", err)
	}
	if r.Unanswered() != 1 || r.Backlog() != 1 || r.Stats() != (ResponderStats{}) {
		t.Fatalf("state changed on error: Unanswered %d Backlog %d Stats %+v", r.Unanswered(), r.Backlog(), r.Stats())
	}
	mustNoErr(t, r.Post(1))
	g, err := r.Reply(128)
	if err != nil || g != 1 {
		t.Fatalf("Reply after Post(1) = %d, %v; want 1", g, err)
	}
	if n := r.Stats().ReceiveLimited; n != 1 {
		t.Errorf("ReceiveLimited = %d, want 1", n)
	}
}

func TestResponderReplyBound(t *testing.T) {
	tests := []struct {
		name                string
		policy              Policy
		post, receive, drop uint32
		requested, want     uint32
		limited             uint64
	}{
		{"svcrdma steady state", Policy{}, 65, 1, 0, 128, 64, 0},
		{"requester asks less", Policy{}, 65, 1, 0, 8, 8, 0},
		{"request unknown", Policy{}, 65, 1, 0, 0, 64, 0},
		{"receives short, backlog backs the rest", Policy{}, 8, 5, 0, 128, 3 + 4, 1},
		{"posted exactly the target", Policy{Max: 16}, 17, 1, 0, 128, 16, 0},
		{"one short", Policy{Max: 16}, 16, 1, 0, 128, 15, 1},
		{"dropped calls still hold credits", Policy{Max: 16}, 6, 6, 3, 128, 0 + 5, 1},
		{"requester asks less than receives allow", Policy{}, 8, 5, 0, 2, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewResponder(tc.policy)
			mustNoErr(t, r.Post(tc.post))
			for range tc.receive {
				mustNoErr(t, r.Received())
			}
			for range tc.drop {
				mustNoErr(t, r.Drop())
			}
			posted, unanswered := r.Posted(), r.Unanswered()
			g, err := r.Reply(tc.requested)
			mustNoErr(t, err)
			if g != tc.want {
				t.Errorf("grant %d, want %d", g, tc.want)
			}
			if g > posted+unanswered-1 {
				t.Errorf("grant %d above %d posted + %d unanswered after the reply", g, posted, unanswered-1)
			}
			if n := r.Stats().ReceiveLimited; n != tc.limited {
				t.Errorf("ReceiveLimited = %d, want %d", n, tc.limited)
			}
			if r.Unanswered() != unanswered-1 {
				t.Errorf("Unanswered = %d, want %d", r.Unanswered(), unanswered-1)
			}
		})
	}
}

func TestResponderDrop(t *testing.T) {
	r := NewResponder(Policy{Max: 4})
	mustNoErr(t, r.Post(4))
	mustNoErr(t, r.Received())
	mustNoErr(t, r.Received())
	mustNoErr(t, r.Drop())
	if r.Backlog() != 1 || r.Unanswered() != 2 {
		t.Fatalf("Backlog %d Unanswered %d, want 1 and 2", r.Backlog(), r.Unanswered())
	}
	if g, err := r.Reply(4); err != nil || g != 3 {
		t.Fatalf("Reply = %d, %v; want 3 (2 posted + 1 dropped call still holding a credit)", g, err)
	}
	if _, err := r.Reply(4); !errors.Is(err, ErrNoRequest) {
		t.Errorf("Reply with only a dropped request left = %v, want ErrNoRequest", err)
	}
	if err := r.Drop(); !errors.Is(err, ErrNoRequest) {
		t.Errorf("Drop = %v, want ErrNoRequest", err)
	}
	if r.Unanswered() != 1 {
		t.Errorf("Unanswered = %d, want 1", r.Unanswered())
	}
}

func TestResponderPostOverflow(t *testing.T) {
	r := NewResponder(Policy{})
	mustNoErr(t, r.Post(math.MaxUint32))
	if err := r.Post(1); !errors.Is(err, ErrOverflow) {
		t.Errorf("Post past 2^32-1 = %v, want ErrOverflow", err)
	}
	if r.Posted() != math.MaxUint32 {
		t.Errorf("Posted = %d after error", r.Posted())
	}
	mustNoErr(t, r.Received())
	if g, err := r.Reply(0); err != nil || g != 64 {
		t.Errorf("Reply = %d, %v; want 64", g, err)
	}
}

// TestResponderPolicy walks the load policy through one overload and its
// recovery. The expected values follow from the rules on Policy.
func TestResponderPolicy(t *testing.T) {
	r := NewResponder(Policy{Max: 64, Min: 4, HighWater: 16, LowWater: 4})
	mustNoErr(t, r.Post(math.MaxUint32/2)) // Receives never limit this test
	for range 20 {
		mustNoErr(t, r.Received())
	}
	// Overload: 20 requests are being processed at every reply. The target
	// halves at once, then once per window of (old target) replies.
	want := map[int]uint32{1: 32, 32: 32, 33: 16, 48: 16, 49: 8, 56: 8, 57: 4, 100: 4}
	for k := 1; k <= 100; k++ {
		g, err := r.Reply(128)
		mustNoErr(t, err)
		if w, ok := want[k]; ok && g != w {
			t.Errorf("reply %d: grant %d, want %d", k, g, w)
		}
		mustNoErr(t, r.Received())
	}
	if n := r.Stats().Shrinks; n != 4 {
		t.Errorf("Shrinks = %d, want 4 (64→32→16→8→4=Min)", n)
	}
	// Drain: backlogs 20 down to 1. Only the last four (≤ LowWater) grow.
	for range 20 {
		_, err := r.Reply(128)
		mustNoErr(t, err)
	}
	if r.Target() != 8 {
		t.Errorf("Target after drain = %d, want 8", r.Target())
	}
	// Idle: one request at a time; one credit more per reply, up to Max.
	for range 60 {
		mustNoErr(t, r.Received())
		_, err := r.Reply(128)
		mustNoErr(t, err)
	}
	if want := (ResponderStats{Shrinks: 4, Grows: 4 + 56}); r.Target() != 64 || r.Stats() != want {
		t.Errorf("Target %d Stats %+v, want 64 and %+v", r.Target(), r.Stats(), want)
	}
}

// TestResponderConstantPolicy: the zero Policy behaves like Linux svcrdma,
// which always grants sc_max_requests.
func TestResponderConstantPolicy(t *testing.T) {
	r := NewResponder(Policy{})
	mustNoErr(t, r.Post(64))
	for range 50 {
		mustNoErr(t, r.Received())
	}
	for range 50 {
		mustNoErr(t, r.Post(1)) // svcrdma refills as Receives complete
		g, err := r.Reply(DefaultRequest)
		if err != nil || g != 64 {
			t.Fatalf("Reply = %d, %v; want 64", g, err)
		}
	}
	if r.Stats() != (ResponderStats{}) {
		t.Errorf("Stats = %+v, want none", r.Stats())
	}
}

func TestResponderWanted(t *testing.T) {
	r := NewResponder(Policy{})
	if w := r.Wanted(); w != 64 {
		t.Errorf("Wanted = %d, want 64", w)
	}
	mustNoErr(t, r.Post(60))
	if w := r.Wanted(); w != 4 {
		t.Errorf("Wanted = %d, want 4", w)
	}
	mustNoErr(t, r.Post(10))
	if w := r.Wanted(); w != 0 {
		t.Errorf("Wanted = %d, want 0", w)
	}

	// With the load policy on and the target below Max, the next reply may
	// grow the target by one, and Wanted leaves room for that credit.
	a := NewResponder(Policy{Max: 64, HighWater: 1, LowWater: 1})
	mustNoErr(t, a.Post(2))
	mustNoErr(t, a.Received())
	mustNoErr(t, a.Received())
	mustNoErr(t, a.Post(1))
	for range 2 { // backlog 2 > 1 halves the target to 32; backlog 1 grows it to 33
		_, err := a.Reply(0)
		mustNoErr(t, err)
	}
	if a.Target() != 33 || a.Posted() != 1 || a.Unanswered() != 0 {
		t.Fatalf("Target %d Posted %d Unanswered %d, want 33, 1, 0", a.Target(), a.Posted(), a.Unanswered())
	}
	mustNoErr(t, a.Received())
	if w := a.Wanted(); w != 34 {
		t.Fatalf("Wanted = %d, want 34 (target 33, plus 1 for growth)", w)
	}
	short := a // Responder is a value: a copy to try one Receive fewer
	mustNoErr(t, short.Post(a.Wanted()-1))
	if g, _ := short.Reply(0); g != 33 || short.Stats().ReceiveLimited != a.Stats().ReceiveLimited+1 {
		t.Errorf("one Receive short of Wanted: grant %d, want 33 and limited", g)
	}
	mustNoErr(t, a.Post(a.Wanted()))
	limited := a.Stats().ReceiveLimited
	if g, err := a.Reply(0); err != nil || g != 34 || a.Stats().ReceiveLimited != limited {
		t.Errorf("Reply after posting Wanted = %d, %v; want 34, not limited", g, err)
	}
}
