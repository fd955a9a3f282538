package capture

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
)

// ErrChunkData reports a chunk whose bytes the capture does not hold in full.
var ErrChunkData = errors.New("capture: chunk data missing from the capture")

// Transfer is data moved to or from a peer's registered memory: an RDMA
// Write (Data was written at RKey/VA of Target) or an RDMA Read (Data was
// read from RKey/VA of Target, as the responses to the request brought it).
type Transfer struct {
	Kind      Kind       // KindWrite or KindReadRequest
	Initiator netip.Addr // the side that posted the Write or the Read
	Target    netip.Addr // the side whose memory RKey names
	RKey      uint32
	VA        uint64
	Data      []byte // aliases the Messages' payloads
}

// Transfers lists the RDMA Writes and the RDMA Reads in msgs, in message
// order. A Read is listed once its response is found: the response that
// comes back from the target with the request's first PSN (IBA Vol. 1
// §9.7.4.1.3: the responses of a Read carry the PSNs the request reserved).
// A Read whose response is missing is left out.
func Transfers(msgs []Message) []Transfer {
	type respKey struct {
		from, to netip.Addr
		psn      uint32
	}
	responses := make(map[respKey]*Message)
	for i := range msgs {
		if m := &msgs[i]; m.Kind == KindReadResponse {
			responses[respKey{m.Src, m.Dst, m.FirstPSN}] = m
		}
	}
	var ts []Transfer
	for i := range msgs {
		m := &msgs[i]
		switch m.Kind {
		case KindWrite:
			ts = append(ts, Transfer{Kind: KindWrite, Initiator: m.Src, Target: m.Dst,
				RKey: m.RETH.RKey, VA: m.RETH.VA, Data: m.Payload})
		case KindReadRequest:
			if r := responses[respKey{m.Dst, m.Src, m.FirstPSN}]; r != nil {
				ts = append(ts, Transfer{Kind: KindReadRequest, Initiator: m.Src, Target: m.Dst,
					RKey: m.RETH.RKey, VA: m.RETH.VA, Data: r.Payload})
			}
		}
	}
	return ts
}

// ChunkData gathers the bytes that transfers of the given kind, posted by
// initiator against target's memory, moved through the segments of a chunk,
// in segment order: for each segment, Length bytes from Offset on, under
// Handle. It is how the data of a Read chunk (RDMA Reads by the responder),
// a Write chunk or a Reply chunk (RDMA Writes by the responder) is found in a
// capture (RFC 8166 §3.4). An error says which bytes are missing.
func ChunkData(ts []Transfer, kind Kind, initiator, target netip.Addr, chunk []Segment) ([]byte, error) {
	var out []byte
	for i, s := range chunk {
		var pieces []Transfer
		for _, t := range ts {
			if t.Kind == kind && t.Initiator == initiator && t.Target == target && t.RKey == s.Handle {
				pieces = append(pieces, t)
			}
		}
		sort.SliceStable(pieces, func(a, b int) bool { return pieces[a].VA < pieces[b].VA })
		// Walk the segment from its offset, taking from each piece the
		// bytes that continue it; pieces may overlap (retransmitted data).
		at, end := s.Offset, s.Offset+uint64(s.Length)
		if end < at {
			return out, fmt.Errorf("%w: segment %d (handle %#x) wraps around the address space", ErrChunkData, i, s.Handle)
		}
		for _, p := range pieces {
			if at >= end {
				break
			}
			pend := p.VA + uint64(len(p.Data))
			if p.VA > at || pend <= at {
				continue
			}
			take := min(pend, end) - at
			from := at - p.VA
			out = append(out, p.Data[from:from+take]...)
			at += take
		}
		if at < end {
			return out, fmt.Errorf("%w: segment %d (handle %#x): %d of %d bytes", ErrChunkData, i, s.Handle, at-s.Offset, s.Length)
		}
	}
	return out, nil
}
