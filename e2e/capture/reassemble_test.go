package capture

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sendPackets splits msg into the packets of one Send of path MTU mtu,
// starting at psn, as an RC requester does.
func sendPackets(msg []byte, mtu int, psn uint32, last Opcode) []pkt {
	if len(msg) <= mtu {
		only := map[Opcode]Opcode{OpSendLast: OpSendOnly, OpSendLastInvalidate: OpSendOnlyInvalidate, OpSendLastImm: OpSendOnlyImm}[last]
		return []pkt{{op: only, qp: 17, psn: psn, ieth: 0x77, imm: 0x55, payload: msg}}
	}
	var ps []pkt
	for i := 0; i < len(msg); i += mtu {
		op := OpSendMiddle
		switch {
		case i == 0:
			op = OpSendFirst
		case i+mtu >= len(msg):
			op = last
		}
		ps = append(ps, pkt{op: op, qp: 17, psn: psn & 0xffffff, ieth: 0x77, imm: 0x55, payload: msg[i:min(i+mtu, len(msg))]})
		psn++
	}
	return ps
}

// feed runs the packets through r and returns the completed messages.
func feed(t *testing.T, r *Reassembler, ps ...pkt) []Message {
	t.Helper()
	var out []Message
	for _, p := range ps {
		if m, ok := r.Add(p.decoded(t)); ok {
			out = append(out, m)
		}
	}
	return out
}

func TestReassembleSend(t *testing.T) {
	msg := bytes.Repeat([]byte("0123456789abcdef"), 256) // 4 KiB: an inline message at Linux's threshold
	for _, last := range []Opcode{OpSendLast, OpSendLastInvalidate, OpSendLastImm} {
		var r Reassembler
		ps := sendPackets(msg, 1024, 100, last)
		require.Len(t, ps, 4)
		ms := feed(t, &r, ps...)
		require.Len(t, ms, 1, "%v", last)
		m := ms[0]
		assert.Equal(t, KindSend, m.Kind)
		assert.Equal(t, msg, m.Payload)
		assert.Equal(t, 4, m.Packets)
		assert.Equal(t, uint32(100), m.FirstPSN)
		assert.Equal(t, uint32(103), m.LastPSN)
		assert.Equal(t, last, m.Opcode)
		assert.Equal(t, uint32(17), m.DestQP)
		switch last {
		case OpSendLastInvalidate:
			assert.Equal(t, ExtIETH, m.Ext)
			assert.Equal(t, uint32(0x77), m.InvalidateRKey)
		case OpSendLastImm:
			assert.Equal(t, ExtImmDt, m.Ext)
			assert.Equal(t, uint32(0x55), m.ImmDt)
		default:
			assert.Zero(t, m.Ext)
		}
		assert.Equal(t, Stats{Packets: 4, Messages: 1}, r.Stats())
		assert.Zero(t, r.Incomplete())
	}
}

// TestReassembleRetransmission replays what a capture shows when a packet
// is lost on the way to the responder: the responder drops what follows the
// gap, NAKs, and the requester sends again from the lost PSN.
func TestReassembleRetransmission(t *testing.T) {
	msg := make([]byte, 3000)
	for i := range msg {
		msg[i] = byte(i)
	}
	ps := sendPackets(msg, 1024, 0xfffffe, OpSendLast) // PSNs 0xfffffe, 0xffffff, 0 (wrap)
	var r Reassembler
	// first, [second lost], last (out of sequence), second, last again, first again
	ms := feed(t, &r, ps[0], ps[2], ps[1], ps[2], ps[0], ps[2])
	require.Len(t, ms, 1)
	assert.Equal(t, msg, ms[0].Payload)
	assert.Equal(t, uint32(0), ms[0].LastPSN)
	st := r.Stats()
	assert.Equal(t, 1, st.OutOfSequence)
	assert.Equal(t, 2, st.Duplicates)

	// A retransmitted whole message is one message, not two.
	ms = feed(t, &r, sendPackets([]byte("next"), 1024, 1, OpSendLast)...)
	ms = append(ms, feed(t, &r, sendPackets([]byte("next"), 1024, 1, OpSendLast)...)...)
	require.Len(t, ms, 1)
	assert.Equal(t, 3, r.Stats().Duplicates)
}

