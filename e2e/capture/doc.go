// Package capture reads RoCEv2 traffic captured with tcpdump (see
// vmtest.ParsePCAP) back into the RDMA operations and the RPC-over-RDMA
// messages it carried, so that end-to-end tests can check what peers put on
// the wire.
//
// The layers, each usable alone:
//
//   - Decode: an Ethernet frame to a Packet: IPv4 or IPv6, UDP port 4791
//     (IBA Vol. 1 Annex A17), the Base Transport Header (IBA Vol. 1 §9.2),
//     the extended headers its opcode calls for (RETH, AETH, DETH, ImmDt,
//     IETH, atomics; §9.3), the payload without its pad, and the ICRC,
//     which Decode recomputes (Annex A17.3.3).
//   - Reassembler: packets to Messages, following the PSN rules of an RC
//     responder: a Send, an RDMA Write or an RDMA Read response split over
//     FIRST, MIDDLE and LAST packets becomes one Message (rxe's path MTU is
//     1024 bytes on a 1500-byte Ethernet, so a 4 KiB inline message is four
//     packets); retransmissions and packets past a gap are dropped.
//   - FindRPCs: each Send as an RPC-over-RDMA version 1 message (RFC 8166
//     §4): its transport header, walked by ParseTransportHeader
//     independently of package chunks, its inline RPC message, and the
//     pairing of replies with calls by XID.
//   - Transfers and ChunkData: the bytes RDMA Reads and Writes moved through
//     the segments of a Read, Write or Reply chunk.
//   - ParseCM and RPCRDMAPrivateData: the Communication Manager's MADs on
//     QP1 and the RFC 8797 private data in them.
//   - Golden: a message as a golden file of package chunks.
//
// Every decoder takes hostile input: it never panics, never reads outside
// its buffer, and never allocates more than the input can describe.
package capture
