// Package marshal holds the pure decisions and byte shuffling of RPC-over-RDMA
// version 1 (RFC 8166 §3.5, §4.3) that sit between the transport header codec
// (package chunks) and the per-connection engine (package transport):
//
//   - a requester's choice of how to convey a call (inline RDMA_MSG, a Read
//     chunk for the DDP-eligible argument, or a Long Call) and which chunks to
//     offer for its reply (none, a Write chunk, a Reply chunk);
//   - a responder's choice of how to convey a reply (inline, with its
//     DDP-eligible result in the requester's Write chunk, through the Reply
//     chunk, or ERR_CHUNK);
//   - the reduction of a message (a DDP-eligible item removed) and its
//     reconstruction at the peer (chunk data put back at its XDR position,
//     with or without its XDR pad);
//   - the split of a transfer over the segments of a chunk.
//
// Nothing here does I/O, holds state, or allocates: functions take lengths and
// byte slices and return plans, or append to caller buffers.
package marshal