func TestReassembleBroken(t *testing.T) {
	ps := sendPackets(make([]byte, 3000), 1024, 10, OpSendLast)

	// The capture starts inside a message.
	var r Reassembler
	assert.Empty(t, feed(t, &r, ps[1], ps[2]))
	assert.Equal(t, 2, r.Stats().Orphans)

	// A message begins while another is unfinished.
	r = Reassembler{}
	next := sendPackets([]byte("new"), 1024, 12, OpSendLast)
	ms := feed(t, &r, ps[0], ps[1], next[0])
	require.Len(t, ms, 1)
	assert.Equal(t, []byte("new"), ms[0].Payload)
	assert.Equal(t, 1, r.Stats().Abandoned)

	// An RDMA Write packet in the middle of a Send.
	r = Reassembler{}
	w := pkt{op: OpWriteMiddle, qp: 17, psn: 11, payload: []byte("w")}
	assert.Empty(t, feed(t, &r, ps[0], w, ps[2]))
	assert.Equal(t, Stats{Packets: 3, Abandoned: 1, Orphans: 2}, r.Stats())

	// Oversize.
	r = Reassembler{MaxMessageSize: 1500}
	assert.Empty(t, feed(t, &r, ps...))
	st := r.Stats()
	assert.Equal(t, 1, st.Oversize)
	assert.Equal(t, 1, st.Orphans) // the LAST after the drop
	assert.Zero(t, r.Incomplete())

	// Bad ICRC: dropped as the receiver would, so the message waits.
	r = Reassembler{}
	bad := ps[1]
	bad.badICRC = true
	assert.Empty(t, feed(t, &r, ps[0], bad, ps[2]))
	assert.Equal(t, 1, r.Stats().BadICRC)
	assert.Equal(t, 1, r.Incomplete())
	assert.Equal(t, 1, r.Stats().OutOfSequence)

	// Packets of no message.
	r = Reassembler{}
	assert.Empty(t, feed(t, &r, pkt{op: OpAck, qp: 17}, pkt{op: OpCNP, qp: 17}, pkt{op: OpFetchAdd, qp: 17}))
	assert.Equal(t, Stats{Packets: 3, Acks: 1, Other: 2}, r.Stats())
	var unknown Packet
	unknown.Opcode = 0x15
	_, ok := r.Add(&unknown)
	assert.False(t, ok)
	assert.Equal(t, 3, r.Stats().Other)
}

// TestReassembleFlows checks that flows are told apart by addresses, QP
// and direction: rxe numbers the QPs of both devices from 17, so the
// client's and the server's QP 17 are different flows.
func TestReassembleFlows(t *testing.T) {
	a := sendPackets(bytes.Repeat([]byte("a"), 2000), 1024, 5, OpSendLast)
	b := sendPackets(bytes.Repeat([]byte("b"), 2000), 1024, 5, OpSendLast)
	for i := range b {
		b[i].src, b[i].dst = "10.0.0.1", "10.0.0.2"
	}
	var r Reassembler
	ms := feed(t, &r, a[0], b[0], a[1], b[1])
	require.Len(t, ms, 2)
	assert.Equal(t, bytes.Repeat([]byte("a"), 2000), ms[0].Payload)
	assert.Equal(t, bytes.Repeat([]byte("b"), 2000), ms[1].Payload)
}

