// Package gonfsd serves github.com/willscott/go-nfs, go-nfs's own server
// unchanged, to the Linux kernel's NFS client: NFSv3 over RPC-over-RDMA
// version 1 (RFC 8166) on a *transport.Listener, and the MOUNT protocol
// over TCP, in the project's Soft-RoCE VM. It is the drop-in proof with the
// kernel as the client: a third-party ONC RPC server takes the listener
// as its net.Listener and does not know it is not on TCP.
//
// The kernel never carries MOUNT over RDMA: mount.nfs skips its port
// probing for proto=rdma, the kernel refuses mountproto=rdma ("not used for
// side protocols", fs/nfs/fs_context.c) and sends MNT over TCP (or UDP) to
// mountport. A Server therefore runs one go-nfs server, with one handler
// (go-nfs's caching handler over its null-auth handler), on two listeners,
// so that the file handle MNT returns over TCP is valid over RDMA; each
// listener serves NFS and MOUNT.
//
// A Server counts, per transport, the RPC procedures it was called with
// (a CallScanner over the bytes go-nfs reads from each connection), keeps
// the responder *transport.Conns for their Stats, and records the RFC 8797
// private data of every connection request (through a wrapping verbs
// provider). Its RDMA listener uses nfs.Binding, the NFSv3 upper-layer
// binding (RFC 8267), so that the responder places READ data in the Write
// chunk the kernel offers and pulls WRITE data from its Read chunks, under
// go-nfs's byte stream. DirFS exports a directory with the billy.Change
// go-nfs needs to apply the modes the kernel sets.
//
// The kernel-client test itself runs in the VM (build tag e2eguest); the
// host test e2e/kernelclient_test.go compiles and boots it.
package gonfsd
