// Package nfsclientguest holds the guest-side tests of the Go NFSv3
// client (package nfs/client) against the Linux kernel's NFS server
// (knfsd, svcrdma) in the project's Soft-RoCE VM. The package itself is
// empty: its tests carry the e2eguest build tag and run only inside the
// VM, started by e2e/nfsclient_test.go through vmtest.RunGuestTests.
//
// The client mounts 10.0.0.1:/export (the tmpfs rxevm-nfsd-start exports)
// the way the Linux client does with proto=rdma: MNT over TCP at the port
// rpcbind gives, then NFSv3 over RPC-over-RDMA from rxe1 (10.0.0.2) to
// knfsd on rxe0 (10.0.0.1), port 20049, with the rdma-core provider. Every
// file it writes is checked on the exported tmpfs as the kernel sees it,
// and every file it reads was written there by the guest. The kernel's own
// client, mounted on the same export, is the yardstick of the benchmarks.
package nfsclientguest
