package capture

import (
	"fmt"
	"net/netip"
)

// DefaultMaxMessageSize bounds the size of one reassembled message when
// Reassembler.MaxMessageSize is zero: 16 MiB, far more than an RPC-over-RDMA
// inline message (4 KiB with Linux) or one chunk segment.
const DefaultMaxMessageSize = 16 << 20

// Message is one operation reassembled from its packets: a Send, an RDMA
// Write, an RDMA Read request, or the data of an RDMA Read response.
type Message struct {
	Src, Dst netip.Addr // sender and receiver
	DestQP   uint32     // the receiving queue pair
	Kind     Kind
	// FirstPSN and LastPSN are the PSNs of the first and the last packet.
	// The responses to an RDMA Read request carry the PSNs from the
	// request's PSN on, which is how a response matches its request.
	FirstPSN, LastPSN uint32
	Packets           int    // packets that carried the message
	Opcode            Opcode // opcode of the last packet (SEND_ONLY_WITH_INVALIDATE, ...)
	// RETH is the remote buffer of an RDMA Write (from its first packet) or
	// of an RDMA Read request.
	RETH RETH
	// ImmDt is the immediate data, if Ext has ExtImmDt; InvalidateRKey the
	// R_Key a Send With Invalidate invalidates, if Ext has ExtIETH (RFC 8797
	// §3.3: a responder invalidates the requester's registration).
	Ext            Ext
	ImmDt          uint32
	InvalidateRKey uint32
	// Payload holds the message's bytes; it does not alias the packets.
	// An RPC-over-RDMA message is the Payload of a Send (RFC 8166 §4.1).
	Payload []byte
}

// Stats counts what a Reassembler did with the packets it was given.
type Stats struct {
	Packets       int // packets given to Add
	Messages      int // messages completed
	BadICRC       int // packets dropped because their ICRC was wrong
	Acks          int // ACKNOWLEDGE and ATOMIC ACKNOWLEDGE packets
	Duplicates    int // packets whose PSN was already accepted (retransmissions)
	OutOfSequence int // packets past a gap in the PSNs, dropped as a responder would
	Orphans       int // MIDDLE or LAST packets with no message in progress
	Abandoned     int // messages cut short by the start of another
	Oversize      int // messages dropped for exceeding the size limit
	Other         int // packets of no message (CNPs, atomics)
}

// flowKey names a stream of packets that share a PSN sequence: the packets a
// sender addresses to one queue pair, requests and responses apart, since a
// QP's requests and its responses to the peer's requests are numbered in two
// different PSN spaces (IBA Vol. 1 §9.7.1).
type flowKey struct {
	src, dst netip.Addr
	qp       uint32
	response bool
}

type flow struct {
	last       uint32 // PSN of the last accepted packet
	inProgress bool
	msg        Message
}

// Reassembler turns RoCEv2 packets, in capture order, into Messages. It
// follows the rules of an RC responder (IBA Vol. 1 §9.7.5): within a
// multi-packet message it accepts only the next PSN, so retransmissions are
// dropped as duplicates and packets past a gap are dropped until the gap is
// filled; a new message may start at any later PSN, since an RDMA Read
// request consumes one PSN per response packet. Packets whose ICRC is wrong
// are dropped. The zero value is ready to use.
type Reassembler struct {
	// MaxMessageSize bounds one message; a longer one is dropped and
	// counted in Stats.Oversize. Zero means DefaultMaxMessageSize.
	MaxMessageSize int

	flows map[flowKey]*flow
	stats Stats
}

// Stats returns the counts so far.
func (r *Reassembler) Stats() Stats { return r.stats }

// Incomplete returns the number of messages still waiting for packets.
func (r *Reassembler) Incomplete() int {
	n := 0
	for _, f := range r.flows {
		if f.inProgress {
			n++
		}
	}
	return n
}

// psnAfter reports whether PSN a comes after PSN b in the 24-bit PSN space
// (IBA Vol. 1 §9.7.1.3: half the space lies ahead, half behind).
func psnAfter(a, b uint32) bool {
	d := (a - b) & 0xffffff
	return d != 0 && d < 1<<23
}

