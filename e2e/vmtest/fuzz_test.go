package vmtest

import "testing"

// FuzzParsePCAP checks that ParsePCAP and UDPv4 never panic, that frames
// alias the input without exceeding it, and that a decoded payload lies
// inside its frame.
func FuzzParsePCAP(f *testing.F) {
	f.Add(pcapFile(udpFrame("10.0.0.2", "10.0.0.1", 49152, 4791, []byte("bth"))))
	f.Add(pcapFile(make([]byte, 60), udpFrame("10.0.0.1", "10.0.0.2", 4791, 4791, nil)))
	f.Add(pcapFile())
	f.Add([]byte("not a pcap file at all, not at all"))
	f.Fuzz(func(t *testing.T, b []byte) {
		frames, _ := ParsePCAP(b)
		total := 0
		for _, fr := range frames {
			total += 16 + len(fr.Data)
			if u, ok := fr.UDPv4(); ok && len(u.Payload) > len(fr.Data)-14-20-8 {
				t.Fatalf("payload of %d bytes in a %d-byte frame", len(u.Payload), len(fr.Data))
			}
		}
		if len(frames) > 0 && total+24 > len(b) {
			t.Fatalf("%d frames use %d bytes of a %d-byte file", len(frames), total+24, len(b))
		}
	})
}
