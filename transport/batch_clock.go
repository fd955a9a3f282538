package transport

import (
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/monotime"
)

// batchClock reads the clock at most once per batch of the poll loop's
// work: the calls one poll brought share their arrival time, and the
// replies the poll loop sends for the calls it serves inline share theirs.
// Config.SlowReply is a bound of seconds and a batch lasts microseconds;
// each clock read a call saves is a system call in a guest whose clock is
// the HPET, and a batch reads the monotonic clock alone (monotime.Now:
// one read where time.Now makes two). Owned by the poll loop, under
// Conn.mu.
type batchClock struct{ t time.Time }

// reset starts a batch: the next now reads the clock.
func (b *batchClock) reset() { b.t = time.Time{} }

// now returns the batch's time, read at its first use.
func (b *batchClock) now() time.Time {
	if b.t.IsZero() {
		b.t = monotime.Now()
	}
	return b.t
}
