package capture_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/go-rpcrdma/rpcrdma/e2e/capture"
	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
)

// frames reads a capture that TestKernelCapture took in the VM.
func frames(name string) [][]byte {
	fs, err := vmtest.ReadPCAP("testdata/" + name)
	if err != nil {
		panic(err)
	}
	out := make([][]byte, len(fs))
	for i, f := range fs {
		out[i] = f.Data
	}
	return out
}

// Analyze a capture of the Linux NFS client writing an 8 KiB file to
// knfsd over RDMA, and list the RPC-over-RDMA messages it holds.
func ExampleAnalyze() {
	c := capture.Analyze(frames("kernel-write-8KiB.pcap"))
	fmt.Printf("%d malformed frames, %d incomplete messages\n", c.Malformed, c.Incomplete)
	for _, r := range capture.FindRPCs(c.Messages) {
		fmt.Printf("%-19s %s\n", r.Name(), r.Header.Shape())
	}
	// Output:
	// 0 malformed frames, 0 incomplete messages
	// NFSv3 LOOKUP call   RDMA_MSG reads=0/0 writes=0/0 reply=none
	// NFSv3 LOOKUP reply  RDMA_MSG reads=0/0 writes=0/0 reply=none
	// NFSv3 CREATE call   RDMA_MSG reads=0/0 writes=0/0 reply=none
	// NFSv3 CREATE reply  RDMA_MSG reads=0/0 writes=0/0 reply=none
	// NFSv3 WRITE call    RDMA_MSG reads=1/1 writes=0/0 reply=none
	// NFSv3 WRITE reply   RDMA_MSG reads=0/0 writes=0/0 reply=none
}

// Decode one frame: the WRITE call of the capture above, a one-packet Send.
func ExampleDecode() {
	p, err := capture.Decode(frames("kernel-write-8KiB.pcap")[8])
	if err != nil {
		panic(err)
	}
	fmt.Printf("%v -> %v QP %d %v, %d-byte payload, ICRC ok: %v\n",
		p.Src.Addr(), p.Dst.Addr(), p.DestQP, p.Opcode, len(p.Payload), p.ICRCValid)
	// Output: 10.0.0.2 -> 10.0.0.1 QP 17 SEND_ONLY, 164-byte payload, ICRC ok: true
}

// DecodeIB reads the InfiniBand part of a UDP payload: here an RDMA Read
// request with its RETH.
func ExampleDecodeIB() {
	b := []byte{0x0c, 0x00, 0xff, 0xff, 0, 0, 0, 17, 0x80, 0, 0, 42} // BTH
	b = binary.BigEndian.AppendUint64(b, 0x7f001000)                 // RETH: virtual address
	b = binary.BigEndian.AppendUint32(b, 0xc54)                      // R_Key
	b = binary.BigEndian.AppendUint32(b, 8192)                       // DMA length
	b = append(b, 0, 0, 0, 0)                                        // ICRC
	p, err := capture.DecodeIB(b)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%v QP %d PSN %d: %d bytes at %#x, R_Key %#x\n", p.Opcode, p.DestQP, p.PSN, p.RETH.DMALength, p.RETH.VA, p.RETH.RKey)
	// Output: RDMA_READ_REQUEST QP 17 PSN 42: 8192 bytes at 0x7f001000, R_Key 0xc54
}

// ICRC recomputes the Invariant CRC of a captured packet from its IP header
// and its UDP datagram.
func ExampleICRC() {
	f := frames("kernel-ls.pcap")[0]
	ip := f[14:34] // an IPv4 header without options
	udp := f[34:]  // UDP header, BTH, payload, ICRC (no Ethernet padding here)
	carried := binary.LittleEndian.Uint32(udp[len(udp)-4:])
	fmt.Println(capture.ICRC(ip, udp) == carried)
	// Output: true
}