// TestReassembleRead checks an RDMA Read: a one-packet request that
// reserves a PSN per response packet, and the response data in the other
// direction, carrying those PSNs.
func TestReassembleRead(t *testing.T) {
	reth := RETH{VA: 0x1000, RKey: 0xc54, DMALength: 2500}
	data := make([]byte, 2500)
	for i := range data {
		data[i] = byte(i * 7)
	}
	resp := func(op Opcode, psn uint32, b []byte) pkt {
		return pkt{src: "10.0.0.2", dst: "10.0.0.1", op: op, qp: 17, psn: psn, aeth: AETH{Syndrome: 0x1f}, payload: b}
	}
	var r Reassembler
	ms := feed(t, &r,
		pkt{src: "10.0.0.1", dst: "10.0.0.2", op: OpReadRequest, qp: 17, psn: 40, reth: reth},
		pkt{src: "10.0.0.1", dst: "10.0.0.2", op: OpSendOnly, qp: 17, psn: 43, payload: []byte("reply")},
		resp(OpReadResponseFirst, 40, data[:1024]),
		resp(OpReadResponseMiddle, 41, data[1024:2048]),
		resp(OpReadResponseLast, 42, data[2048:]),
		resp(OpAck, 43, nil),
	)
	require.Len(t, ms, 3)
	assert.Equal(t, KindReadRequest, ms[0].Kind)
	assert.Equal(t, reth, ms[0].RETH)
	assert.Equal(t, []byte("reply"), ms[1].Payload)
	assert.Equal(t, KindReadResponse, ms[2].Kind)
	assert.Equal(t, data, ms[2].Payload)
	assert.Equal(t, uint32(40), ms[2].FirstPSN)

	ts := Transfers(ms)
	require.Len(t, ts, 1)
	assert.Equal(t, Transfer{Kind: KindReadRequest, Initiator: ms[0].Src, Target: ms[0].Dst, RKey: 0xc54, VA: 0x1000, Data: data}, ts[0])
}

func TestReassembleWrite(t *testing.T) {
	reth := RETH{VA: 0xabc000, RKey: 0x1867, DMALength: 2048}
	var r Reassembler
	ms := feed(t, &r,
		pkt{op: OpWriteFirst, qp: 17, psn: 1, reth: reth, payload: bytes.Repeat([]byte{1}, 1024)},
		pkt{op: OpWriteLast, qp: 17, psn: 2, payload: bytes.Repeat([]byte{2}, 1024)},
		pkt{op: OpWriteOnlyImm, qp: 17, psn: 3, reth: RETH{VA: 8, RKey: 9, DMALength: 1}, imm: 0x42, payload: []byte{3}},
	)
	require.Len(t, ms, 2)
	assert.Equal(t, KindWrite, ms[0].Kind)
	assert.Equal(t, reth, ms[0].RETH)
	assert.Len(t, ms[0].Payload, 2048)
	assert.Equal(t, OpWriteLast, ms[0].Opcode)
	assert.Equal(t, ExtImmDt, ms[1].Ext)
	assert.Equal(t, uint32(0x42), ms[1].ImmDt)
}

func TestPSNAfter(t *testing.T) {
	assert.True(t, psnAfter(1, 0))
	assert.True(t, psnAfter(0, 0xffffff))
	assert.True(t, psnAfter(0x7fffff, 0))
	assert.False(t, psnAfter(0x800000, 0))
	assert.False(t, psnAfter(5, 5))
	assert.False(t, psnAfter(4, 5))
}

func TestAnalyze(t *testing.T) {
	var frames [][]byte
	for _, p := range sendPackets(make([]byte, 2100), 1024, 7, OpSendLast) {
		frames = append(frames, p.frame())
	}
	frames = append(frames, []byte("junk"), pkt{op: OpAck, qp: 17}.frame())
	c := Analyze(frames)
	assert.Len(t, c.Packets, 4)
	require.Len(t, c.Messages, 1)
	assert.Len(t, c.Messages[0].Payload, 2100)
	assert.Equal(t, 1, c.Malformed)
	assert.ErrorIs(t, c.Err, ErrNotRoCE)
	assert.Equal(t, Stats{Packets: 4, Messages: 1, Acks: 1}, c.Stats)
	assert.Zero(t, c.Incomplete)
}
