package credits

// DefaultMaxGrant is the grant a Responder makes when its Policy leaves Max
// at 0. It matches Linux svcrdma's default sc_max_requests
// (RPCRDMA_MAX_REQUESTS = 64).
const DefaultMaxGrant = 64

// Policy sets how a Responder chooses its grant (RFC 8166 §3.3.1 leaves the
// policy to the responder). The zero Policy grants DefaultMaxGrant all the
// time, as Linux svcrdma does.
//
// When HighWater is not 0, the grant adapts to load. Load is measured as the
// backlog: requests received and not yet answered or dropped, including the
// one being answered. For each reply:
//
//   - If the backlog is above HighWater, the target grant is halved, but not
//     below Min. It is halved at most once per window, a window being as
//     many replies as the target was before it was halved. One burst
//     therefore costs one halving and not a collapse to Min.
//   - Otherwise, if the backlog is at or below LowWater, the target grows by
//     one credit, up to Max.
//   - Otherwise the target stays the same.
//
// The grant actually sent is the target, lowered to the requester's request
// when that is smaller. It is then lowered to what the posted Receives can
// back. That limit can take the grant below Min, because safety comes before
// policy.
type Policy struct {
	// Max is the largest grant. 0 means DefaultMaxGrant.
	Max uint32
	// Min is the smallest target the load policy shrinks to. 0 means 1, and
	// a value above Max means Max.
	Min uint32
	// HighWater is the backlog above which the target shrinks. 0 turns the
	// load policy off, so the target stays at Max.
	HighWater uint32
	// LowWater is the backlog at or below which the target grows back. 0,
	// or a value above HighWater, means max(1, HighWater/2).
	LowWater uint32
}

// normalized returns p with defaults filled in and ranges made consistent, as
// documented on the fields.
func (p Policy) normalized() Policy {
	if p.Max == 0 {
		p.Max = DefaultMaxGrant
	}
	if p.Min == 0 {
		p.Min = 1
	}
	if p.Min > p.Max {
		p.Min = p.Max
	}
	if p.HighWater == 0 {
		p.LowWater = 0
		return p
	}
	if p.LowWater == 0 || p.LowWater > p.HighWater {
		p.LowWater = max(1, p.HighWater/2)
	}
	return p
}

// ResponderStats counts events of interest for monitoring, since the
// Responder was created.
type ResponderStats struct {
	// Shrinks is the number of times the load policy halved the target.
	Shrinks uint64
	// Grows is the number of times the load policy raised the target by one.
	Grows uint64
	// ReceiveLimited is the number of grants lowered, below both the target
	// and the requester's request, because too few Receives were posted.
	// A steady rise means Receives are reposted too slowly.
	ReceiveLimited uint64
}

// Responder is the responder's side of RPC-over-RDMA credit flow control
// (RFC 8166 §3.3.1). It counts the Receives posted and the requests not yet
// answered, and it chooses the rdma_credit of each reply. Every grant it
// returns is at least 1, at most Policy.Max, and at most
//
//	Posted() + Unanswered()    (counted after the reply)
//
// The package documentation explains why that bound means a requester that
// obeys the grants never causes an RNR.
//
// Before accepting a connection, post at least one Receive: the requester may
// send one call before it has seen any grant (RFC 8166 §3.3.3). In practice
// post Policy.Max, as Linux svcrdma does. Posting what Wanted reports before
// each reply means no grant is ever limited by Receives.
//
// A Responder is not safe for concurrent use. Create one with NewResponder.
type Responder struct {
	policy      Policy
	target      uint32 // grant chosen by the load policy, Min ≤ target ≤ Max
	posted      uint32 // Receives posted and not yet consumed
	unanswered  uint32 // requests received with no reply sent, dropped ones included
	dropped     uint32 // unanswered requests that will never get a reply
	sinceShrink uint32 // replies since the target was last halved
	stats       ResponderStats
}

// NewResponder returns a Responder for a new connection, with the target at
// the policy's Max and no Receives posted. Call Post for the Receives posted
// before the connection is accepted.
func NewResponder(p Policy) Responder {
	p = p.normalized()
	return Responder{policy: p, target: p.Max, sinceShrink: p.Max}
}

