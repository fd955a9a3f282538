package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeOpcodes(t *testing.T) {
	reth := RETH{VA: 0x1122334455667788, RKey: 0xabcd, DMALength: 20480}
	for _, c := range []struct {
		p    pkt
		ext  Ext
		size int // bytes of extended headers
	}{
		{pkt{op: OpSendOnly, payload: []byte("hello")}, 0, 0},
		{pkt{op: OpSendFirst, payload: make([]byte, 1024)}, 0, 0},
		{pkt{op: OpSendLastImm, imm: 7, payload: []byte("x")}, ExtImmDt, 4},
		{pkt{op: OpSendOnlyInvalidate, ieth: 0xc54, payload: make([]byte, 164)}, ExtIETH, 4},
		{pkt{op: OpSendLastInvalidate, ieth: 0x99, payload: []byte("ab")}, ExtIETH, 4},
		{pkt{op: OpWriteFirst, reth: reth, payload: make([]byte, 1024)}, ExtRETH, 16},
		{pkt{op: OpWriteOnlyImm, reth: reth, imm: 9, payload: []byte("abc")}, ExtRETH | ExtImmDt, 20},
		{pkt{op: OpReadRequest, reth: reth}, ExtRETH, 16},
		{pkt{op: OpReadResponseFirst, aeth: AETH{Syndrome: 0x1f, MSN: 24}, payload: make([]byte, 1024)}, ExtAETH, 4},
		{pkt{op: OpReadResponseMiddle, payload: make([]byte, 1024)}, 0, 0},
		{pkt{op: OpAck, aeth: AETH{Syndrome: 0x1f, MSN: 0xabcdef}}, ExtAETH, 4},
		{pkt{op: OpAtomicAck}, ExtAETH | ExtAtomicAckETH, 12},
		{pkt{op: OpFetchAdd}, ExtAtomicETH, 28},
		{pkt{op: OpUDSendOnly, qp: 1, deth: DETH{QKey: 0x80010000, SrcQP: 1}, payload: make([]byte, MADSize)}, ExtDETH, 8},
		{pkt{op: OpUDSendOnlyImm, qp: 1, imm: 3}, ExtDETH | ExtImmDt, 12},
		{pkt{op: OpSendOnly + 0x20, payload: []byte("uc")}, 0, 0}, // UC SEND_ONLY
		{pkt{op: OpCNP}, 0, 0},
	} {
		t.Run(c.p.op.String(), func(t *testing.T) {
			c.p.qp, c.p.psn, c.p.ack = 17, 0xfffffe, true
			if c.p.op == OpUDSendOnly || c.p.op == OpUDSendOnlyImm {
				c.p.qp = 1
			}
			p := c.p.decoded(t)
			assert.Equal(t, c.p.op, p.Opcode)
			assert.Equal(t, c.ext, p.Ext)
			assert.Equal(t, c.size, p.Ext.Size())
			assert.Equal(t, netip.MustParseAddrPort("10.0.0.2:49152"), p.Src)
			assert.Equal(t, netip.MustParseAddrPort("10.0.0.1:4791"), p.Dst)
			assert.Equal(t, c.p.qp, p.DestQP)
			assert.Equal(t, uint32(0xfffffe), p.PSN)
			assert.True(t, p.AckReq)
			assert.Equal(t, uint16(0xffff), p.PKey)
			assert.Equal(t, (4-len(c.p.payload)%4)%4, p.PadCount)
			assert.True(t, bytes.Equal(c.p.payload, p.Payload), "payload %x, want %x", p.Payload, c.p.payload)
			assert.True(t, p.ICRCValid)
			if c.ext&ExtRETH != 0 {
				assert.Equal(t, reth, p.RETH)
			}
			if c.ext&ExtAETH != 0 {
				assert.Equal(t, c.p.aeth, p.AETH)
			}
			if c.ext&ExtDETH != 0 {
				assert.Equal(t, c.p.deth, p.DETH)
			}
			assert.Equal(t, c.p.imm, p.ImmDt)
			assert.Equal(t, c.p.ieth, p.IETHRKey)
		})
	}
}

