package credits

// DefaultRequest is the number of credits the Linux client asks for in every
// call (xprt_rdma_slot_table_entries, RPCRDMA_DEF_SLOT_TABLE = 128).
const DefaultRequest = 128

// Requester is the requester's side of RPC-over-RDMA credit flow control
// (RFC 8166 §3.3.1). It tracks the limit granted by the responder and the
// calls in flight: sent, with no reply received yet.
//
// A call may be sent only once TryAcquire has said yes. When the reply to a
// call arrives, Complete applies the reply's rdma_credit and frees the call's
// slot. The requester must keep a posted Receive for every reply it can still
// get back (RFC 8166 §3.3.1: "A requester MUST maintain enough receive
// resources to accommodate expected replies"). Posting Max Receives before
// connecting, and reposting each one before calling Complete for its reply,
// meets this because InFlight never exceeds Max. Linux does the same: it
// posts Receives for the new grant before it wakes any sender.
//
// A Requester is not safe for concurrent use. Create one with NewRequester.
type Requester struct {
	max      uint32 // credits requested, and the most that are ever used
	limit    uint32 // current grant, 1 ≤ limit ≤ max
	inFlight uint32 // calls sent whose reply has not been completed
	stats    RequesterStats
}

// RequesterStats counts events of interest for monitoring, since the
// Requester was created.
type RequesterStats struct {
	// Stalls is the number of times TryAcquire refused a call because the
	// calls in flight had reached the limit.
	Stalls uint64
	// ZeroGrants is the number of replies whose rdma_credit was 0. Each was
	// read as 1 (RFC 8166 §3.3.1: a grant of zero would deadlock).
	ZeroGrants uint64
	// ClampedGrants is the number of replies that granted more than Max.
	// Each was cut down to Max.
	ClampedGrants uint64
}

// NewRequester returns a Requester for a new connection. It asks for max
// credits and starts with a limit of 1 (RFC 8166 §3.3.3). max is also the
// number of Receives the requester keeps posted for replies. The Linux client
// uses DefaultRequest. A max of 0 is taken as 1.
func NewRequester(max uint32) Requester {
	if max == 0 {
		max = 1
	}
	return Requester{max: max, limit: 1}
}

// TryAcquire reports whether a new call may be sent now, and if so counts it
// as in flight. The answer is yes only while InFlight < Limit
// (RFC 8166 §3.3.1: a requester MUST NOT send unacknowledged requests in
// excess of the granted credit limit). Each refusal counts as a stall.
func (r *Requester) TryAcquire() bool {
	if r.inFlight >= r.limit {
		r.stats.Stalls++
		return false
	}
	r.inFlight++
	return true
}

// Release frees the slot of a call whose reply has arrived, without
// changing the limit. It returns ErrNotInFlight, and changes nothing, if no
// call is in flight. Call Release only for a reply. An abandoned call keeps
// its credit until its reply arrives or the connection is Reset; see the
// package documentation.
func (r *Requester) Release() error {
	if r.inFlight == 0 {
		return ErrNotInFlight
	}
	r.inFlight--
	return nil
}

// Update applies the rdma_credit of a received reply and returns the
// resulting limit. A grant of 0 becomes 1 and a grant above Max becomes Max
// (RFC 8166 §3.3.1, matching Linux's rpcrdma_reply_handler). A grant below
// InFlight cancels nothing: TryAcquire refuses calls until enough replies have
// come back.
func (r *Requester) Update(granted uint32) uint32 {
	switch {
	case granted == 0:
		r.stats.ZeroGrants++
		granted = 1
	case granted > r.max:
		r.stats.ClampedGrants++
		granted = r.max
	}
	r.limit = granted
	return granted
}

// Complete handles the reply to one in-flight call. It applies the reply's
// rdma_credit as Update does, frees the call's slot, and returns the new limit.
// With no call in flight it returns ErrNotInFlight and changes nothing:
// a reply that answers no call carries no trustworthy grant. Linux also
// ignores the credits of a reply whose XID matches no request. Complete
// replies in the order their Receives complete. A reliable connection delivers
// Sends in order, so the most recent reply holds the grant in force.
func (r *Requester) Complete(granted uint32) (uint32, error) {
	if r.inFlight == 0 {
		return r.limit, ErrNotInFlight
	}
	r.inFlight--
	return r.Update(granted), nil
}

// Reset prepares the Requester for a new connection. Calls in flight are
// forgotten, since their Receives went away with the old connection, and the
// limit goes back to 1 (RFC 8166 §3.3.3; Linux's rpcrdma_reset_cwnd). The
// statistics are kept.
func (r *Requester) Reset() {
	r.limit = 1
	r.inFlight = 0
}

// Limit returns the current limit: the last grant received, after the
// adjustments made by Update, or 1 before any reply.
func (r *Requester) Limit() uint32 { return r.limit }

// InFlight returns the number of calls sent whose reply has not been
// completed. It can be above Limit after a grant shrinks.
func (r *Requester) InFlight() uint32 { return r.inFlight }

// Available returns how many more calls may be sent now: Limit - InFlight,
// or 0 if a shrunken grant has left InFlight at or above Limit.
func (r *Requester) Available() uint32 {
	if r.inFlight >= r.limit {
		return 0
	}
	return r.limit - r.inFlight
}

// Requested returns the value to put in the rdma_credit field of every call:
// the number of credits the requester asks for (RFC 8166 §3.3.1, §4.2.3).
func (r *Requester) Requested() uint32 { return r.max }

// Max returns the largest limit the Requester will use, the same value as
// Requested.
func (r *Requester) Max() uint32 { return r.max }

// Stats returns the event counters.
func (r *Requester) Stats() RequesterStats { return r.stats }
