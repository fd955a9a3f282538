package server_test

import (
	"encoding/binary"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/stretchr/testify/require"
)

// TestServerDirHandlerAccess sends ACCESS as the Linux client does, the
// handle with its XDR padding, to a DirHandler: the reply must grant the
// mask asked for. With 38-byte handles go-nfs read the mask from the pad
// bytes and granted nothing (the kernel's mount of rdma-nfsd said
// "Permission denied" to root for everything).
func TestServerDirHandlerAccess(t *testing.T) {
	d, err := server.DirFS(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	h, err := server.NewDirHandler(d, server.DirHandlerOptions{})
	require.NoError(t, err)
	srv := startServer(t, server.Config{Handler: h, NFSOverTCP: true})
	root := mountRoot(t, srv)
	require.Zero(t, len(root.Data)%4, "root handle of %d bytes", len(root.Data))
	args := binary.BigEndian.AppendUint32(nil, uint32(len(root.Data)))
	args = append(args, root.Data...)
	args = append(args, make([]byte, -len(args)&3)...)
	const mask = 0x1f // READ LOOKUP MODIFY EXTEND DELETE
	args = binary.BigEndian.AppendUint32(args, mask)
	rh, res := call(t, dialTCP(t, srv.TCPAddr()), 7, nfs.ProgNFS, 3, nfs.ProcAccess, args)
	require.Equal(t, "SUCCESS", rh.AcceptStat.String())
	require.GreaterOrEqual(t, len(res), 8)
	require.Zero(t, binary.BigEndian.Uint32(res), "ACCESS status")
	require.EqualValues(t, mask, binary.BigEndian.Uint32(res[len(res)-4:]), "access granted")
}
