// Package knfsdclient holds the guest-side tests of our RPC-over-RDMA
// requester against the Linux kernel's NFS server (knfsd, svcrdma) in the
// project's Soft-RoCE VM. The package itself is empty: its tests carry the
// e2eguest build tag and run only inside the VM, started by
// e2e/knfsd_test.go through vmtest.RunGuestTests.
//
// The requester is transport.Dial with the rdma-core provider, from rxe1
// (10.0.0.2) to knfsd on rxe0 (10.0.0.1), port 20049. The root file handle
// comes from the kernel's mountd over TCP (package nfs/client's
// MountClient: MNT, its port from rpcbind's GETPORT); the NFSv3 calls then
// go over RDMA with AUTH_SYS (uid 0) by package nfs/client (client.New on
// the test's transport.Conn, so that each test keeps its own transport
// settings), except the few the tests send raw to control their
// pipelining or to see an RDMA_ERROR (their header by our xdr package,
// their arguments and results by github.com/buildbarn/go-xdr's NFSv3
// types); each answer is checked against what the guest's own file system
// says. knfsd's side of every exchange comes from the kernel's svcrdma
// tracepoints (tracefs), which the tests enable: what svcrdma decoded from
// our transport headers, which chunks it pulled and pushed, which rkeys it
// invalidated, and that it reported no error.
package knfsdclient
