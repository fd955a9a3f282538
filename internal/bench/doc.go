// Package bench measures NFSv3 over RPC-over-RDMA (RFC 8166, RFC 8267)
// against the 1024-byte default of RFC 8166 and against the Linux kernel,
// and runs the demo and the interoperability matrix: the pieces of the
// programs cmd/rpcrdma-bench, cmd/rpcrdma-demo and cmd/rpcrdma-bench-guest,
// which the e2e tests call directly.
//
// The host side (Run, Demo, Matrix) installs what the VM needs, builds the
// image once (package internal/vm: a Debian 6.1 kernel under qemu TCG,
// rdma_rxe on a veth pair), builds cmd/rdma-nfsd and
// cmd/rpcrdma-bench-guest for the guest and runs the guest side (Guest)
// there; it runs from the go-rpcrdma checkout. On the soft provider Run
// measures our peers on this machine instead, and with Spec.Host (bench
// -host; host.go) rdma-nfsd and the Go and kernel clients on this host's
// own RDMA device through rdma-core.
//
// Every cell of the benchmark reports ops/s, MB/s, p50/p99 latency, RPCs
// per operation, the RDMA operations per RPC by kind (Sends, RDMA Reads,
// RDMA Writes, remote and local invalidations: counted by the peers, not
// estimated), chunks per RPC, rxe packets per RPC, rdma-nfsd's CPU time
// and allocations per RPC, the server's context switches per RPC (rdma-nfsd's
// threads, knfsd's nfsd threads), the same three of the bench process for
// the Go clients, and the ratio to the same cell at inline 1024.
// Reports print as a table (WriteText) and as CSV and Markdown; package
// chart draws them.
package bench
