//go:build e2eguest

package knfsdclient_test

import (
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/mount"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/require"
)

// Port mapper version 2 (RFC 1833 §3): PMAPPROC_GETPORT maps a program,
// version and protocol to a port.
const (
	pmapProg        = 100000
	pmapVers        = 2
	pmapProcGetport = 3
	ipprotoTCP      = 6

	mountProg    = mount.MOUNT_PROGRAM_PROGRAM_NUMBER // 100005
	mountVers    = 3
	mountProcMnt = 1
)

// dialTCP connects to addr over TCP with the I/O guard as deadline.
func dialTCP(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioGuard)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(ioGuard)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// getport asks rpcbind on host (port 111) for the TCP port of prog/vers.
func getport(t testing.TB, host string, prog, vers uint32) int {
	t.Helper()
	rc := newTCPClient(dialTCP(t, net.JoinHostPort(host, "111")))
	var args []byte
	for _, v := range []uint32{prog, vers, ipprotoTCP, 0} {
		args = xdr.AppendUint32(args, v)
	}
	res, err := io.ReadAll(rc.call(t, pmapProg, pmapVers, pmapProcGetport, rawArgs(args)))
	require.NoError(t, err)
	r := xdr.NewReader(res)
	port, err := r.Uint32()
	require.NoError(t, err, "GETPORT result")
	require.Zero(t, r.Len(), "bytes after the GETPORT result")
	require.NotZero(t, port, "program %d version %d is not registered with rpcbind", prog, vers)
	require.Less(t, port, uint32(1<<16))
	return int(port)
}

// mountRoot returns the root file handle of host's export path from the
// kernel's mountd: MOUNTPROC3_MNT over TCP (RFC 1813 §5.2.1), at the port
// rpcbind gives. The export (rxevm's /etc/exports) allows AUTH_SYS.
func mountRoot(t testing.TB, host, path string) []byte {
	t.Helper()
	port := getport(t, host, mountProg, mountVers)
	rc := newTCPClient(dialTCP(t, net.JoinHostPort(host, strconv.Itoa(port))))
	args := writerFunc(func(w io.Writer) (int64, error) { return mount.WriteDirpath(w, path) })
	res := decode(t, rc.call(t, mountProg, mountVers, mountProcMnt, args), mount.ReadMountres3)
	ok, isOK := res.(*mount.Mountres3_MNT3_OK)
	require.True(t, isOK, "MNT %s: status %v", path, res.GetFhsStatus())
	require.NotEmpty(t, ok.Mountinfo.Fhandle, "MNT %s: file handle", path)
	t.Logf("MNT %s:%s (mountd on TCP port %d): root file handle %x, auth flavors %v", host, path, port, ok.Mountinfo.Fhandle, ok.Mountinfo.AuthFlavors)
	return ok.Mountinfo.Fhandle
}

// writerFunc adapts an encoding function to io.WriterTo.
type writerFunc func(io.Writer) (int64, error)

func (f writerFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }
