package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// RoCEv2Port is the UDP destination port of RoCEv2 (IBA Vol. 1 Annex A17,
// §A17.4.5.1, IANA "roce").
const RoCEv2Port = 4791

// Sizes of the headers Decode reads.
const (
	EthernetHeaderSize = 14
	VLANTagSize        = 4
	IPv4MinHeaderSize  = 20
	IPv6HeaderSize     = 40
	UDPHeaderSize      = 8
	BTHSize            = 12 // Base Transport Header (IBA Vol. 1 §9.2)
	ICRCSize           = 4  // Invariant CRC (IBA Vol. 1 §7.8.1, Annex A17.3.3)
)

// Errors of Decode; each error it returns wraps one of them.
var (
	// ErrNotRoCE: the frame is not an Ethernet frame holding an IPv4 or
	// IPv6 UDP datagram to port 4791 (a VLAN tag is allowed).
	ErrNotRoCE = errors.New("capture: not a RoCEv2 packet")
	// ErrMalformed: a RoCEv2 datagram whose headers or lengths are
	// inconsistent, or too short for what its opcode requires.
	ErrMalformed = errors.New("capture: malformed RoCEv2 packet")
	// ErrUnknownOpcode: an opcode whose header layout this package does not
	// know (reserved, Reliable Datagram, manufacturer specific).
	ErrUnknownOpcode = errors.New("capture: unknown BTH opcode")
)

// RETH is the RDMA Extended Transport Header (IBA Vol. 1 §9.3.3): the
// remote buffer of an RDMA Write or Read. In RPC-over-RDMA the R_Key and
// virtual address are those of a chunk segment (RFC 8166 §3.4.3: handle and
// offset).
type RETH struct {
	VA        uint64 // virtual address
	RKey      uint32 // remote key
	DMALength uint32 // length of the whole operation in bytes
}

// AETH is the ACK Extended Transport Header (IBA Vol. 1 §9.3.5).
type AETH struct {
	Syndrome uint8  // ACK, RNR NAK or NAK, with credits or a NAK code
	MSN      uint32 // message sequence number (24 bits)
}

// DETH is the Datagram Extended Transport Header of UD packets (IBA Vol. 1
// §9.3.2).
type DETH struct {
	QKey  uint32
	SrcQP uint32 // 24 bits
}

// AtomicETH is the Atomic Extended Transport Header (IBA Vol. 1 §9.3.4).
type AtomicETH struct {
	VA          uint64
	RKey        uint32
	SwapAddData uint64
	CompareData uint64
}

// Packet is one decoded RoCEv2 packet: the addresses of its IP/UDP carrier,
// the fields of its BTH, the extended headers its opcode calls for, its
// payload and its ICRC.
type Packet struct {
	Src, Dst netip.AddrPort // IP addresses and UDP ports

	// Base Transport Header fields (IBA Vol. 1 §9.2).
	Opcode         Opcode
	SolicitedEvent bool   // SE
	MigReq         bool   // M
	PadCount       int    // bytes of padding after the payload, 0-3
	TVer           uint8  // transport header version, 0
	PKey           uint16 // partition key
	FECN, BECN     bool   // congestion notification bits (RoCEv2)
	DestQP         uint32 // destination queue pair number (24 bits)
	AckReq         bool   // A: the requester asks for an ACK
	PSN            uint32 // packet sequence number (24 bits)

	// Ext says which extended headers were present; only those fields are
	// set.
	Ext       Ext
	DETH      DETH
	RETH      RETH
	Atomic    AtomicETH
	AETH      AETH
	AtomicAck uint64 // original remote data of an ATOMIC ACKNOWLEDGE
	ImmDt     uint32 // immediate data
	IETHRKey  uint32 // R_Key invalidated by a Send With Invalidate

	// Payload is the packet's payload without padding; it aliases the
	// frame.
	Payload []byte
	// ICRC is the Invariant CRC as carried (the CRC-32 value, whose bytes
	// travel least significant first like an Ethernet FCS), and ICRCValid
	// whether it matches the one Decode computed. A receiver drops a packet
	// whose ICRC is wrong.
	ICRC      uint32
	ICRCValid bool
}

