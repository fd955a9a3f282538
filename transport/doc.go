// Package transport is RPC-over-RDMA version 1 (RFC 8166) with the RDMA-CM
// private-data exchange of RFC 8797, as a net.Conn and a net.Listener that
// existing Go ONC RPC programs use unchanged.
//
// A Conn carries the RFC 5531 record-marked byte stream that TCP-based RPC
// stacks read and write: Write accepts any split of records, Read returns
// whole reconstructed RPC messages, each as one record with the last-fragment
// bit set. Underneath, every record is one RPC message conveyed by RDMA Send,
// RDMA Read and RDMA Write as RFC 8166 prescribes: inline when it fits the
// inline threshold negotiated at connect time (RFC 8797), with its
// DDP-eligible item in a Read or Write chunk when the upper-layer binding
// names one, or whole through a Long Call or the Reply chunk. WriteMsg and
// ReadMsg skip record marking for message-aware stacks.
//
// A Conn from Dial is a requester (an RPC client); one from a Listener is a
// responder (an RPC server). Both roles use credits (RFC 8166 §3.3), validate
// every transport header they receive (package chunks), and use or accept
// Send With Invalidate as negotiated.
//
// The engine is built on the verbs interface (package transport/verbs), and
// Config.Provider, which Dial and Listen require, chooses its provider: the
// software provider (transport/verbs/soft) runs anywhere, over TCP; the
// rdma-core provider (transport/verbs/rdmacore) runs on real RDMA devices.
// The examples of Dial, Listen and Conn.Call run on the software provider;
// package transport/dropin shows github.com/willscott/go-nfs served,
// unchanged, on a Listener.
package transport
