//go:build linux && cgo

package rdmacore

import (
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// SetYieldThread replaces what a polling Wait calls to yield its OS
// thread, and returns the function that restores it. Call it before the
// connections it affects exist, and restore it once they are closed.
func SetYieldThread(f func()) (restore func()) {
	old := yieldThread
	yieldThread = f
	return func() { yieldThread = old }
}

// Arms returns how many times c's Waits armed its completion queue.
func Arms(c verbs.Conn) int {
	cc := c.(*conn)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.arms
}

// SpinLimit returns how long c's next Wait polls before it sleeps. Call it
// from the goroutine that Waits on c.
func SpinLimit(c verbs.Conn) time.Duration { return c.(*conn).spin.limit() }

// SetSpareIdle sets how long p's spare regions stay unused before they are
// freed (SpareIdle unless set), and trims the pool at once by that rule.
func SetSpareIdle(p *Provider, d time.Duration) {
	s := &p.state.spares
	s.mu.Lock()
	s.idleFor = d
	// A timer stopped before it ran is replaced by the trim below; one
	// that has fired runs trimSpares by the new rule.
	trim := s.timer != nil && s.timer.Stop()
	if trim {
		s.timer = nil
	}
	s.mu.Unlock()
	if trim {
		p.trimSpares()
	}
}
