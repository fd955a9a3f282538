package vmtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
)

// ErrPCAP reports a capture file that is not a well-formed classic pcap file.
var ErrPCAP = errors.New("vmtest: malformed pcap file")

// Frame is one captured Ethernet frame.
type Frame struct {
	Data []byte // the captured bytes (possibly cut to the snap length)
}

// ReadPCAP reads a classic pcap file (tcpdump -w) of Ethernet frames, as
// captured in the guest with e.g.
// `tcpdump -Z root -i veth0 -U -w /host/x.pcap udp port 4791`.
func ReadPCAP(path string) ([]Frame, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePCAP(b)
}

// ParsePCAP parses the bytes of a classic pcap file of Ethernet frames
// (link type 1), in either byte order, with micro- or nanosecond stamps.
func ParsePCAP(b []byte) ([]Frame, error) {
	if len(b) < 24 {
		return nil, fmt.Errorf("%w: %d-byte header", ErrPCAP, len(b))
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(b) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		bo = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		bo = binary.BigEndian
	default:
		return nil, fmt.Errorf("%w: bad magic %x", ErrPCAP, b[:4])
	}
	if lt := bo.Uint32(b[20:]); lt != 1 {
		return nil, fmt.Errorf("%w: link type %d, want 1 (Ethernet)", ErrPCAP, lt)
	}
	var frames []Frame
	for p := b[24:]; len(p) > 0; {
		if len(p) < 16 {
			return frames, fmt.Errorf("%w: truncated record header", ErrPCAP)
		}
		n := bo.Uint32(p[8:])
		if uint64(n) > uint64(len(p)-16) {
			return frames, fmt.Errorf("%w: record of %d bytes, %d left", ErrPCAP, n, len(p)-16)
		}
		frames = append(frames, Frame{Data: p[16 : 16+n]})
		p = p[16+n:]
	}
	return frames, nil
}

// UDP is an IPv4 UDP datagram found in a frame.
type UDP struct {
	Src, Dst netip.AddrPort
	Payload  []byte // aliases the frame
}

// UDPv4 decodes an Ethernet II frame holding an IPv4 UDP datagram (no VLAN
// tag, no fragments); ok is false for anything else.
func (f Frame) UDPv4() (u UDP, ok bool) {
	d := f.Data
	if len(d) < 14+20 || binary.BigEndian.Uint16(d[12:]) != 0x0800 {
		return u, false
	}
	ip := d[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || len(ip) < ihl+8 || ip[9] != 17 {
		return u, false
	}
	if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 { // MF or a fragment offset
		return u, false
	}
	src := netip.AddrFrom4([4]byte(ip[12:16]))
	dst := netip.AddrFrom4([4]byte(ip[16:20]))
	udp := ip[ihl:]
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < 8 || ulen > len(udp) {
		return u, false
	}
	u.Src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(udp[0:]))
	u.Dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(udp[2:]))
	u.Payload = udp[8:ulen]
	return u, true
}
