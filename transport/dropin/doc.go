// Package dropin shows, and its tests prove, that ONC RPC programs written
// for TCP run over RPC-over-RDMA unchanged: github.com/willscott/go-nfs's
// nfs.Serve takes a *transport.Listener as its net.Listener (see the
// example), and github.com/buildbarn/go-xdr's rpcserver takes an accepted
// *transport.Conn as its record-marked stream (RFC 5531 §11). Neither knows
// it is not on TCP.
//
// The package has no API: it holds the example and the tests. The tests'
// clients are small RPC clients over a requester *transport.Conn from
// transport.Dial with the default configuration (what a Linux peer
// negotiates), encoding NFSv3 and MOUNT messages with buildbarn/go-xdr's
// generated types, so the bytes on both sides come from third-party code.
// Each scenario runs on the software provider (transport/verbs/soft) and,
// in the project's VM, on rdma-core (transport/verbs/rdmacore) over
// Soft-RoCE.
package dropin
