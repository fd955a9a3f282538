package rdmacore

import (
	"slices"
	"time"
)

// spinPolicy decides how long a connection's Wait polls the completion
// queue before it sleeps on the completion channel: spin-then-block, with
// the spin fitted to how long the connection's recent Waits waited (their
// gaps), as Linux's hybrid block-layer polling fits its sleep to recent
// completion times.
//
// Polling is cheap per look, and a completion it finds saves the sleep's
// whole path: arming the queue, the netpoller's wake-up of a thread, the
// event's read and acknowledgement. Polling past the next completion is
// wasted. So Wait polls for at least min, and longer while the recent gaps
// say that the next completion comes soon: up to twice the median of the
// last spinHistory gaps, never more than max. When that median is over
// max (a connection that idles between RPCs) Wait polls for min only: a
// long poll would fail at every Wait. Once recent gaps are short again (a
// burst of RPCs, one in flight) it takes spinHistory/2+1 Waits to poll
// long again.
//
// A pure type: Wait measures, the policy decides (spin_policy_test.go).
type spinPolicy struct {
	min, max time.Duration
	gaps     [spinHistory]time.Duration // the last gaps, a ring
	n        int                        // gaps observed, up to spinHistory
	next     int                        // where the next gap goes
}

// spinHistory is how many recent gaps the policy keeps.
const spinHistory = 8

// newSpinPolicy returns a policy polling for at least min (0: never), and,
// if max > min, for up to max when recent gaps are short.
func newSpinPolicy(min, max time.Duration) spinPolicy {
	return spinPolicy{min: min, max: max}
}

// adaptive reports whether the policy follows the gaps at all (it polls
// for min alone otherwise, and needs none observed).
func (p *spinPolicy) adaptive() bool { return p.min > 0 && p.max > p.min }

// limit returns how long the next Wait polls before it sleeps.
func (p *spinPolicy) limit() time.Duration {
	if !p.adaptive() || p.n < spinHistory {
		return max(p.min, 0)
	}
	g := p.gaps
	slices.Sort(g[:])
	m := (g[spinHistory/2-1] + g[spinHistory/2]) / 2
	if m > p.max {
		return p.min
	}
	return min(max(2*m, p.min), p.max)
}

// observe records the gap of one Wait: from its start until it found a
// completion, by polling or after sleeping.
func (p *spinPolicy) observe(gap time.Duration) {
	p.gaps[p.next] = gap
	p.next = (p.next + 1) % spinHistory
	p.n = min(p.n+1, spinHistory)
}
