// Package nfs is NFS version 3 (RFC 1813) over RPC-over-RDMA version 1: the
// upper-layer binding of RFC 8267, a server that serves a
// github.com/willscott/go-nfs handler on a transport.Listener the way the
// Linux kernel client expects of knfsd (MOUNT over TCP, NFS over RDMA on
// port 20049), and the NFS semantics go-nfs leaves to its caller (stable
// file handles, LINK, honest WRITE stability with COMMIT, a duplicate
// request cache).
//
// The package sits above package transport and picks no verbs provider:
// callers pass one in transport.Config.
package nfs
