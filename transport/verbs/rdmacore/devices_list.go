//go:build linux && cgo

package rdmacore

/*
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include "cshim.h"

// rc_port is what Devices reads of a port.
struct rc_port {
	int32_t state, link_layer, active_mtu, max_mtu, gid_tbl_len;
};

// rc_dev_list is ibv_get_device_list; errno, when it returns NULL, goes
// to *err.
static struct ibv_device **rc_dev_list(int *n, int *err)
{
	errno = 0;
	struct ibv_device **l = ibv_get_device_list(n);
	if (!l)
		*err = errno ? errno : EIO;
	return l;
}

static struct ibv_device *rc_dev_at(struct ibv_device **l, int i) { return l[i]; }

// rc_dev_open opens a device and returns its port count (ibv_query_device).
static struct ibv_context *rc_dev_open(struct ibv_device *d, int *ports, int *err)
{
	errno = 0;
	struct ibv_context *ctx = ibv_open_device(d);
	if (!ctx) {
		*err = errno ? errno : ENODEV;
		return NULL;
	}
	struct ibv_device_attr attr;
	int rc = ibv_query_device(ctx, &attr);
	if (rc) {
		*err = rc;
		ibv_close_device(ctx);
		return NULL;
	}
	*ports = attr.phys_port_cnt;
	return ctx;
}

static int rc_dev_port(struct ibv_context *ctx, int port, struct rc_port *out)
{
	struct ibv_port_attr a;
	memset(&a, 0, sizeof a);
	int rc = ibv_query_port(ctx, port, &a);
	if (rc)
		return rc;
	out->state = a.state;
	out->link_layer = a.link_layer;
	out->active_mtu = a.active_mtu;
	out->max_mtu = a.max_mtu;
	out->gid_tbl_len = a.gid_tbl_len;
	return 0;
}

// rc_dev_gids fills up to max entries of the device's GID tables; it
// returns their count or -errno.
static long rc_dev_gids(struct ibv_context *ctx, struct ibv_gid_entry *e, long max)
{
	return (long)ibv_query_gid_table(ctx, e, max, 0);
}

// rc_addr_port binds a synchronous cm_id to the address and returns the
// port it landed on (0 for none) and the device's name into name.
static int rc_addr_port(const uint8_t *ip, int ip_len, char *name, int name_len)
{
	struct rdma_cm_id *id;
	if (rc_create_id(NULL, &id, 0))
		return 0;
	int port = 0;
	if (rc_bind_addr(id, ip, ip_len, 0) == 0 && id->verbs) {
		strncpy(name, ibv_get_device_name(id->verbs->device), name_len - 1);
		name[name_len - 1] = 0;
		port = id->port_num;
	}
	rdma_destroy_id(id);
	return port;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"
)

// Devices lists the RDMA devices of this host through libibverbs
// (ibv_get_device_list, ibv_query_port, ibv_query_gid_table), with the IP
// addresses RDMA-CM binds to each port. A host without RDMA devices, or
// whose kernel has no RDMA support, has none: an empty list and a nil
// error. A device that cannot be opened is listed with its Err.
func Devices() ([]DeviceInfo, error) {
	var n, cerr C.int
	list := C.rc_dev_list(&n, &cerr)
	if list == nil {
		if syscall.Errno(cerr) == syscall.ENOSYS {
			// libibverbs: no /sys/class/infiniband_verbs.
			return nil, nil
		}
		return nil, fmt.Errorf("rdmacore: ibv_get_device_list: %w", syscall.Errno(cerr))
	}
	defer C.ibv_free_device_list(list)
	devs := make([]DeviceInfo, 0, int(n))
	byName := make(map[string]int, int(n))
	for i := range int(n) {
		d := C.rc_dev_at(list, C.int(i))
		info := DeviceInfo{Name: C.GoString(C.ibv_get_device_name(d))}
		info.Ports, info.Err = queryPorts(d)
		if info.Err != nil {
			info.Err = fmt.Errorf("rdmacore: %s: %w", info.Name, info.Err)
		}
		byName[info.Name] = len(devs)
		devs = append(devs, info)
	}
	for _, a := range bindableAddrs() {
		name, port := addrPort(a)
		i, ok := byName[name]
		if !ok || port < 1 || port > len(devs[i].Ports) {
			continue
		}
		p := &devs[i].Ports[port-1]
		p.Addrs = append(p.Addrs, a)
	}
	return devs, nil
}

// queryPorts opens d and reads its ports and GID tables; when only the
// GID tables cannot be read, it returns the ports and the error.
func queryPorts(d *C.struct_ibv_device) ([]PortInfo, error) {
	var nports, cerr C.int
	ctx := C.rc_dev_open(d, &nports, &cerr)
	if ctx == nil {
		return nil, fmt.Errorf("ibv_open_device: %w", syscall.Errno(cerr))
	}
	defer C.ibv_close_device(ctx)
	ports := make([]PortInfo, 0, int(nports))
	gids := 0
	for num := 1; num <= int(nports); num++ {
		var p C.struct_rc_port
		if rc := C.rc_dev_port(ctx, C.int(num), &p); rc != 0 {
			return nil, fmt.Errorf("ibv_query_port %d: %w", num, syscall.Errno(rc))
		}
		ports = append(ports, PortInfo{Num: num, State: portStateName(int(p.state)),
			LinkLayer: linkLayerName(int(p.link_layer)), ActiveMTU: mtuBytes(int(p.active_mtu)), MaxMTU: mtuBytes(int(p.max_mtu))})
		gids += max(0, int(p.gid_tbl_len))
	}
	if gids == 0 {
		return ports, nil
	}
	entries := (*C.struct_ibv_gid_entry)(C.calloc(C.size_t(gids), C.size_t(unsafe.Sizeof(C.struct_ibv_gid_entry{}))))
	if entries == nil {
		return nil, errors.New("calloc of the GID table failed")
	}
	defer C.free(unsafe.Pointer(entries))
	got := C.rc_dev_gids(ctx, entries, C.long(gids))
	if got < 0 {
		return ports, fmt.Errorf("ibv_query_gid_table: %w", syscall.Errno(-got))
	}
	for _, e := range unsafe.Slice(entries, int(got)) {
		num := int(e.port_num)
		if num < 1 || num > len(ports) {
			continue
		}
		raw := *(*[16]byte)(unsafe.Pointer(&e.gid))
		g := GID{Index: int(e.gid_index), GID: netip.AddrFrom16(raw), Type: gidTypeName(int(e.gid_type))}
		if e.ndev_ifindex != 0 {
			if ifc, err := net.InterfaceByIndex(int(e.ndev_ifindex)); err == nil {
				g.Netdev = ifc.Name
			}
		}
		ports[num-1].GIDs = append(ports[num-1].GIDs, g)
	}
	return ports, nil
}

// bindableAddrs are this host's interface addresses a listener could
// bind: neither loopback nor IPv6 link-local.
func bindableAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := pfx.Addr().Unmap()
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() {
			continue
		}
		out = append(out, ip)
	}
	return out
}

// addrPort is the device and port RDMA-CM binds ip to ("", 0 if none).
func addrPort(ip netip.Addr) (string, int) {
	b, n := ipBytes(ip)
	var name [C.IBV_SYSFS_NAME_MAX]C.char
	port := C.rc_addr_port(cBytes(b[:n]), C.int(n), &name[0], C.int(len(name)))
	if port == 0 {
		return "", 0
	}
	return C.GoString(&name[0]), int(port)
}

// portStateName names an enum ibv_port_state.
func portStateName(s int) string {
	switch s {
	case 1:
		return "DOWN"
	case 2:
		return "INIT"
	case 3:
		return "ARMED"
	case 4:
		return "ACTIVE"
	case 5:
		return "ACTIVE_DEFER"
	}
	return "NOP"
}

// linkLayerName names an IBV_LINK_LAYER_* value.
func linkLayerName(ll int) string {
	switch ll {
	case 2: // IBV_LINK_LAYER_ETHERNET
		return "Ethernet"
	case 0, 1: // IBV_LINK_LAYER_UNSPECIFIED, IBV_LINK_LAYER_INFINIBAND
		return "InfiniBand"
	}
	return "unknown"
}

// gidTypeName names an enum ibv_gid_type.
func gidTypeName(t int) string {
	switch t {
	case 0:
		return "IB"
	case 1:
		return "RoCE v1"
	case 2:
		return "RoCE v2"
	}
	return "unknown"
}

// mtuBytes is the size of an enum ibv_mtu (IBV_MTU_256 = 1 to
// IBV_MTU_4096 = 5), 0 for anything else.
func mtuBytes(m int) int {
	if m < 1 || m > 5 {
		return 0
	}
	return 128 << m
}
