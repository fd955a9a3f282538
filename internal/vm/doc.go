// Package vm builds and runs the end-to-end test VM: a Debian bookworm kernel
// (linux-image-amd64, 6.1, which has rdma_rxe, rpcrdma and nfsd) and an
// initramfs holding rdma-core's user space (libibverbs, librdmacm, the rxe
// provider, ibverbs-utils, rdmacm-utils, perftest), the NFS client and server
// (nfs-common, nfs-kernel-server, rpcbind), iproute2, tcpdump and strace,
// booted by qemu-system-x86_64 under TCG. No disk image and no root tricks:
// Build downloads Debian packages with apt-get into a cache, unpacks them
// with dpkg-deb and writes the initramfs as a newc cpio archive.
//
// Inside the guest, Soft-RoCE runs on a veth pair: veth0 10.0.0.1 with rxe0
// is the "server", veth1 10.0.0.2 with rxe1 is the "client". In the default
// wire mode, policy routing sends traffic between the two addresses over the
// veth, so RoCEv2 packets (UDP 4791) really cross a link and tcpdump on veth0
// sees them. Both ends stay in the initial network namespace, because
// rdma_rxe in Linux 6.1 opens its UDP socket and looks up routes only in
// init_net: an rxe device on a netdev of another namespace receives nothing.
//
// Run boots the VM, runs one bash command in it and powers it off, returning
// the command's exit status. A host directory can be shared into the guest at
// /host (virtio-9p), so Go binaries built on the host run inside. The VM has
// no network card (-nic none): guest traffic never leaves it.
//
// Guest helpers (in PATH): rxevm-net-setup, rxevm-nfsd-start (knfsd, NFSv3,
// exporting a tmpfs at /export on TCP 2049 and RDMA 20049), rxevm-nfs-mount
// (the kernel NFSv3 client, over RDMA or TCP) and rxevm-gid-index.
package vm
