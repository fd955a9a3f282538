// Package verbs is the RDMA verbs interface that the RPC-over-RDMA transport
// is written against, shaped by reliable-connected (RC) queue-pair semantics
// and limited to what RPC-over-RDMA version 1 (RFC 8166) needs:
//
//   - connection management with RDMA-CM private data (RFC 8797 travels in
//     it): Dial, Listen, Accept after looking at the peer's private data,
//     Reject, disconnect notification;
//   - memory that lives outside the Go heap, registered for local access,
//     and memory windows that expose a part of it to the peer under an rkey
//     that can be invalidated (locally, or remotely by Send With Invalidate);
//   - work requests (Send, Send With Invalidate, RDMA Write, RDMA Read, Local
//     Invalidate, Bind Window, Receive) posted in batches;
//   - completions polled in batches, with waiting done on the Go netpoller.
//
// Two providers implement it: transport/verbs/soft, a faithful software
// model in pure Go (in-process or between processes over TCP), and
// transport/verbs/rdmacore, real verbs through libibverbs and librdmacm.
package verbs
