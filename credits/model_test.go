package credits

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// This file checks Requester and Responder against a model of one RPC-over-RDMA
// connection. The model has a requester and a responder, a FIFO of Sends in
// each direction (an RC queue pair delivers in order), the Receives each side
// has actually posted ("hardware" counts kept apart from the types' own
// accounting), and requests the responder processes and answers in any order.
// After every event it checks the invariants of RFC 8166 §3.3.1, and it fails
// on an RNR: a Send reaching a side with no Receive posted.

var (
	errRNRResponder = errors.New("model: call arrived with no Receive posted at the responder (RNR)")
	errRNRRequester = errors.New("model: reply arrived with no Receive posted at the requester (RNR)")
)

// Event kinds. A fuzz input is a sequence of (kind, argument) byte pairs.
const (
	evSend        = iota // requester tries to send a call
	evDeliverCall        // the oldest call in transit reaches the responder
	evPost               // responder posts 1..8 Receives
	evReply              // responder answers one request being processed
	evDeliverRep         // the oldest reply in transit reaches the requester
	evComplete           // requester reposts the Receive and completes the oldest delivered reply
	evDrop               // responder drops one request without a reply
	evReconnect          // the connection is replaced
	numEvents
)

type modelCall struct{ requested uint32 }

type model struct {
	policy  Policy
	reqMax  uint32
	rqDepth uint32 // responder Receive queue depth: most Receives posted at once

	req Requester
	rsp Responder

	hwPosted   uint32 // Receives really posted at the responder
	hwTotal    uint64 // calls received + Receives posted, on this connection (R+P)
	reqPosted  uint32 // Receives really posted at the requester
	toRsp      []modelCall
	processing []modelCall
	dropped    int
	toReq      []uint32 // grants on the wire
	delivered  []uint32 // replies received by the requester, not yet completed

	sent      uint64 // calls sent on this connection
	replies   uint64 // replies sent on this connection (k)
	horizon   uint64 // max over replies of k + grant, at least 1 (calls the requester may ever send)
	completed uint64 // replies completed on this connection
	reqHoriz  uint64 // max over completions of completed + limit, at least 1

	// extraGrant is added to every grant after the checks, bypassing the
	// Receive bound, to show that the model catches an unsafe responder and
	// that the bound cannot be loosened by even one credit.
	extraGrant uint32
	// zeroGrantEvery, when not 0, puts 0 on the wire instead of every
	// zeroGrantEvery-th grant (a misbehaving peer; still safe, since the
	// requester reads 0 as 1).
	zeroGrantEvery uint64

	totalCompleted uint64
	maxInFlight    uint32
	unbacked       uint64
	rspStats       ResponderStats // summed over the connections replaced so far
}

func newModel(p Policy, reqMax, rqDepth, initialPost uint32) *model {
	m := &model{policy: p, reqMax: reqMax, rqDepth: rqDepth}
	m.req = NewRequester(reqMax)
	m.connect(initialPost)
	return m
}

// connect starts a new connection: both sides fresh, the responder with
// initialPost Receives (at least 1, RFC 8166 §3.3.3), the requester with Max.
func (m *model) connect(initialPost uint32) {
	m.req.Reset()
	st := m.rsp.Stats()
	m.rspStats.Shrinks += st.Shrinks
	m.rspStats.Grows += st.Grows
	m.rspStats.ReceiveLimited += st.ReceiveLimited
	m.rsp = NewResponder(m.policy)
	initialPost = max(1, min(initialPost, m.rqDepth))
	m.hwPosted, m.hwTotal = initialPost, uint64(initialPost)
	if err := m.rsp.Post(initialPost); err != nil {
		panic(err)
	}
	m.reqPosted = m.req.Max()
	m.toRsp, m.processing, m.toReq, m.delivered = m.toRsp[:0], m.processing[:0], m.toReq[:0], m.delivered[:0]
	m.dropped = 0
	m.sent, m.replies, m.completed = 0, 0, 0
	m.horizon, m.reqHoriz = 1, 1
}

