package transport

import "testing"

// TestSharedBudgetKeepsFirstShares: connections that hold more than one
// message's worth cannot take the half of a listener's budget kept for
// first shares; another connection's first message still fits, and the
// waiters of each kind are served in order as bytes come back.
func TestSharedBudgetKeepsFirstShares(t *testing.T) {
	const floor = 10
	s := newSharedBudget(80, floor) // 40 for extra bytes, 40 kept
	stuck := []*Conn{{}, {}, {}}
	held := make([]int, len(stuck))
	retried := make(chan *Conn, 16)
	retry := func(c *Conn) func() { return func() { retried <- c } }
	// Each stuck connection takes its first share, then extras while the
	// unreserved half lasts: the first one takes all of it, the others
	// their first share and then wait.
	for i, c := range stuck {
		for held[i] < 80 && s.acquire(c, held[i], floor, retry(c)) {
			held[i] += floor
		}
	}
	if held[0] != 40 || held[1] != floor || held[2] != floor || s.inUse() != 60 {
		t.Fatalf("stuck connections hold %v, %d of 80 bytes; want [40 10 10], 60", held, s.inUse())
	}
	// A newcomer's first message fits although stuck ones are waiting.
	newcomer := &Conn{}
	if !s.acquire(newcomer, 0, floor, retry(newcomer)) {
		t.Fatalf("a newcomer's first share was refused with %d of 80 bytes used", s.inUse())
	}
	// Its second one is an extra: it waits behind the stuck ones.
	if s.acquire(newcomer, floor, floor, retry(newcomer)) {
		t.Fatal("a newcomer's extra share jumped the queue")
	}
	// Releasing wakes the first waiter of the extra queue, a stuck one.
	s.release(floor)
	held[0] -= floor
	if c := <-retried; c != stuck[0] {
		t.Fatal("the first waiter was not woken first")
	}
	// The stuck connections close: forgotten, their bytes back. What is
	// left is the newcomer's share, and the newcomer is told.
	for i, c := range stuck {
		s.forget(c)
		s.release(held[i])
	}
	if got := s.inUse(); got != floor {
		t.Fatalf("%d bytes in use, want the newcomer's %d", got, floor)
	}
	for c := range retried {
		if c == newcomer {
			break
		}
	}
	if !s.acquire(newcomer, floor, floor, retry(newcomer)) {
		t.Fatal("the newcomer's extra share was refused once the stuck connections left")
	}
	s.release(2 * floor)
	s.forget(newcomer)
	if got := s.inUse(); got != 0 {
		t.Fatalf("%d bytes in use after every share was released", got)
	}
}
