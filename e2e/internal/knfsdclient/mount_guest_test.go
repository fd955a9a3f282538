//go:build e2eguest

package knfsdclient_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// mountRoot returns the root file handle of host's export path from the
// kernel's mountd: MOUNTPROC3_MNT over TCP (RFC 1813 §5.2.1) by package
// nfs's MOUNT client, at the port rpcbind gives (PMAPPROC_GETPORT). The
// export (rxevm's /etc/exports) allows AUTH_SYS.
func mountRoot(t testing.TB, host, path string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	defer cancel()
	port, err := client.GetPort(ctx, host, nfs.ProgMount, 3)
	require.NoError(t, err, "GETPORT of MOUNT v3")
	mc, err := client.DialMount(ctx, host, nil)
	require.NoError(t, err)
	defer mc.Close()
	fh, flavors, err := mc.Mnt(ctx, path)
	require.NoError(t, err, "MNT %s", path)
	require.NotEmpty(t, fh, "MNT %s: file handle", path)
	t.Logf("MNT %s:%s (mountd on TCP port %d): root file handle %x, auth flavors %v", host, path, port, []byte(fh), flavors)
	return fh
}