func (m *model) step(kind, arg byte) error {
	switch kind % numEvents {
	case evSend:
		before := m.req.InFlight()
		if !m.req.TryAcquire() {
			if before < m.req.Limit() {
				return fmt.Errorf("TryAcquire refused with %d in flight, limit %d", before, m.req.Limit())
			}
			return nil
		}
		if m.req.InFlight() > m.req.Limit() {
			return fmt.Errorf("TryAcquire allowed %d in flight over limit %d", m.req.InFlight(), m.req.Limit())
		}
		requested := m.req.Requested()
		if arg%16 == 0 {
			requested = 0 // the responder could not read it
		}
		m.toRsp = append(m.toRsp, modelCall{requested})
		m.sent++
		m.maxInFlight = max(m.maxInFlight, m.req.InFlight())
	case evDeliverCall:
		if len(m.toRsp) == 0 {
			return nil
		}
		if m.hwPosted == 0 {
			return errRNRResponder
		}
		m.hwPosted--
		if err := m.rsp.Received(); err != nil {
			return fmt.Errorf("Received: %w", err)
		}
		m.processing = append(m.processing, m.toRsp[0])
		m.toRsp = m.toRsp[1:]
	case evPost:
		n := min(uint32(arg%8)+1, m.rqDepth-m.hwPosted)
		if n == 0 {
			return nil
		}
		m.hwPosted += n
		m.hwTotal += uint64(n)
		if err := m.rsp.Post(n); err != nil {
			return fmt.Errorf("Post: %w", err)
		}
	case evReply:
		if len(m.processing) == 0 {
			return nil
		}
		i := int(arg) % len(m.processing)
		c := m.processing[i]
		unansweredAfter := m.rsp.Unanswered() - 1
		g, err := m.rsp.Reply(c.requested)
		if errors.Is(err, ErrUnbacked) {
			if m.hwPosted+unansweredAfter != 0 {
				return fmt.Errorf("ErrUnbacked with %d posted and %d unanswered", m.hwPosted, unansweredAfter)
			}
			m.unbacked++
			return nil // the transport posts a Receive first
		}
		if err != nil {
			return fmt.Errorf("Reply: %w", err)
		}
		if g < 1 || g > m.rsp.Policy().Max {
			return fmt.Errorf("grant %d outside [1, %d]", g, m.rsp.Policy().Max)
		}
		if c.requested != 0 && g > c.requested {
			return fmt.Errorf("grant %d above requested %d", g, c.requested)
		}
		if uint64(g) > uint64(m.hwPosted)+uint64(unansweredAfter) {
			return fmt.Errorf("grant %d above %d posted + %d unanswered", g, m.hwPosted, unansweredAfter)
		}
		g += m.extraGrant
		m.replies++
		m.horizon = max(m.horizon, m.replies+uint64(g))
		if m.extraGrant == 0 && m.hwTotal < m.horizon {
			return fmt.Errorf("horizon %d above calls received + Receives posted %d", m.horizon, m.hwTotal)
		}
		wire := g
		if m.zeroGrantEvery != 0 && m.replies%m.zeroGrantEvery == 0 {
			wire = 0
		}
		m.processing = append(m.processing[:i], m.processing[i+1:]...)
		m.toReq = append(m.toReq, wire)
	case evDeliverRep:
		if len(m.toReq) == 0 {
			return nil
		}
		if m.reqPosted == 0 {
			return errRNRRequester
		}
		m.reqPosted--
		m.delivered = append(m.delivered, m.toReq[0])
		m.toReq = m.toReq[1:]
	case evComplete:
		if len(m.delivered) == 0 {
			return nil
		}
		m.reqPosted++ // repost before freeing the slot
		g := m.delivered[0]
		m.delivered = m.delivered[1:]
		limit, err := m.req.Complete(g)
		if err != nil {
			return fmt.Errorf("Complete: %w", err)
		}
		want := max(1, min(g, m.reqMax))
		if limit != want || m.req.Limit() != want {
			return fmt.Errorf("Complete(%d) gave limit %d (Limit %d), want %d", g, limit, m.req.Limit(), want)
		}
		m.completed++
		m.totalCompleted++
		m.reqHoriz = max(m.reqHoriz, m.completed+uint64(limit))
	case evDrop:
		if len(m.processing) == 0 || arg >= 4 {
			return nil // drops are rare
		}
		i := int(arg) % len(m.processing)
		if err := m.rsp.Drop(); err != nil {
			return fmt.Errorf("Drop: %w", err)
		}
		m.processing = append(m.processing[:i], m.processing[i+1:]...)
		m.dropped++
	case evReconnect:
		if arg != 0 {
			return nil // reconnects are rarer still
		}
		m.connect(m.rqDepth)
	}
	return m.check()
}