func TestDecodeCarriers(t *testing.T) {
	p := pkt{op: OpSendOnly, qp: 17, psn: 5, payload: []byte("vlan"), vlan: true}.decoded(t)
	assert.Equal(t, []byte("vlan"), p.Payload)
	assert.True(t, p.ICRCValid)

	p = pkt{src: "fd00::2", dst: "fd00::1", op: OpSendOnly, qp: 17, payload: []byte("six")}.decoded(t)
	assert.Equal(t, netip.MustParseAddr("fd00::2"), p.Src.Addr())
	assert.Equal(t, []byte("six"), p.Payload)
	assert.True(t, p.ICRCValid)

	// Ethernet padding after a short datagram is not payload.
	f := append(pkt{op: OpAck, qp: 17}.frame(), make([]byte, 10)...)
	d, err := Decode(f)
	require.NoError(t, err)
	assert.Empty(t, d.Payload)
	assert.True(t, d.ICRCValid)
}

// TestICRCMask checks that the ICRC ignores exactly the fields IBA Annex
// A17.3.3 masks (those routers may change) and covers everything else.
func TestICRCMask(t *testing.T) {
	base := pkt{op: OpSendOnly, qp: 17, psn: 9, payload: []byte("payload!")}.frame()
	const ip = EthernetHeaderSize
	const udp = ip + IPv4MinHeaderSize
	const bth = udp + UDPHeaderSize
	for _, c := range []struct {
		name  string
		at    int
		valid bool
	}{
		{"IPv4 TOS", ip + 1, true},
		{"IPv4 TTL", ip + 8, true},
		{"IPv4 checksum", ip + 10, true},
		{"UDP checksum", udp + 6, true},
		{"BTH FECN/BECN byte", bth + 4, true},
		{"IPv4 identification", ip + 4, false},
		{"IPv4 source address", ip + 12, false},
		{"UDP source port", udp, false},
		{"BTH opcode flags", bth + 1, false},
		{"BTH P_Key", bth + 2, false},
		{"BTH PSN", bth + 11, false},
		{"payload", bth + 12, false},
	} {
		f := bytes.Clone(base)
		f[c.at] ^= 0x01
		p, err := Decode(f)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.valid, p.ICRCValid, c.name)
	}
	p := pkt{op: OpSendOnly, qp: 17, badICRC: true}.decoded(t)
	assert.False(t, p.ICRCValid)
	assert.Zero(t, ICRC(nil, nil), "ICRC of nothing")
}

