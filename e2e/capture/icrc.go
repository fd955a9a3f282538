package capture

import "hash/crc32"

// maskedLRH stands for the Local Route Header of native InfiniBand, which a
// RoCEv2 packet does not have: IBA Vol. 1 Annex A17.3.3 starts the ICRC
// computation with 64 bits of ones in its place.
var maskedLRH = [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// ICRC computes the Invariant CRC of a RoCEv2 packet (IBA Vol. 1 Annex
// A17.3.3): the CRC-32 of Ethernet over 64 one bits, the IP header ipHdr and
// the UDP datagram udp (header, BTH, extended headers, payload and pad, not
// the ICRC itself), with the fields that routers may change replaced by
// ones: for IPv4 the Type of Service, TTL and header checksum, for IPv6 the
// Traffic Class, Flow Label and Hop Limit, the UDP checksum, and the
// reserved byte of the BTH that holds FECN and BECN. udp must hold at least
// the UDP header, a BTH and the ICRC.
//
// The result compares with Packet.ICRC: the CRC's bytes travel least
// significant first, as the Ethernet FCS does.
func ICRC(ipHdr, udp []byte) uint32 {
	if len(udp) < UDPHeaderSize+BTHSize+ICRCSize || len(ipHdr) < IPv4MinHeaderSize {
		return 0
	}
	// The masked copy of the headers; an IPv4 header is at most 60 bytes.
	var buf [60 + UDPHeaderSize + BTHSize]byte
	if len(ipHdr) > 60 {
		return 0
	}
	u := copy(buf[:], ipHdr)
	switch ipHdr[0] >> 4 {
	case 4:
		buf[1] = 0xff                 // Type of Service
		buf[8] = 0xff                 // TTL
		buf[10], buf[11] = 0xff, 0xff // header checksum
	case 6:
		if u != IPv6HeaderSize {
			return 0
		}
		buf[0] |= 0x0f                            // Traffic Class (high nibble) ...
		buf[1], buf[2], buf[3] = 0xff, 0xff, 0xff // ... and Flow Label
		buf[7] = 0xff                             // Hop Limit
	default:
		return 0
	}
	copy(buf[u:], udp[:UDPHeaderSize+BTHSize])
	buf[u+6], buf[u+7] = 0xff, 0xff // UDP checksum
	buf[u+UDPHeaderSize+4] = 0xff   // BTH: FECN, BECN and reserved bits
	h := buf[:u+UDPHeaderSize+BTHSize]
	crc := updateCRC(0, maskedLRH[:])
	crc = updateCRC(crc, h)
	return crc32.Update(crc, crc32.IEEETable, udp[UDPHeaderSize+BTHSize:len(udp)-ICRCSize])
}

// updateCRC is crc32.Update with the IEEE table for the few bytes of the
// masked headers, done here so that the stack buffer holding them does not
// escape to the heap through crc32's indirect call.
func updateCRC(crc uint32, p []byte) uint32 {
	crc = ^crc
	for _, v := range p {
		crc = crc32.IEEETable[byte(crc)^v] ^ crc>>8
	}
	return ^crc
}
