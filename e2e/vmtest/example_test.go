package vmtest_test

import (
	"encoding/binary"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
)

// ExampleParsePCAP decodes a capture like the one tcpdump writes in the VM
// (tcpdump -i veth0 -w /host/roce.pcap udp port 4791): here one RoCEv2
// datagram from the client (10.0.0.2) to the server (10.0.0.1).
func ExampleParsePCAP() {
	frame := make([]byte, 14+20+8+12)
	binary.BigEndian.PutUint16(frame[12:], 0x0800)               // IPv4
	copy(frame[14:], []byte{0x45, 0, 0, 40, 0, 0, 0, 0, 64, 17}) // UDP
	copy(frame[14+12:], []byte{10, 0, 0, 2, 10, 0, 0, 1})
	binary.BigEndian.PutUint16(frame[34:], 49152)
	binary.BigEndian.PutUint16(frame[36:], 4791)
	binary.BigEndian.PutUint16(frame[38:], 8+12) // UDP length: a 12-byte BTH
	file := binary.LittleEndian.AppendUint32(nil, 0xa1b2c3d4)
	file = binary.LittleEndian.AppendUint32(file, 0x00040002) // version 2.4
	file = append(file, make([]byte, 8)...)
	file = binary.LittleEndian.AppendUint32(file, 262144) // snap length
	file = binary.LittleEndian.AppendUint32(file, 1)      // Ethernet
	file = append(file, make([]byte, 8)...)               // time stamp
	file = binary.LittleEndian.AppendUint32(file, uint32(len(frame)))
	file = binary.LittleEndian.AppendUint32(file, uint32(len(frame)))
	file = append(file, frame...)

	frames, err := vmtest.ParsePCAP(file)
	if err != nil {
		panic(err)
	}
	for _, f := range frames {
		if u, ok := f.UDPv4(); ok {
			fmt.Printf("%v -> %v, %d bytes of RoCEv2\n", u.Src, u.Dst, len(u.Payload))
		}
	}
	// Output: 10.0.0.2:49152 -> 10.0.0.1:4791, 12 bytes of RoCEv2
}