func TestDecodeErrors(t *testing.T) {
	good := pkt{op: OpWriteOnly, qp: 17, reth: RETH{RKey: 1, DMALength: 3}, payload: []byte("abc")}.frame()
	_, err := Decode(good)
	require.NoError(t, err)

	// Every truncation fails cleanly: the IP and UDP lengths no longer fit.
	for n := range len(good) {
		_, err := Decode(good[:n])
		require.Error(t, err, "%d of %d bytes", n, len(good))
		require.True(t, errors.Is(err, ErrNotRoCE) || errors.Is(err, ErrMalformed), "%d bytes: %v", n, err)
	}

	mutate := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	const ip = EthernetHeaderSize
	const udp = ip + IPv4MinHeaderSize
	for _, c := range []struct {
		name  string
		frame []byte
		want  error
	}{
		{"ARP", mutate(func(b []byte) { b[12], b[13] = 0x08, 0x06 }), ErrNotRoCE},
		{"TCP", mutate(func(b []byte) { b[ip+9] = 6 }), ErrNotRoCE},
		{"IPv6 version in an IPv4 frame", mutate(func(b []byte) { b[ip] = 0x65 }), ErrNotRoCE},
		{"IHL too small", mutate(func(b []byte) { b[ip] = 0x44 }), ErrNotRoCE},
		{"IHL past the datagram", mutate(func(b []byte) { b[ip] = 0x4f; b[ip+2], b[ip+3] = 0, 40 }), ErrNotRoCE},
		{"fragment", mutate(func(b []byte) { b[ip+6] = 0x20 }), ErrNotRoCE},
		{"other UDP port", mutate(func(b []byte) { b[udp+3] = 0x53 }), ErrNotRoCE},
		{"UDP length below 8", mutate(func(b []byte) { b[udp+4], b[udp+5] = 0, 7 }), ErrNotRoCE},
		{"UDP length past the datagram", mutate(func(b []byte) { b[udp+4] = 0xff }), ErrNotRoCE},
		{"UDP datagram shorter than BTH+ICRC", mutate(func(b []byte) { b[udp+4], b[udp+5] = 0, 8+15 }), ErrMalformed},
		{"RETH cut off", mutate(func(b []byte) { b[udp+4], b[udp+5] = 0, 8+12+15+4 }), ErrMalformed},
		{"pad longer than the payload", mutate(func(b []byte) { // 3-byte payload + 1 pad, claim... a READ REQUEST with pad 3
			b[udp+8] = byte(OpReadRequest)
			b[udp+8+1] = 3 << 4
			b[udp+4], b[udp+5] = 0, 8+12+16+4+2 // 2 bytes left for a pad of 3
		}), ErrMalformed},
		{"reserved opcode", mutate(func(b []byte) { b[udp+8] = 0x15 }), ErrUnknownOpcode},
		{"RD opcode", mutate(func(b []byte) { b[udp+8] = 0x44 }), ErrUnknownOpcode},
	} {
		_, err := Decode(c.frame)
		assert.ErrorIs(t, err, c.want, c.name)
	}
	_, err = Decode([]byte{1, 2, 3})
	assert.ErrorIs(t, err, ErrNotRoCE)
	_, err = Decode(append(make([]byte, 12), 0x81, 0x00, 0, 5)) // VLAN tag cut off
	assert.ErrorIs(t, err, ErrNotRoCE)
	_, err = DecodeIB(make([]byte, 15))
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestDecodeIB(t *testing.T) {
	f := pkt{op: OpSendOnlyInvalidate, qp: 0x123456, psn: 0xabcdef, ieth: 0xc54, payload: []byte("rpc")}.frame()
	p, err := DecodeIB(f[EthernetHeaderSize+IPv4MinHeaderSize+UDPHeaderSize:])
	require.NoError(t, err)
	assert.Equal(t, OpSendOnlyInvalidate, p.Opcode)
	assert.Equal(t, uint32(0x123456), p.DestQP)
	assert.Equal(t, uint32(0xabcdef), p.PSN)
	assert.Equal(t, uint32(0xc54), p.IETHRKey)
	assert.Equal(t, []byte("rpc"), p.Payload)
	assert.False(t, p.Src.IsValid())
	assert.False(t, p.ICRCValid, "DecodeIB gives no ICRC verdict")
	assert.Equal(t, binary.LittleEndian.Uint32(f[len(f)-4:]), p.ICRC)
}

func TestOpcodeNames(t *testing.T) {
	for op, want := range map[Opcode]string{
		OpSendOnly:           "SEND_ONLY",
		OpSendOnlyInvalidate: "SEND_ONLY_WITH_INVALIDATE",
		OpReadRequest:        "RDMA_READ_REQUEST",
		OpAck:                "ACKNOWLEDGE",
		0x2a:                 "UC_RDMA_WRITE_ONLY",
		OpUDSendOnly:         "UD_SEND_ONLY",
		OpCNP:                "CNP",
		0x15:                 "Opcode(0x15)",
		0x44:                 "Opcode(0x44)",
		0xff:                 "Opcode(0xff)",
	} {
		assert.Equal(t, want, op.String())
	}
	for k, want := range map[Kind]string{KindSend: "Send", KindWrite: "RDMA Write",
		KindReadRequest: "RDMA Read request", KindReadResponse: "RDMA Read response", 0: "none"} {
		assert.Equal(t, want, k.String())
	}
	for op := range 256 {
		ext, ok := Opcode(op).Ext()
		if !ok {
			assert.Zero(t, ext)
		}
	}
}