// The Reassembler puts a Send split over several packets back together.
func ExampleReassembler() {
	var r capture.Reassembler
	for _, fr := range frames("kernel-write-3000B.pcap") {
		p, err := capture.Decode(fr)
		if err != nil {
			panic(err)
		}
		if m, ok := r.Add(&p); ok && m.Packets > 1 {
			fmt.Printf("%v of %d bytes in %d packets, ending with %v; PSNs %d apart\n",
				m.Kind, len(m.Payload), m.Packets, m.Opcode, m.LastPSN-m.FirstPSN)
		}
	}
	fmt.Printf("%d messages, %d duplicates, %d incomplete\n", r.Stats().Messages, r.Stats().Duplicates, r.Incomplete())
	// Output:
	// Send of 3140 bytes in 4 packets, ending with SEND_LAST; PSNs 3 apart
	// 6 messages, 0 duplicates, 0 incomplete
}

// FindRPCs pairs each reply with its call; the READDIRPLUS of ls is
// answered through the Reply chunk the call offered (a Long Reply).
func ExampleFindRPCs() {
	c := capture.Analyze(frames("kernel-ls.pcap"))
	for _, r := range capture.FindRPCs(c.Messages) {
		if r.Call != nil {
			fmt.Printf("%s: %s, %d bytes inline, same XID as the call: %v\n",
				r.Name(), capture.RDMAProcName(r.Header.Proc), len(r.Inline), r.Header.XID == r.Call.Header.XID)
		}
	}
	// Output:
	// NFSv3 GETATTR reply: RDMA_MSG, 112 bytes inline, same XID as the call: true
	// NFSv3 ACCESS reply: RDMA_MSG, 120 bytes inline, same XID as the call: true
	// NFSv3 READDIRPLUS reply: RDMA_NOMSG, 0 bytes inline, same XID as the call: true
}

// ChunkData gathers what the RDMA operations moved through a chunk: here
// the 8 KiB of a WRITE, pulled by knfsd with RDMA Reads from the client's
// Read chunk.
func ExampleChunkData() {
	c := capture.Analyze(frames("kernel-write-8KiB.pcap"))
	for _, r := range capture.FindRPCs(c.Messages) {
		if len(r.Header.ReadList) == 0 {
			continue
		}
		rs := r.Header.ReadList[0]
		data, err := capture.ChunkData(capture.Transfers(c.Messages), capture.KindReadRequest,
			r.Send.Dst, r.Send.Src, []capture.Segment{rs.Segment})
		if err != nil {
			panic(err)
		}
		fmt.Printf("Read chunk at position %d: %d bytes, starting %q\n", rs.Position, len(data), data[:8])
	}
	// Output: Read chunk at position 112: 8192 bytes, starting "1\n2\n3\n4\n"
}

// ParseTransportHeader walks a transport header: an NFSv3 WRITE call whose
// data is in a Read chunk at position 112.
func ExampleParseTransportHeader() {
	var b []byte
	for _, w := range []uint32{0x9053b497, 1, 128, 0, 1, 112, 0x9d3, 102400, 0x9053b497, 0x7d93b000, 0, 0, 0} {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	h, err := capture.ParseTransportHeader(b)
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Len, h.Shape(), h.ReadList[0].Position, capture.Length([]capture.Segment{h.ReadList[0].Segment}))
	fmt.Printf("handles %x\n", h.Handles())
	for _, w := range h.Words()[4:6] {
		fmt.Printf("%08x  # %s\n", w.Value, w.Note)
	}
	// Output:
	// 52 RDMA_MSG reads=1/1 writes=0/0 reply=none 112 102400
	// handles [9d3]
	// 00000001  # Read list: a Read segment follows
	// 00000070  #   position (112)
}

