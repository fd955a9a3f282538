package client_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// fakeMountd serves, on one TCP listener, a portmapper that maps MOUNT
// version 3 to the listener's own port (PMAPPROC_GETPORT, RFC 1833) and a
// mountd that answers MNT with a fixed handle, EXPORT with two exports and
// UMNT; it records the procedures it was called with.
func fakeMountd(t *testing.T) (addr string, calls chan string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	_, port, _ := net.SplitHostPort(l.Addr().String())
	p, _ := strconv.Atoi(port)
	calls = make(chan string, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					msg, err := xdr.ReadRecord(c, nil, 1<<16)
					if err != nil {
						return
					}
					var h xdr.CallHeader
					off, err := h.Unmarshal(msg)
					if err != nil {
						return
					}
					calls <- nfs.ProcName(h.Prog, h.Vers, h.Proc)
					rh := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
					res := rh.Append(nil)
					switch {
					case h.Prog == nfs.ProgPortmap && h.Proc == 3:
						r := xdr.NewReader(msg[off:])
						prog, _ := r.Uint32()
						vers, _ := r.Uint32()
						port := uint32(0)
						if prog == nfs.ProgMount && vers == 3 {
							port = uint32(p)
						}
						res = xdr.AppendUint32(res, port)
					case h.Prog == nfs.ProgMount && h.Proc == nfs.MountProcMnt:
						res = xdr.AppendUint32(res, 0)
						res = xdr.AppendOpaque(res, []byte("root-handle"))
						res = xdr.AppendUint32(res, 1)
						res = xdr.AppendUint32(res, uint32(xdr.FlavorSys))
					case h.Prog == nfs.ProgMount && h.Proc == nfs.MountProcExport:
						for _, e := range []struct {
							dir    string
							groups []string
						}{{"/export", []string{"10.0.0.0/24", "*.lab"}}, {"/pub", nil}} {
							res = xdr.AppendBool(res, true)
							res = xdr.AppendString(res, e.dir)
							for _, g := range e.groups {
								res = xdr.AppendBool(res, true)
								res = xdr.AppendString(res, g)
							}
							res = xdr.AppendBool(res, false)
						}
						res = xdr.AppendBool(res, false)
					}
					if _, err := c.Write(xdr.AppendRecord(nil, res, 0)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String(), calls
}

// TestMountClientPortmap finds mountd through the portmapper (GETPORT),
// then decodes MNT, EXPORT and UMNT.
func TestMountClientPortmap(t *testing.T) {
	addr, calls := fakeMountd(t)
	ctx := callCtx(t)
	port, err := client.GetPort(ctx, addr, nfs.ProgMount, 3)
	require.NoError(t, err)
	require.Equal(t, addr, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.Equal(t, "prog 100000 v2 proc 3", <-calls)
	_, err = client.GetPort(ctx, addr, nfs.ProgNLM, 4)
	require.ErrorContains(t, err, "not registered")
	<-calls

	mc, err := client.DialMount(ctx, addr, nil)
	require.NoError(t, err)
	defer mc.Close()
	fh, flavors, err := mc.Mnt(ctx, "/export")
	require.NoError(t, err)
	require.Equal(t, "MOUNT3 MNT", <-calls)
	require.Equal(t, client.FH("root-handle"), fh)
	require.Equal(t, []xdr.AuthFlavor{xdr.FlavorSys}, flavors)
	exports, err := mc.Export(ctx)
	require.NoError(t, err)
	require.Equal(t, "MOUNT3 EXPORT", <-calls)
	require.Equal(t, []client.ExportEntry{{Dir: "/export", Groups: []string{"10.0.0.0/24", "*.lab"}}, {Dir: "/pub"}}, exports)
	require.NoError(t, mc.Umnt(ctx, "/export"))
	require.Equal(t, "MOUNT3 UMNT", <-calls)
}
