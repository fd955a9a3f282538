package capture

import (
	"encoding/binary"
	"net/netip"
	"os"
	"strconv"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
)

// pkt describes a RoCEv2 packet for frame to build.
type pkt struct {
	src, dst string // IP addresses; default 10.0.0.2 -> 10.0.0.1
	op       Opcode
	qp, psn  uint32
	ack      bool
	reth     RETH
	aeth     AETH
	deth     DETH
	imm      uint32
	ieth     uint32
	payload  []byte
	vlan     bool
	badICRC  bool
}

// frame builds an Ethernet frame holding p, with the headers its opcode
// calls for, the pad and a correct ICRC (unless badICRC).
func (p pkt) frame() []byte {
	src, dst := p.src, p.dst
	if src == "" {
		src, dst = "10.0.0.2", "10.0.0.1"
	}
	s, d := netip.MustParseAddr(src), netip.MustParseAddr(dst)
	ext, _ := p.op.Ext()
	pad := (4 - len(p.payload)%4) % 4

	ib := make([]byte, BTHSize, 64+len(p.payload))
	ib[0] = byte(p.op)
	ib[1] = byte(pad) << 4
	binary.BigEndian.PutUint16(ib[2:], 0xffff)
	binary.BigEndian.PutUint32(ib[4:], p.qp&0xffffff)
	binary.BigEndian.PutUint32(ib[8:], p.psn&0xffffff)
	if p.ack {
		ib[8] |= 0x80
	}
	if ext&ExtDETH != 0 {
		ib = binary.BigEndian.AppendUint32(ib, p.deth.QKey)
		ib = binary.BigEndian.AppendUint32(ib, p.deth.SrcQP)
	}
	if ext&ExtRETH != 0 {
		ib = binary.BigEndian.AppendUint64(ib, p.reth.VA)
		ib = binary.BigEndian.AppendUint32(ib, p.reth.RKey)
		ib = binary.BigEndian.AppendUint32(ib, p.reth.DMALength)
	}
	if ext&ExtAtomicETH != 0 {
		ib = append(ib, make([]byte, 28)...)
	}
	if ext&ExtAETH != 0 {
		ib = binary.BigEndian.AppendUint32(ib, uint32(p.aeth.Syndrome)<<24|p.aeth.MSN)
	}
	if ext&ExtAtomicAckETH != 0 {
		ib = append(ib, make([]byte, 8)...)
	}
	if ext&ExtImmDt != 0 {
		ib = binary.BigEndian.AppendUint32(ib, p.imm)
	}
	if ext&ExtIETH != 0 {
		ib = binary.BigEndian.AppendUint32(ib, p.ieth)
	}
	ib = append(ib, p.payload...)
	ib = append(ib, make([]byte, pad+ICRCSize)...)

	var f []byte
	f = append(f, 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2) // MAC addresses
	if p.vlan {
		f = append(f, 0x81, 0x00, 0x00, 0x05)
	}
	udp := make([]byte, UDPHeaderSize, UDPHeaderSize+len(ib))
	binary.BigEndian.PutUint16(udp[0:], 49152)
	binary.BigEndian.PutUint16(udp[2:], RoCEv2Port)
	binary.BigEndian.PutUint16(udp[4:], uint16(UDPHeaderSize+len(ib)))
	udp = append(udp, ib...)
	var ip []byte
	if s.Is4() {
		f = append(f, 0x08, 0x00)
		ip = make([]byte, IPv4MinHeaderSize)
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(IPv4MinHeaderSize+len(udp)))
		ip[6] = 0x40 // DF
		ip[8], ip[9] = 64, 17
		a, b := s.As4(), d.As4()
		copy(ip[12:], a[:])
		copy(ip[16:], b[:])
	} else {
		f = append(f, 0x86, 0xdd)
		ip = make([]byte, IPv6HeaderSize)
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(len(udp)))
		ip[6], ip[7] = 17, 64
		a, b := s.As16(), d.As16()
		copy(ip[8:], a[:])
		copy(ip[24:], b[:])
	}
	crc := ICRC(ip, udp)
	if p.badICRC {
		crc++
	}
	binary.LittleEndian.PutUint32(udp[len(udp)-ICRCSize:], crc)
	f = append(f, ip...)
	return append(f, udp...)
}

// decoded builds p's frame and decodes it.
func (p pkt) decoded(t testing.TB) *Packet {
	t.Helper()
	d, err := Decode(p.frame())
	if err != nil {
		t.Fatalf("Decode(%v): %v", p.op, err)
	}
	return &d
}

// seqPattern returns the first n bytes of the output of "seq 1 30000", the
// content of the files the kernel captures wrote.
func seqPattern(n int) []byte {
	var b []byte
	for i := 1; len(b) < n; i++ {
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\n')
	}
	return b[:n]
}

// loadPCAP reads a capture under testdata/ as frames.
func loadPCAP(t testing.TB, name string) [][]byte {
	t.Helper()
	frames, err := vmtest.ReadPCAP("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(frames))
	for i, f := range frames {
		out[i] = f.Data
	}
	return out
}

// realFrames returns every frame of every committed kernel capture.
func realFrames(t testing.TB) [][]byte {
	t.Helper()
	names, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, n := range names {
		if !n.IsDir() {
			out = append(out, loadPCAP(t, n.Name())...)
		}
	}
	return out
}

// words encodes XDR words.
func words(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	return b
}
