package rdmacore

import "net/netip"

// DeviceInfo is an RDMA device of this host as rdma-core reports it
// (Devices).
type DeviceInfo struct {
	// Name is the kernel's name of the device: "mlx5_0", "rxe0".
	Name string
	// Ports are the device's ports, numbered from 1.
	Ports []PortInfo
	// Err, if not nil, is why the device could not be opened or queried
	// in full (ibv_open_device needs access to /dev/infiniband/uverbsN):
	// Ports is then empty, or without GIDs when only the GID tables could
	// not be read.
	Err error
}

// PortInfo is a port of an RDMA device (ibv_query_port, IBA 14.2.5.6).
type PortInfo struct {
	// Num is the port number, from 1.
	Num int
	// State is the port's logical state (IBA 7.2), named as "rdma link"
	// names it: "DOWN", "INIT", "ARMED", "ACTIVE" or "ACTIVE_DEFER".
	// Only an active port carries traffic.
	State string
	// LinkLayer is "InfiniBand" or "Ethernet" (RoCE, iWARP). A device
	// that does not say (IBV_LINK_LAYER_UNSPECIFIED) is InfiniBand.
	LinkLayer string
	// ActiveMTU is the path MTU in use on the port, in bytes (256, 512,
	// 1024, 2048 or 4096: the largest InfiniBand MTU the link carries;
	// on RoCE, the largest that fits in the netdev's MTU with the
	// headers). MaxMTU is the largest the port supports.
	ActiveMTU, MaxMTU int
	// GIDs are the valid entries of the port's GID table.
	GIDs []GID
	// Addrs are the IP addresses of this host that RDMA-CM binds to this
	// port (rdma_bind_addr): those a listener (rdma-nfsd -addr) or a
	// Dial's LocalAddr may use to reach the port. IPv6 link-local
	// addresses, which need a zone, and loopback addresses are left out.
	Addrs []netip.Addr
}

// GID is one entry of a port's GID table (ibv_query_gid_table).
type GID struct {
	// Index is the entry's index in the table (the GID index of
	// ibv_rc_pingpong -g and perftest -x).
	Index int
	// GID is the 16-byte GID; a RoCE GID of an IPv4 address is that
	// address mapped into IPv6 (::ffff:a.b.c.d).
	GID netip.Addr
	// Type is "IB", "RoCE v1" or "RoCE v2".
	Type string
	// Netdev is the network interface of a RoCE GID ("" for IB).
	Netdev string
}

// Active reports whether the port is active (carries traffic).
func (p PortInfo) Active() bool { return p.State == "ACTIVE" }
