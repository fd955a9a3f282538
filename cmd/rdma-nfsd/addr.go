package main

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

// defaultAddr is where rdma-nfsd listens without -addr: loopback only,
// so that nothing is exported to the network until the operator names
// an address.
const defaultAddr = "127.0.0.1"

// addrList is the value of -addr: IP addresses, comma-separated or one
// per -addr; the first -addr replaces the default.
type addrList struct {
	hosts []string // none: the default
}

func (a *addrList) String() string {
	if a == nil || len(a.hosts) == 0 {
		return defaultAddr
	}
	return strings.Join(a.hosts, ",")
}

// Set takes one -addr value: IP addresses separated by commas, an IPv6
// one with or without brackets.
func (a *addrList) Set(v string) error {
	for _, h := range strings.Split(v, ",") {
		h = strings.TrimSpace(h)
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			h = h[1 : len(h)-1]
		}
		ip := net.ParseIP(h)
		if ip == nil {
			return fmt.Errorf("%q is not an IP address", h)
		}
		h = ip.String()
		if slices.Contains(a.hosts, h) {
			return fmt.Errorf("%s given twice", h)
		}
		a.hosts = append(a.hosts, h)
	}
	return nil
}

// list returns the hosts to listen on.
func (a *addrList) list() []string {
	if len(a.hosts) == 0 {
		return []string{defaultAddr}
	}
	return a.hosts
}

// addrsString lists addresses, comma-separated.
func addrsString(addrs []net.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}
