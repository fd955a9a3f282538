package credits

import "errors"

// Errors reported by Requester and Responder. They are sentinel values so the
// hot path never allocates. Each one marks an accounting mistake by the caller
// or a protocol violation by the peer. No state changes when one is returned.
var (
	// ErrNotInFlight means Release or Complete was called with no call in
	// flight. Either the peer sent a reply that matches no call, or the
	// transport released a credit twice.
	ErrNotInFlight = errors.New("credits: release with no call in flight")

	// ErrNoReceivePosted means a message arrived while the Responder counted
	// no posted Receive. On real hardware that Send would have failed with
	// RNR, so the transport's bookkeeping is out of step (RFC 8166 §3.3.1).
	ErrNoReceivePosted = errors.New("credits: message received with no Receive posted")

	// ErrNoRequest means Reply or Drop was called with no request being
	// processed.
	ErrNoRequest = errors.New("credits: no request being processed")

	// ErrUnbacked means no posted Receive or unanswered request can back
	// even the minimum grant of 1 (RFC 8166 §3.3.1: the granted value MUST
	// NOT be zero). Post a Receive, then call Reply again.
	ErrUnbacked = errors.New("credits: no posted Receive backs a grant of 1")

	// ErrOverflow means Post would push the Receive count past 2^32-1.
	ErrOverflow = errors.New("credits: posted Receive count overflows")
)
