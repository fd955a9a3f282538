// Package mountstats parses what the Linux NFS client reports of a mount
// in /proc/self/mountstats (Linux 6.1): the RPC-over-RDMA transport's
// "xprt: rdma" counters (xprt_rdma_print_stats, net/sunrpc/xprtrdma) and
// the per-procedure statistics (net/sunrpc/stats.c). The VM tests and
// cmd/rpcrdma-bench read the kernel client's chunks, invalidations and
// call counts with it.
package mountstats
