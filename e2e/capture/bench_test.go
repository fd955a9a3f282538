package capture

import "testing"

func BenchmarkDecode(b *testing.B) {
	f := pkt{op: OpSendOnly, qp: 17, psn: 9, payload: make([]byte, 164)}.frame()
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		if _, err := Decode(f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAnalyze(b *testing.B) {
	frames := loadPCAP(b, "kernel-read-8KiB.pcap")
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	b.ReportAllocs()
	b.SetBytes(int64(n))
	for b.Loop() {
		if c := Analyze(frames); c.Malformed != 0 {
			b.Fatal(c.Err)
		}
	}
}

func BenchmarkParseTransportHeader(b *testing.B) {
	hdr := words(cat([]uint32{3, 1, 64, 1, 0, 0, 1, 3}, seg(1, 124, 0), seg(2, 476, 0), seg(3, 0, 0))...)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTransportHeader(hdr); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeAllocs: decoding a well-formed packet allocates nothing (the
// payload aliases the frame).
func TestDecodeAllocs(t *testing.T) {
	f := pkt{op: OpWriteFirst, qp: 17, reth: RETH{RKey: 1}, payload: make([]byte, 1024)}.frame()
	if n := testing.AllocsPerRun(100, func() { _, _ = Decode(f) }); n != 0 {
		t.Errorf("Decode allocates %v times per packet, want 0", n)
	}
}
