package capture

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// FuzzDecode checks that Decode never panics, that what it decodes lies
// inside the frame, and that the layers above it (the Reassembler, the
// transport header walker, the CM parser) take whatever payload it yields.
func FuzzDecode(f *testing.F) {
	for _, fr := range realFrames(f)[:12] {
		f.Add(fr)
	}
	f.Add(pkt{op: OpSendOnlyInvalidate, qp: 17, ieth: 9, payload: words(1, 1, 64, 0, 0, 0, 0)}.frame())
	f.Add(pkt{op: OpWriteOnlyImm, qp: 17, reth: RETH{VA: 1, RKey: 2, DMALength: 3}, payload: []byte("abc")}.frame())
	f.Add(pkt{src: "fd00::1", dst: "fd00::2", op: OpAtomicAck, qp: 17, vlan: true}.frame())
	f.Add(pkt{op: OpUDSendOnly, qp: 1, payload: make([]byte, MADSize)}.frame())
	f.Add([]byte{})
	f.Add(make([]byte, 14))
	f.Fuzz(func(t *testing.T, frame []byte) {
		p, err := Decode(frame)
		if err != nil {
			return
		}
		if p.PadCount > 3 || p.DestQP > 0xffffff || p.PSN > 0xffffff {
			t.Fatalf("fields out of range: pad %d, QP %#x, PSN %#x", p.PadCount, p.DestQP, p.PSN)
		}
		if n := EthernetHeaderSize + IPv4MinHeaderSize + UDPHeaderSize + BTHSize + p.Ext.Size() + len(p.Payload) + p.PadCount + ICRCSize; n > len(frame) {
			t.Fatalf("%d bytes of headers and payload in a %d-byte frame", n, len(frame))
		}
		if len(p.Payload) > 0 && !bytes.Contains(frame, p.Payload) {
			t.Fatal("payload is not part of the frame")
		}
		var r Reassembler
		r.Add(&p)
		_, _ = ParseTransportHeader(p.Payload)
		_, _ = ParseCM(p.Payload)
	})
}

// FuzzParseTransportHeader checks the walker against package chunks: what
// it walks re-encodes to the same bytes, and every header chunks accepts
// the walker accepts with the same length (chunks checks more, never less).
func FuzzParseTransportHeader(f *testing.F) {
	f.Add(words(1, 1, 128, 0, 0, 0, 0))
	f.Add(words(cat([]uint32{2, 1, 128, 0, 1, 112}, seg(9, 8192, 1<<32), []uint32{0, 0, 0})...))
	f.Add(words(cat([]uint32{3, 1, 64, 1, 0, 0, 1, 3}, seg(1, 124, 0), seg(2, 476, 0), seg(3, 0, 0))...))
	f.Add(words(cat([]uint32{4, 1, 64, 0, 0, 1, 1}, seg(5, 16384, 0), []uint32{0, 0})...))
	f.Add(words(5, 1, 64, 4, 1, 1, 1))
	f.Add(words(6, 1, 64, 4, 2))
	f.Add(words(7, 1, 128, 0, 0, 1, 0xffffffff))
	f.Add(words(8, 2, 128, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseTransportHeader(b)
		var c chunks.Header
		n, cerr := c.Unmarshal(b, nil)
		if cerr == nil && (err != nil || n != h.Len) {
			t.Fatalf("chunks accepts %d bytes, the walker %d (%v)", n, h.Len, err)
		}
		if err != nil {
			return
		}
		var enc []byte
		for _, w := range h.Words() {
			enc = binary.BigEndian.AppendUint32(enc, w.Value)
		}
		if !bytes.Equal(enc, b[:h.Len]) {
			t.Fatalf("Words encode %x, the header is %x", enc, b[:h.Len])
		}
	})
}

// FuzzReassemble drives a Reassembler with packets described by the input
// (4 bytes each: opcode, PSN near the wrap, flow and ICRC bits, payload
// length, then the payload) and checks its accounting: every packet is
// counted, and messages hold no more bytes than the packets brought.
func FuzzReassemble(f *testing.F) {
	f.Add([]byte{0x00, 0xfe, 0, 3, 'a', 'b', 'c', 0x01, 0xff, 0, 1, 'd', 0x02, 0x00, 0, 1, 'e'})
	f.Add([]byte{0x04, 0x01, 1, 0, 0x0c, 0x02, 0, 0, 0x0d, 0x02, 1, 2, 'x', 'y', 0x0f, 0x03, 1, 0})
	f.Add([]byte{0x06, 0x10, 0, 1, 'w', 0x06, 0x10, 0, 1, 'w', 0x08, 0x12, 2, 1, 'z'})
	f.Fuzz(func(t *testing.T, in []byte) {
		var (
			r       Reassembler
			packets int
			bytesIn int
			out     int
			msgs    int
		)
		r.MaxMessageSize = 100
		a := netip.MustParseAddrPort("10.0.0.1:4791")
		b := netip.MustParseAddrPort("10.0.0.2:4791")
		for len(in) >= 4 {
			p := Packet{Opcode: Opcode(in[0]), PSN: (0xffff80 + uint32(in[1])) & 0xffffff, DestQP: 17,
				Src: a, Dst: b, ICRCValid: in[2]&2 == 0}
			if in[2]&1 != 0 {
				p.Src, p.Dst = b, a
			}
			n := min(int(in[3]&0x3f), len(in)-4)
			p.Payload = in[4 : 4+n]
			in = in[4+n:]
			packets++
			bytesIn += n
			if m, ok := r.Add(&p); ok {
				msgs++
				out += len(m.Payload)
				if m.Packets < 1 || len(m.Payload) > r.MaxMessageSize {
					t.Fatalf("message of %d packets, %d bytes", m.Packets, len(m.Payload))
				}
			}
		}
		st := r.Stats()
		if st.Packets != packets || st.Messages != msgs || out > bytesIn {
			t.Fatalf("%d packets (%d bytes) gave %+v and %d bytes of messages", packets, bytesIn, st, out)
		}
		if r.Incomplete() > 4 {
			t.Fatalf("%d incomplete messages in four flows", r.Incomplete())
		}
	})
}
