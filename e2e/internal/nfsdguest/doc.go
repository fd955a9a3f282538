// Package nfsdguest holds the guest side of TestRdmaNfsdKernel
// (e2e/rdmanfsd_test.go): in the Soft-RoCE VM, cmd/rdma-nfsd runs as a
// separate process (/host/rdma-nfsd, built by vmtest.GuestTests.Binaries)
// on rxe0 at 10.0.0.1, and the Linux kernel's NFSv3 client mounts it over
// RDMA from the same guest and runs the nfsworkload workload: files by
// checksum across a remount, the random exerciser, a 2,000-entry
// directory, the namespace operations, a tree copied in and out, a server
// killed and restarted in the middle of a 64 MiB write on the hard mount,
// and the kernel's mountstats as the proof of what was negotiated.
//
// The tests carry the build tag e2eguest; this file and the mountstats
// parser (ParseXprt) build everywhere, so that the package exists, and is
// tested, on the host.
package nfsdguest
