package vm

// GuestPackages are the Debian packages whose programs make up the guest's
// user space. Build adds the library packages they depend on (the lib* and
// zlib1g names in their Depends and Pre-Depends fields, recursively) and then
// checks that every ELF file in the initramfs finds all its libraries.
// Maintainer-script dependencies (adduser, ucf, python3, debconf, ...) are
// not needed by an initramfs that is assembled, not installed.
var GuestPackages = []string{
	"busybox-static", "bash", "mount", "kmod", "iproute2", "netbase",
	"libibverbs1", "librdmacm1", "ibverbs-providers", "ibverbs-utils", "rdmacm-utils", "perftest",
	"nfs-common", "nfs-kernel-server", "rpcbind", "libtirpc-common",
	"tcpdump", "strace",
}

// KernelMetaPackage names the package whose dependency picks the kernel: the
// first build downloads the linux-image-<ABI>-amd64 it depends on and records
// the name in the cache, so later builds keep that kernel until a refresh.
const KernelMetaPackage = "linux-image-amd64"

// guestPrograms are the executables copied from the unpacked packages into the
// guest; busybox provides every other command. bash is /bin/sh: Debian's
// busybox-static is built with FEATURE_SH_STANDALONE and PREFER_APPLETS, so
// its ash would run busybox's applets ahead of real programs in PATH (its own
// ip instead of iproute2's). Symbolic links (the kmod applets, /sbin/ip) are
// kept as links and their targets copied too.
var guestPrograms = []string{
	"bin/bash", "bin/mount", "bin/umount",
	"bin/kmod", "sbin/modprobe", "sbin/insmod", "sbin/rmmod", "sbin/lsmod", "sbin/modinfo", "sbin/depmod",
	"bin/ip", "sbin/ip", "bin/ss", "usr/bin/rdma",
	"usr/bin/ibv_devices", "usr/bin/ibv_devinfo", "usr/bin/ibv_rc_pingpong", "usr/bin/ibv_ud_pingpong",
	"usr/bin/ibv_srq_pingpong", "usr/bin/ibv_uc_pingpong", "usr/bin/ibv_asyncwatch",
	"usr/bin/rping", "usr/bin/ucmatose", "usr/bin/udaddy", "usr/bin/rdma_server", "usr/bin/rdma_client",
	"usr/bin/rstream", "usr/bin/riostream", "usr/bin/cmtime", "usr/bin/mckey", "usr/bin/rcopy",
	"usr/bin/ib_send_bw", "usr/bin/ib_send_lat", "usr/bin/ib_write_bw", "usr/bin/ib_write_lat",
	"usr/bin/ib_read_bw", "usr/bin/ib_read_lat", "usr/bin/ib_atomic_bw", "usr/bin/ib_atomic_lat",
	"sbin/mount.nfs", "sbin/mount.nfs4", "sbin/umount.nfs", "sbin/umount.nfs4", "sbin/rpc.statd",
	"sbin/sm-notify", "sbin/showmount", "usr/sbin/nfsstat", "usr/sbin/rpcdebug",
	"usr/sbin/rpc.nfsd", "usr/sbin/rpc.mountd", "usr/sbin/exportfs", "usr/sbin/nfsconf",
	"sbin/rpcbind", "usr/sbin/rpcinfo",
	"usr/bin/tcpdump", "usr/bin/strace",
}

// guestDlopened are libraries loaded with dlopen, which the DT_NEEDED closure
// cannot see: the software libibverbs providers (rxe; siw is not in the 6.1
// kernel but costs nothing), and libgcc_s, which glibc loads in
// pthread_exit and pthread_cancel (rping aborts with "libgcc_s.so.1 must be
// installed for pthread_exit to work" without it).
var guestDlopened = []string{
	"usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so",
	"usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav34.so",
	"lib/x86_64-linux-gnu/libgcc_s.so.1",
}

// libibverbsDrivers are the provider files kept in /etc/libibverbs.d; the
// others only make every verbs program print warnings about missing devices.
var libibverbsDrivers = map[string]bool{"rxe.driver": true, "siw.driver": true}

// Kernel modules, loaded by /init in groups that run in parallel (their own
// dependencies come through modules.dep). crc32_generic provides the "crc32"
// shash that rdma_rxe needs for the RoCEv2 ICRC.
var (
	modulesRDMA = []string{"veth", "dummy", "crc32_generic", "rdma_rxe", "ib_uverbs", "rdma_ucm"}
	modulesNFS  = []string{"sunrpc", "nfsd", "nfs", "nfsv3"}
	modulesHost = []string{"qemu_fw_cfg", "virtio_pci", "9pnet_virtio", "9p"}
	modulesLast = []string{"rpcrdma"}
	// modulesExtra are in the initramfs for autoloading but not loaded at boot.
	modulesExtra = []string{"crc32_pclmul", "vrf", "tun", "bridge"}
)