// stuck reports whether no call can ever complete on this connection: all
// the calls in flight were dropped and no credit is left to send another.
func (m *model) stuck() bool {
	return m.dropped > 0 && m.req.Available() == 0 && int(m.req.InFlight()) == m.dropped
}

// check verifies the invariants that hold between events.
func (m *model) check() error {
	r, s := &m.req, &m.rsp
	if r.Limit() < 1 || r.Limit() > m.reqMax {
		return fmt.Errorf("limit %d outside [1, %d]", r.Limit(), m.reqMax)
	}
	if r.InFlight() > m.reqMax {
		return fmt.Errorf("in flight %d above max %d", r.InFlight(), m.reqMax)
	}
	// Shrinking never cancels a call: each call in flight is somewhere.
	where := len(m.toRsp) + len(m.processing) + m.dropped + len(m.toReq) + len(m.delivered)
	if int(r.InFlight()) != where {
		return fmt.Errorf("in flight %d but %d calls in the model", r.InFlight(), where)
	}
	if m.sent > m.reqHoriz {
		return fmt.Errorf("requester sent %d calls, its grants allowed %d", m.sent, m.reqHoriz)
	}
	if wantAvail := int64(r.Limit()) - int64(r.InFlight()); max(wantAvail, 0) != int64(r.Available()) {
		return fmt.Errorf("Available %d, limit %d, in flight %d", r.Available(), r.Limit(), r.InFlight())
	}
	if s.Posted() != m.hwPosted {
		return fmt.Errorf("responder counts %d posted, %d really are", s.Posted(), m.hwPosted)
	}
	if int(s.Unanswered()) != len(m.processing)+m.dropped || int(s.Backlog()) != len(m.processing) {
		return fmt.Errorf("unanswered %d backlog %d, model %d processing %d dropped",
			s.Unanswered(), s.Backlog(), len(m.processing), m.dropped)
	}
	p := s.Policy()
	if s.Target() < p.Min || s.Target() > p.Max {
		return fmt.Errorf("target %d outside [%d, %d]", s.Target(), p.Min, p.Max)
	}
	if m.reqPosted < uint32(len(m.toReq)) {
		return fmt.Errorf("requester has %d Receives for %d replies in transit", m.reqPosted, len(m.toReq))
	}
	return nil
}

// eventWeights biases the random walk; lazy reposting (a low evPost weight)
// is what makes the Receive bound bite.
type eventWeights [numEvents]int

func (w *eventWeights) pick(rng *rand.Rand) byte {
	total := 0
	for _, x := range w {
		total += x
	}
	n := rng.IntN(total)
	for k, x := range w {
		if n < x {
			return byte(k)
		}
		n -= x
	}
	return 0
}

type modelConfig struct {
	policy          Policy
	reqMax, rqDepth uint32
	weights         eventWeights
	zeroGrantEvery  uint64
	extraGrant      uint32
}

func randomConfig(rng *rand.Rand) modelConfig {
	var c modelConfig
	c.policy.Max = uint32(rng.IntN(80)) + 1
	if rng.IntN(4) != 0 {
		c.policy.Min = uint32(rng.IntN(int(c.policy.Max))) + 1
		c.policy.HighWater = uint32(rng.IntN(24))
		c.policy.LowWater = uint32(rng.IntN(12))
	}
	c.reqMax = uint32(rng.IntN(160)) + 1
	c.rqDepth = c.policy.Max + uint32(rng.IntN(16)) + 1
	for k := range c.weights {
		c.weights[k] = rng.IntN(10) + 1
	}
	if rng.IntN(2) == 0 {
		c.weights[evPost] = 1 // lazy reposting
	}
	if rng.IntN(3) == 0 {
		c.zeroGrantEvery = uint64(rng.IntN(20)) + 2
	}
	return c
}

// runModel drives a model for n random events and returns it with the first
// invariant violation, if any.
func runModel(rng *rand.Rand, c modelConfig, n int) (*model, error) {
	m := newModel(c.policy, c.reqMax, c.rqDepth, c.rqDepth)
	m.extraGrant, m.zeroGrantEvery = c.extraGrant, c.zeroGrantEvery
	for i := range n {
		kind := c.weights.pick(rng)
		arg := byte(rng.UintN(256))
		if kind == evReconnect && rng.IntN(64) == 0 {
			arg = 0
		}
		if m.stuck() {
			// Every credit is held by a dropped call: the requester times
			// out and replaces the connection, as Linux does.
			kind, arg = evReconnect, 0
		}
		if err := m.step(kind, arg); err != nil {
			return m, fmt.Errorf("event %d (kind %d, arg %d): %w", i, kind, arg, err)
		}
	}
	return m, nil
}

