//go:build linux && cgo

package rdmacore

/*
#include "cshim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"unsafe"
)

// parseHostPort splits "host:port" and resolves host (an IP address, or a
// name looked up with the default resolver). An empty host is the
// unspecified IPv4 address.
func parseHostPort(ctx context.Context, addr string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad port %q", port)
	}
	if host == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(pn)), nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		ips, lerr := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if lerr != nil {
			return netip.AddrPort{}, lerr
		}
		if len(ips) == 0 {
			return netip.AddrPort{}, fmt.Errorf("no address for %q", host)
		}
		ip = ips[0]
	}
	return netip.AddrPortFrom(ip.Unmap().WithZone(""), uint16(pn)), nil
}

// ipBytes returns the 4 or 16 bytes of ip for the C helpers, and their
// count (0 for the zero Addr).
func ipBytes(ip netip.Addr) ([16]byte, int) {
	var b [16]byte
	switch {
	case ip.Is4():
		a := ip.As4()
		copy(b[:], a[:])
		return b, 4
	case ip.Is6():
		a := ip.As16()
		copy(b[:], a[:])
		return b, 16
	}
	return b, 0
}

// cBytes returns a pointer to b for a C call that reads it (nil if empty).
func cBytes(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// tcpAddr reads a sockaddr of a cm_id through get (rc_local_addr or
// rc_peer_addr). RDMA-CM addresses in the TCP port space are IP addresses
// and ports, hence *net.TCPAddr.
func tcpAddr(get func(ip *C.uint8_t, port *C.uint16_t) C.int) *net.TCPAddr {
	var ip [16]byte
	var port C.uint16_t
	switch get(cBytes(ip[:]), &port) {
	case 4:
		return &net.TCPAddr{IP: net.IP(ip[:4]).To16(), Port: int(port)}
	case 16:
		return &net.TCPAddr{IP: net.IP(ip[:]), Port: int(port)}
	}
	return &net.TCPAddr{}
}
