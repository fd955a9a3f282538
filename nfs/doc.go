// Package nfs is what the NFS version 3 (RFC 1813) client and server over
// RPC-over-RDMA version 1 (RFC 8166) share: the NFSv3 upper-layer binding
// of RFC 8267 (Binding), the program and procedure numbers of NFS, MOUNT,
// NFSACL and portmap (RFC 1833) with their names (ProcName), NFS over
// RDMA's port (DefaultRDMAPort), the largest sizes of the XDR items that
// bound a reply, and DialReserved.
//
// The client is package nfs/client: it calls a server over a requester
// transport.Conn (Dial, Mount, Export), and its MountClient calls
// MOUNT over TCP. The server is package nfs/server: it exports a directory
// of the operating system (Server, DirFS, DirHandler) the way the Linux
// kernel client expects of knfsd. Package nfs/nfs3 is the XDR codec of
// both protocols' arguments and results. A program of one side does not
// link the other.
//
// The packages sit above package transport and pick no verbs provider:
// callers pass one in transport.Config.
package nfs