// ParseCM reads the Communication Manager's MADs, and RPCRDMAPrivateData
// the RFC 8797 private data in them.
func ExampleParseCM() {
	c := capture.Analyze(frames("kernel-mount.pcap"))
	for _, m := range c.Messages {
		if m.DestQP != 1 {
			continue
		}
		cm, ok := capture.ParseCM(m.Payload)
		if !ok {
			continue
		}
		pd, _ := capture.RPCRDMAPrivateData(cm.PrivateData)
		fmt.Printf("%v from %v: % x\n", cm.Attr, m.Src, pd)
	}
	// Output:
	// REQ from 10.0.0.2: f6 ab 0e 18 01 01 03 03
	// REP from 10.0.0.1: f6 ab 0e 18 01 00 03 03
	// RTU from 10.0.0.2:
}

// Golden renders a message as a golden file of package chunks: here the
// reply to an NFSv3 READ whose 8 KiB went through a Write chunk, sent with
// Send With Invalidate.
func ExampleGolden_Format() {
	var b []byte
	for _, w := range []uint32{
		0x13f007d1, 1, 64, 0, // xid, version 1, 64 credits, RDMA_MSG
		0,                                        // no Read list
		1, 1, 0xce4, 8192, 0x13f007d1, 0x1e92000, // a Write chunk of one segment
		0, 0, // end of the Write list, no Reply chunk
		0x13f007d1, 1, 0, 0, 0, 0, // the RPC reply: xid, REPLY, MSG_ACCEPTED, AUTH_NONE, SUCCESS
	} {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	reply := capture.Message{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), Kind: capture.KindSend, Opcode: capture.OpSendOnlyInvalidate, Packets: 1,
		Ext: capture.ExtIETH, InvalidateRKey: 0xce4, Payload: b}
	r := capture.FindRPCs([]capture.Message{reply})[0]
	text, err := (&capture.Golden{RPC: r, Operation: "read 8 KiB", PrefixLen: 8}).Format()
	if err != nil {
		panic(err)
	}
	fmt.Print(string(text))
	// Output:
	// # unknown reply, xid 0x13f007d1, 10.0.0.1 -> 10.0.0.2, 1-packet SEND_ONLY_WITH_INVALIDATE
	// # operation: read 8 KiB
	// direction reply
	// send SEND_ONLY_WITH_INVALIDATE invalidate 0x00000ce4
	// length 76
	// shape RDMA_MSG reads=0/0 writes=1/1 reply=none
	// header
	// 13f007d1  # rdma_xid
	// 00000001  # rdma_vers
	// 00000040  # rdma_credit (64)
	// 00000000  # rdma_proc: RDMA_MSG
	// 00000000  # Read list: end
	// 00000001  # Write list: a Write chunk follows
	// 00000001  #   segment count
	// 00000ce4  #     handle
	// 00002000  #     length (8192)
	// 13f007d1  #     offset (high)
	// 01e92000  #     offset (low)
	// 00000000  # Write list: end
	// 00000000  # Reply chunk: absent
	// rpc  # 8 of 24 bytes inline
	// 13f007d1 00000001
}

// ProcName and RDMAProcName name procedures.
func ExampleProcName() {
	fmt.Println(capture.ProcName(capture.ProgNFS, 3, 17), capture.ProcName(capture.ProgNFSACL, 3, 1), capture.RDMAProcName(1))
	// Output: NFSv3 READDIRPLUS NFSACLv3 GETACL RDMA_NOMSG
}

// Opcode.Ext tells which extended headers follow the BTH.
func ExampleOpcode_Ext() {
	for _, op := range []capture.Opcode{capture.OpSendOnly, capture.OpWriteFirst, capture.OpReadResponseFirst, capture.OpSendOnlyInvalidate} {
		ext, _ := op.Ext()
		fmt.Printf("%v: %d bytes of extended headers\n", op, ext.Size())
	}
	// Output:
	// SEND_ONLY: 0 bytes of extended headers
	// RDMA_WRITE_FIRST: 16 bytes of extended headers
	// RDMA_READ_RESPONSE_FIRST: 4 bytes of extended headers
	// SEND_ONLY_WITH_INVALIDATE: 4 bytes of extended headers
}
