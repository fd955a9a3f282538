// Package server is an NFS version 3 (RFC 1813) server over RPC-over-RDMA
// version 1 (RFC 8166), with the NFSv3 upper-layer binding of RFC 8267
// (nfs.Binding).
//
// The server (Server) exports a directory of the operating system (DirFS,
// with the stable file handles of a DirHandler) the way the Linux kernel
// client expects of knfsd: NFS over RDMA on port 20049 (and over TCP if
// asked), MOUNT version 3 (RFC 1813 §5) over TCP, registered with rpcbind
// (RFC 1833). It executes every NFSv3 and MOUNT procedure itself, each as
// the caller its AUTH_SYS credential names (squashed as configured), so
// that the kernel's permission checks decide; it answers retransmissions
// from a duplicate request cache and replies FILE_SYNC only to data it
// made durable.
//
// Package nfs holds what the server shares with the client (package
// nfs/client), and package nfs/nfs3 is the XDR codec of both protocols'
// arguments and results. The package sits above package transport and
// picks no verbs provider: callers pass one in transport.Config.
package server