// Add takes the next packet of the capture. When the packet completes a
// message, Add returns it with done true.
func (r *Reassembler) Add(p *Packet) (m Message, done bool) {
	r.stats.Packets++
	info, ok := p.Opcode.info()
	switch {
	case !ok:
		r.stats.Other++
		return m, false
	case p.Src.IsValid() && !p.ICRCValid:
		// Src is set only by Decode, which checks the ICRC; a packet
		// from DecodeIB has no ICRC verdict and is taken as is.
		r.stats.BadICRC++
		return m, false
	case p.Opcode == OpAck || p.Opcode == OpAtomicAck:
		r.stats.Acks++
		return m, false
	case info.pos == posNone:
		r.stats.Other++
		return m, false
	}
	key := flowKey{src: p.Src.Addr(), dst: p.Dst.Addr(), qp: p.DestQP, response: info.kind == KindReadResponse}
	if r.flows == nil {
		r.flows = make(map[flowKey]*flow)
	}
	f, seen := r.flows[key]
	if !seen {
		f = &flow{}
		r.flows[key] = f
	}
	starts := info.pos == posFirst || info.pos == posOnly
	switch {
	case !seen:
		if !starts {
			// The capture began inside a message: nothing to attach
			// this packet to, and no PSN to check the next ones against.
			delete(r.flows, key)
			r.stats.Orphans++
			return m, false
		}
	case !psnAfter(p.PSN, f.last):
		r.stats.Duplicates++
		return m, false
	case f.inProgress && p.PSN != (f.last+1)&0xffffff:
		r.stats.OutOfSequence++
		return m, false
	case f.inProgress && (starts || info.kind != f.msg.Kind):
		// The sender began another message before finishing this one:
		// the receiver would have seen a sequence error.
		r.stats.Abandoned++
		f.inProgress = false
		if !starts {
			f.last = p.PSN
			r.stats.Orphans++
			return m, false
		}
	case !f.inProgress && !starts:
		f.last = p.PSN
		r.stats.Orphans++
		return m, false
	}
	f.last = p.PSN
	if starts {
		f.inProgress = true
		f.msg = Message{Src: p.Src.Addr(), Dst: p.Dst.Addr(), DestQP: p.DestQP, Kind: info.kind,
			FirstPSN: p.PSN, RETH: p.RETH}
	}
	limit := r.MaxMessageSize
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	if len(p.Payload) > limit-len(f.msg.Payload) {
		r.stats.Oversize++
		f.inProgress = false
		f.msg = Message{}
		return m, false
	}
	f.msg.Payload = append(f.msg.Payload, p.Payload...)
	f.msg.Packets++
	if info.pos != posLast && info.pos != posOnly {
		return m, false
	}
	m = f.msg
	m.LastPSN, m.Opcode = p.PSN, p.Opcode
	m.Ext |= p.Ext & (ExtImmDt | ExtIETH)
	m.ImmDt, m.InvalidateRKey = p.ImmDt, p.IETHRKey
	if m.Payload == nil {
		m.Payload = []byte{}
	}
	f.inProgress = false
	f.msg = Message{}
	r.stats.Messages++
	return m, true
}

// Capture is what Analyze found in a capture.
type Capture struct {
	Packets  []Packet  // the RoCEv2 packets, in capture order
	Messages []Message // the completed messages, in the order they completed
	Stats    Stats     // what the Reassembler did
	// Malformed counts frames that Decode rejected, and Err is the first
	// of their errors.
	Malformed  int
	Err        error
	Incomplete int // messages left waiting for packets at the end
}

// Analyze decodes every frame (as vmtest.ParsePCAP returns them: Ethernet
// frames) and reassembles the packets into messages.
func Analyze(frames [][]byte) *Capture {
	c := &Capture{}
	var r Reassembler
	for i, fr := range frames {
		p, err := Decode(fr)
		if err != nil {
			c.Malformed++
			if c.Err == nil {
				c.Err = fmt.Errorf("frame %d: %w", i, err)
			}
			continue
		}
		c.Packets = append(c.Packets, p)
		if m, ok := r.Add(&p); ok {
			c.Messages = append(c.Messages, m)
		}
	}
	c.Stats, c.Incomplete = r.Stats(), r.Incomplete()
	return c
}
