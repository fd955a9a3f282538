package transport

import (
	"runtime"
	"testing"
	"time"
)

// closedConnMaxBytes bounds the Go heap a closed responder Conn keeps: its
// counters, addresses and settings, not its call slots and buffers.
const closedConnMaxBytes = 4 << 10

// TestClosedConnMemory (issue 36): a server keeps closed connections for
// their Stats. n responder Conns, each having served a call, are closed
// and kept; the heap they keep alive (measured as what dropping them
// frees) is at most closedConnMaxBytes each, and their Stats still count
// what they did. What else the process frees between the two readings
// of the heap (another test's late garbage) only inflates the figure: the
// smallest of up to three measurements counts.
func TestClosedConnMemory(t *testing.T) {
	l, accepted := haListen(t, Config{})
	haDials(t, l, accepted, 1)
	best := int64(-1)
	for attempt := 0; attempt < 3 && (best < 0 || best > closedConnMaxBytes); attempt++ {
		per := closedConnHeap(t, l, accepted)
		t.Logf("a closed responder Conn keeps %d B of heap (bound %d)", per, closedConnMaxBytes)
		if best < 0 || per < best {
			best = per
		}
	}
	if best > closedConnMaxBytes {
		t.Errorf("a closed responder Conn keeps %d B of heap, want at most %d", best, closedConnMaxBytes)
	}
}

// closedConnHeap makes 64 responder Conns on l, each serving a call, closes
// and keeps them, and returns the heap each keeps alive.
func closedConnHeap(t *testing.T, l *Listener, accepted <-chan *Conn) int64 {
	const n = 64
	idle := hpGoroutines()
	kept := make([]*Conn, 0, n)
	for i := range n {
		c, _, err := haDial(l, hpGuard)
		if err != nil {
			t.Fatalf("Dial %d: %v", i, err)
		}
		srv := <-accepted
		haRoundTrip(t, c, srv) // closes srv
		_ = c.Close()
		kept = append(kept, srv)
	}
	// The connections' goroutines are gone: what is left is kept, once
	// what is freed asynchronously is (settledHeap).
	checkLeaks(t, idle, hpGuard)
	withKept := settledHeap()
	for _, srv := range kept {
		if st := srv.Stats(); st.Recvs == 0 || st.Sends == 0 {
			t.Fatalf("closed Conn's stats %+v: want its Receive and Send counted", st)
		}
	}
	runtime.KeepAlive(kept)
	kept = nil
	without := haHeap()
	return (int64(withKept) - int64(without)) / n
}

// settledHeap returns the live heap once collections stop shrinking it:
// the peers' closed Conns are released a little after their goroutines
// end (sockets by their finalizers, which run on a goroutine of their
// own after one collection and are freed by the next), and counted as
// the kept Conns' they would make the test fail at random.
func settledHeap() uint64 {
	h := haHeap()
	for range 50 {
		time.Sleep(time.Millisecond)
		next := haHeap()
		if next+1024 > h {
			return min(h, next)
		}
		h = next
	}
	return h
}

// TestConnClosed: Closed is open until Close, closed once Close returned,
// for both roles.
func TestConnClosed(t *testing.T) {
	l, accepted := haListen(t, Config{})
	c, _, err := haDial(l, hpGuard)
	if err != nil {
		t.Fatal(err)
	}
	srv := <-accepted
	for _, conn := range []*Conn{c, srv} {
		select {
		case <-conn.Closed():
			t.Fatal("Closed before Close")
		default:
		}
		_ = conn.Close()
		select {
		case <-conn.Closed():
		default:
			t.Fatal("Closed still open after Close")
		}
	}
}
