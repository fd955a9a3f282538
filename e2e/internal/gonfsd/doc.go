// Package gonfsd is the test instrumentation around nfs.Server, which
// serves github.com/willscott/go-nfs to the Linux kernel's NFS client:
// NFSv3 over RPC-over-RDMA version 1 (RFC 8166, a *transport.Listener) and
// the MOUNT protocol over TCP, in the project's Soft-RoCE VM.
//
// The kernel never carries MOUNT over RDMA: mount.nfs skips its port
// probing for proto=rdma, the kernel refuses mountproto=rdma ("not used for
// side protocols", fs/nfs/fs_context.c) and sends MNT over TCP (or UDP) to
// mountport. nfs.Server therefore runs one go-nfs handler on two
// listeners, so that the file handle MNT returns over TCP is valid over
// RDMA.
//
// A Server is an nfs.Server (with NFS over TCP, without rpcbind
// registration) that counts, per transport, the RPC procedures it was
// called with (nfs.ServerConfig.OnCall), keeps the responder
// *transport.Conns for their Stats (OnConn), and records the RFC 8797
// private data of every connection request (through a wrapping verbs
// provider). CallScanner follows a record-marked stream for tests that
// watch the bytes themselves. Its RDMA listener uses nfs.Binding, the
// NFSv3 upper-layer binding (RFC 8267), so that the responder places READ
// data in the Write chunk the kernel offers. DirFS exports a directory with the billy.Change go-nfs needs to
// apply the modes the kernel sets.
//
// The kernel-client test itself runs in the VM (build tag e2eguest); the
// host test e2e/kernelclient_test.go compiles and boots it.
package gonfsd