func TestModelRandomSequences(t *testing.T) {
	const seeds, events = 256, 50_000
	var completed, limited, shrinks, grows, zero, clamped, stalls, unbacked uint64
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 0x8166))
		c := randomConfig(rng)
		m, err := runModel(rng, c, events)
		if err != nil {
			t.Fatalf("seed %d, config %+v: %v", seed, c, err)
		}
		if m.totalCompleted < events/200 {
			t.Errorf("seed %d: only %d calls completed in %d events: the model is stuck", seed, m.totalCompleted, events)
		}
		completed += m.totalCompleted
		m.connect(1) // folds the last connection's responder stats in
		rs, qs := m.rspStats, m.req.Stats()
		limited += rs.ReceiveLimited
		shrinks += rs.Shrinks
		grows += rs.Grows
		zero += qs.ZeroGrants
		clamped += qs.ClampedGrants
		stalls += qs.Stalls
		unbacked += m.unbacked
	}
	// The walk must have exercised every path it claims to check, or the
	// invariants above were checked on nothing.
	for name, v := range map[string]uint64{
		"completed calls": completed, "receive-limited grants": limited,
		"shrinks": shrinks, "grows": grows, "zero grants": zero,
		"clamped grants": clamped, "stalls": stalls, "unbacked replies": unbacked,
	} {
		if v == 0 {
			t.Errorf("no %s in %d×%d events", name, seeds, events)
		}
	}
	t.Logf("%d calls completed; %d receive-limited grants, %d shrinks, %d grows, %d stalls",
		completed, limited, shrinks, grows, stalls)
}

// TestModelDetectsUnsafeGrant shows that the model can fail, and that the
// Receive bound is tight: a responder that grants even one credit more than
// the bound, with lazy reposting and a requester that sends at once, is
// caught by an RNR.
func TestModelDetectsUnsafeGrant(t *testing.T) {
	c := modelConfig{
		policy:  Policy{Max: 32},
		reqMax:  128,
		rqDepth: 40,
		weights: eventWeights{evSend: 20, evDeliverCall: 20, evPost: 1, evReply: 6, evDeliverRep: 10, evComplete: 10},
	}
	for _, extra := range []uint32{1, 32} {
		c.extraGrant = extra
		_, err := runModel(rand.New(rand.NewPCG(1, 2)), c, 50_000)
		if !errors.Is(err, errRNRResponder) {
			t.Errorf("grant bound + %d: got %v, want %v", extra, err, errRNRResponder)
		}
	}
	// The same walk with the real grants has no RNR.
	c.extraGrant = 0
	if _, err := runModel(rand.New(rand.NewPCG(1, 2)), c, 50_000); err != nil {
		t.Fatal(err)
	}
}

// FuzzConnection drives the connection model with arbitrary event sequences:
// each pair of input bytes is one event and its argument. The first bytes
// choose the configuration.
func FuzzConnection(f *testing.F) {
	f.Add([]byte{64, 128, 0, 0, 0, 0, 1, 0, 3, 0, 4, 0, 5, 0})
	f.Add([]byte{1, 1, 8, 2, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 3, 1, 3, 0, 4, 0, 4, 0, 5, 0, 5, 0})
	f.Add([]byte{16, 4, 20, 4, 0, 0, 0, 0, 1, 0, 1, 0, 3, 0, 2, 7, 3, 0, 6, 0, 7, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		p := Policy{Max: uint32(in[0]), Min: uint32(in[2] % 16), HighWater: uint32(in[3] % 32), LowWater: uint32(in[3] / 32)}
		np := p.normalized()
		reqMax := max(1, uint32(in[1]))
		m := newModel(p, reqMax, np.Max+8, np.Max+8)
		m.zeroGrantEvery = uint64(in[2] / 16)
		ev := in[4:]
		if len(ev) > 4096 {
			ev = ev[:4096]
		}
		for i := 0; i+1 < len(ev); i += 2 {
			if err := m.step(ev[i], ev[i+1]); err != nil {
				t.Fatalf("event %d: %v", i/2, err)
			}
		}
	})
}
