package nfs

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
)

// DialReserved dials addr over TCP; as root, from a reserved port (below
// 1024), which rpcbind requires of SET and UNSET from a loopback address
// unless it runs insecure (-i), and mountd and knfsd's exports of MOUNT
// and NFS calls unless an export is "insecure".
func DialReserved(ctx context.Context, addr string) (net.Conn, error) {
	if os.Geteuid() == 0 {
		for range 8 {
			d := net.Dialer{LocalAddr: &net.TCPAddr{Port: 600 + rand.IntN(424)}}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				return c, nil
			}
			var se *os.SyscallError
			if !errors.As(err, &se) || se.Syscall != "bind" {
				return nil, err
			}
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
