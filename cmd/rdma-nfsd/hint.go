package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/nfs"
)

// clientHint is the command line that mounts export from the server
// listening at rdma (NFS over RDMA) and tcp (MOUNT), logged at startup.
// With the soft provider (RDMA emulated over TCP, which only the Go
// client speaks) it is rdma-nfs's, which sends MOUNT over the RDMA
// connection when no portmapper answers; with rdmacore the kernel's
// mount, with mountport= and mountproto=tcp (MOUNT is never carried over
// RDMA by the kernel) so that it needs no rpcbind either. Both work
// under secure, the exports(5) default: MOUNT over RDMA counts as from a
// privileged port, and mount.nfs sends it over TCP from one.
func clientHint(provider string, rdma, tcp net.Addr, export string) string {
	rdmaHost, rdmaPort := hostPort(rdma)
	_, tcpPort := hostPort(tcp)
	if provider == "soft" {
		if rdmaHost == "" {
			rdmaHost = "127.0.0.1"
		}
		cmd := "rdma-nfs -provider soft -server " + rdmaHost
		if rdmaPort != nfs.DefaultRDMAPort {
			cmd += " -port " + strconv.Itoa(rdmaPort)
		}
		if export != "/" {
			cmd += " -export " + export
		}
		return cmd + " ls /"
	}
	if rdmaHost == "" {
		rdmaHost = "SERVER"
	} else if strings.Contains(rdmaHost, ":") {
		rdmaHost = "[" + rdmaHost + "]"
	}
	return fmt.Sprintf("mount -t nfs -o vers=3,proto=rdma,port=%d,mountport=%d,mountproto=tcp %s:%s /mnt", rdmaPort, tcpPort, rdmaHost, export)
}

// hostPort returns a listener's host ("" for a wildcard) and port.
func hostPort(a net.Addr) (string, int) {
	h, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return "", 0
	}
	port, _ := strconv.Atoi(p)
	if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
		h = ""
	}
	return h, port
}
