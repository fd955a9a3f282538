// Package client is an NFS version 3 (RFC 1813) client over RPC-over-RDMA
// version 1 (RFC 8166), with the NFSv3 upper-layer binding of RFC 8267
// (nfs.Binding).
//
// A Client (Dial, New) calls a server over a requester transport.Conn,
// its methods the NFSv3 procedures. Mount mounts an export as the Linux
// client does with proto=rdma: MNT over TCP (MountClient, MOUNT version 3,
// RFC 1813 §5), asking the portmapper (RFC 1833) for mountd's port when
// not given it, then NFS over RPC-over-RDMA; with no portmapper, it sends
// MNT over the RPC-over-RDMA connection instead (rdma-nfsd and go-nfs
// answer it there). Each MOUNT and portmapper exchange times out
// (DefaultMountTimeout). The Export it returns opens Files and gives an
// fs.FS view. MountClient calls MOUNT over TCP, or over a Caller of the
// user's.
//
// Package nfs holds what the client shares with the server (package
// nfs/server), and package nfs/nfs3 is the XDR codec of both protocols'
// arguments and results. The package sits above package transport and
// picks no verbs provider: callers pass one in transport.Config.
package client