// Decode decodes a RoCEv2 packet from an Ethernet frame (Ethernet II, an
// optional 802.1Q tag, IPv4 or IPv6 without extension headers, UDP to port
// 4791) and checks its ICRC. Payload aliases frame. Decode never reads
// outside frame and never panics, whatever it holds.
func Decode(frame []byte) (Packet, error) {
	var p Packet
	if len(frame) < EthernetHeaderSize {
		return p, fmt.Errorf("%w: %d-byte frame", ErrNotRoCE, len(frame))
	}
	etype := binary.BigEndian.Uint16(frame[12:])
	ip := frame[EthernetHeaderSize:]
	if etype == 0x8100 { // 802.1Q
		if len(ip) < VLANTagSize {
			return p, fmt.Errorf("%w: truncated VLAN tag", ErrNotRoCE)
		}
		etype = binary.BigEndian.Uint16(ip[2:])
		ip = ip[VLANTagSize:]
	}
	var (
		ipHdr, udp []byte
		src, dst   netip.Addr
	)
	switch etype {
	case 0x0800:
		if len(ip) < IPv4MinHeaderSize || ip[0]>>4 != 4 {
			return p, fmt.Errorf("%w: truncated or bad IPv4 header", ErrNotRoCE)
		}
		ihl := int(ip[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(ip[2:]))
		// The frame may carry Ethernet padding past the datagram; the IP
		// total length says where the datagram ends.
		if ihl < IPv4MinHeaderSize || total < ihl || total > len(ip) {
			return p, fmt.Errorf("%w: IPv4 header length %d, total length %d, %d bytes", ErrNotRoCE, ihl, total, len(ip))
		}
		if ip[9] != 17 {
			return p, fmt.Errorf("%w: IP protocol %d", ErrNotRoCE, ip[9])
		}
		if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
			return p, fmt.Errorf("%w: IPv4 fragment", ErrNotRoCE)
		}
		ipHdr, udp = ip[:ihl], ip[ihl:total]
		src, dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	case 0x86dd:
		if len(ip) < IPv6HeaderSize || ip[0]>>4 != 6 {
			return p, fmt.Errorf("%w: truncated or bad IPv6 header", ErrNotRoCE)
		}
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		if plen > len(ip)-IPv6HeaderSize {
			return p, fmt.Errorf("%w: IPv6 payload length %d, %d bytes", ErrNotRoCE, plen, len(ip)-IPv6HeaderSize)
		}
		if ip[6] != 17 {
			return p, fmt.Errorf("%w: IPv6 next header %d", ErrNotRoCE, ip[6])
		}
		ipHdr, udp = ip[:IPv6HeaderSize], ip[IPv6HeaderSize:IPv6HeaderSize+plen]
		src, dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
	default:
		return p, fmt.Errorf("%w: EtherType %#04x", ErrNotRoCE, etype)
	}
	if len(udp) < UDPHeaderSize {
		return p, fmt.Errorf("%w: truncated UDP header", ErrNotRoCE)
	}
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < UDPHeaderSize || ulen > len(udp) {
		return p, fmt.Errorf("%w: UDP length %d, %d bytes", ErrNotRoCE, ulen, len(udp))
	}
	udp = udp[:ulen]
	p.Src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(udp[0:]))
	p.Dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(udp[2:]))
	if p.Dst.Port() != RoCEv2Port {
		return p, fmt.Errorf("%w: UDP port %d", ErrNotRoCE, p.Dst.Port())
	}
	if err := p.decodeIB(udp[UDPHeaderSize:]); err != nil {
		return p, err
	}
	p.ICRCValid = ICRC(ipHdr, udp) == p.ICRC
	return p, nil
}

// DecodeIB decodes the InfiniBand part of a RoCEv2 datagram, b being the UDP
// payload: the BTH, the extended headers, the payload and the ICRC. It
// leaves Src, Dst and ICRCValid unset, since the ICRC covers the IP and UDP
// headers too. Payload aliases b.
func DecodeIB(b []byte) (Packet, error) {
	var p Packet
	err := p.decodeIB(b)
	return p, err
}

func (p *Packet) decodeIB(b []byte) error {
	if len(b) < BTHSize+ICRCSize {
		return fmt.Errorf("%w: %d bytes, shorter than a BTH and an ICRC", ErrMalformed, len(b))
	}
	p.Opcode = Opcode(b[0])
	p.SolicitedEvent = b[1]&0x80 != 0
	p.MigReq = b[1]&0x40 != 0
	p.PadCount = int(b[1]>>4) & 3
	p.TVer = b[1] & 0x0f
	p.PKey = binary.BigEndian.Uint16(b[2:])
	p.FECN = b[4]&0x80 != 0
	p.BECN = b[4]&0x40 != 0
	p.DestQP = binary.BigEndian.Uint32(b[4:]) & 0xffffff
	p.AckReq = b[8]&0x80 != 0
	p.PSN = binary.BigEndian.Uint32(b[8:]) & 0xffffff
	p.ICRC = binary.LittleEndian.Uint32(b[len(b)-ICRCSize:])
	ext, ok := p.Opcode.Ext()
	if !ok {
		return fmt.Errorf("%w: %#02x", ErrUnknownOpcode, uint8(p.Opcode))
	}
	p.Ext = ext
	rest := b[BTHSize : len(b)-ICRCSize]
	if n := ext.Size() + p.PadCount; len(rest) < n {
		return fmt.Errorf("%w: %v needs %d bytes of extended headers and pad, has %d",
			ErrMalformed, p.Opcode, n, len(rest))
	}
	// Extended headers, in the order of IBA Vol. 1 §9.2 Table 39.
	if ext&ExtDETH != 0 {
		p.DETH = DETH{QKey: binary.BigEndian.Uint32(rest), SrcQP: binary.BigEndian.Uint32(rest[4:]) & 0xffffff}
		rest = rest[8:]
	}
	if ext&ExtRETH != 0 {
		p.RETH = RETH{VA: binary.BigEndian.Uint64(rest), RKey: binary.BigEndian.Uint32(rest[8:]),
			DMALength: binary.BigEndian.Uint32(rest[12:])}
		rest = rest[16:]
	}
	if ext&ExtAtomicETH != 0 {
		p.Atomic = AtomicETH{VA: binary.BigEndian.Uint64(rest), RKey: binary.BigEndian.Uint32(rest[8:]),
			SwapAddData: binary.BigEndian.Uint64(rest[12:]), CompareData: binary.BigEndian.Uint64(rest[20:])}
		rest = rest[28:]
	}
	if ext&ExtAETH != 0 {
		v := binary.BigEndian.Uint32(rest)
		p.AETH = AETH{Syndrome: uint8(v >> 24), MSN: v & 0xffffff}
		rest = rest[4:]
	}
	if ext&ExtAtomicAckETH != 0 {
		p.AtomicAck = binary.BigEndian.Uint64(rest)
		rest = rest[8:]
	}
	if ext&ExtImmDt != 0 {
		p.ImmDt = binary.BigEndian.Uint32(rest)
		rest = rest[4:]
	}
	if ext&ExtIETH != 0 {
		p.IETHRKey = binary.BigEndian.Uint32(rest)
		rest = rest[4:]
	}
	p.Payload = rest[: len(rest)-p.PadCount : len(rest)-p.PadCount]
	return nil
}