// Post records n more Receives posted on the connection. Call it after the
// post has succeeded. It returns ErrOverflow, and changes nothing, if the
// count would pass 2^32-1.
func (r *Responder) Post(n uint32) error {
	if r.posted+n < r.posted {
		return ErrOverflow
	}
	r.posted += n
	return nil
}

// Received records that a posted Receive completed with a message: one fewer
// Receive is posted and one more request is being processed. It returns
// ErrNoReceivePosted, and changes nothing, if no Receive was counted as
// posted. On a real queue pair that message would have caused an RNR.
func (r *Responder) Received() error {
	if r.posted == 0 {
		return ErrNoReceivePosted
	}
	r.posted--
	r.unanswered++
	return nil
}

// Reply records that a reply (RDMA_MSG, RDMA_NOMSG or RDMA_ERROR) is about to
// be sent for one request being processed. It returns the value to put in the
// reply's rdma_credit field.
//
// requested is the rdma_credit of the call being answered. The grant never
// exceeds it, because the requester would not use more (RFC 8166 §3.3.1: a
// requester may send the lower of the requested and granted values). 0, for
// example when the call's header could not be decoded, means no limit from
// the requester.
//
// It returns ErrNoRequest if no request is being processed. It returns
// ErrUnbacked if neither a posted Receive nor another unanswered request could
// back a grant of 1; in that case, post a Receive and call Reply again. After
// an error nothing has changed.
func (r *Responder) Reply(requested uint32) (uint32, error) {
	if r.unanswered == r.dropped {
		return 0, ErrNoRequest
	}
	// backing is what the posted Receives can cover once this request
	// counts as answered: P + (R - k) in the package documentation.
	backing := uint64(r.posted) + uint64(r.unanswered) - 1
	if backing == 0 {
		return 0, ErrUnbacked
	}
	r.adapt(r.unanswered - r.dropped)
	grant := r.target
	if requested != 0 && requested < grant {
		grant = requested
	}
	if uint64(grant) > backing {
		grant = uint32(backing)
		r.stats.ReceiveLimited++
	}
	r.unanswered--
	return grant, nil
}

// adapt applies the load policy for one reply, given the backlog including
// the request being answered.
func (r *Responder) adapt(backlog uint32) {
	p := &r.policy
	if r.sinceShrink < ^uint32(0) {
		r.sinceShrink++
	}
	if p.HighWater == 0 {
		return
	}
	switch {
	case backlog > p.HighWater:
		if r.sinceShrink >= r.target && r.target > p.Min {
			r.target = max(p.Min, r.target/2)
			r.sinceShrink = 0
			r.stats.Shrinks++
		}
	case backlog <= p.LowWater:
		if r.target < p.Max {
			r.target++
			r.stats.Grows++
		}
	}
}

// Drop records that processing of a request ended without a reply, as when
// the RPC layer discards a call. The requester's credit for that call is
// never returned on this connection. The requester gets it back only by
// timing out and reconnecting, which is what Linux does. So drop only when
// there is no choice. It returns ErrNoRequest, and changes nothing, if no
// request is being processed.
func (r *Responder) Drop() error {
	if r.unanswered == r.dropped {
		return ErrNoRequest
	}
	r.dropped++
	return nil
}

// Posted returns the number of Receives posted and not yet consumed.
func (r *Responder) Posted() uint32 { return r.posted }

// Backlog returns the number of requests received and still being processed:
// not answered and not dropped.
func (r *Responder) Backlog() uint32 { return r.unanswered - r.dropped }

// Unanswered returns the number of requests received with no reply sent,
// dropped ones included. Each one still holds one of the requester's credits.
func (r *Responder) Unanswered() uint32 { return r.unanswered }

// Target returns the grant the load policy would make now, before the limits
// from the requester's request and from the posted Receives.
func (r *Responder) Target() uint32 { return r.target }

// Wanted returns how many more Receives to post so that the next grant
// cannot be limited by Receives. That is, Posted reaches the largest target
// the next reply can choose: Target, plus one if the load policy may grow it.
func (r *Responder) Wanted() uint32 {
	want := r.target
	if r.policy.HighWater != 0 && want < r.policy.Max {
		want++
	}
	if r.posted >= want {
		return 0
	}
	return want - r.posted
}

// Policy returns the policy in effect, with defaults filled in.
func (r *Responder) Policy() Policy { return r.policy }

// Stats returns the event counters.
func (r *Responder) Stats() ResponderStats { return r.stats }
