package client_test

import (
	"context"
	"io"
	"io/fs"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/nfstest"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
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

// silentServer accepts TCP connections and reads them, never answering:
// a port whose service hangs. It returns its address.
func silentServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	return l.Addr().String()
}

// refusedPort returns a loopback port nothing listens on.
func refusedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// TestMountTimeout: a portmapper or MOUNT server that accepts and never
// answers fails the call after the timeout, by default
// DefaultMountTimeout (10 s), instead of holding it; a negative timeout
// leaves the bound to ctx.
func TestMountTimeout(t *testing.T) {
	silent := silentServer(t)
	_, sport, _ := net.SplitHostPort(silent)
	silentPort, _ := strconv.Atoi(sport)

	// The default, with a ctx that has no deadline.
	start := time.Now()
	_, err := client.GetPort(context.Background(), silent, nfs.ProgMount, 3)
	took := time.Since(start)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "GETPORT: no reply within 10s")
	require.GreaterOrEqual(t, took, client.DefaultMountTimeout)
	require.Less(t, took, client.DefaultMountTimeout+5*time.Second)

	// MountClient.Timeout bounds each call.
	mc, err := client.DialMount(context.Background(), silent, nil)
	require.NoError(t, err)
	defer mc.Close()
	mc.Timeout = 200 * time.Millisecond
	start = time.Now()
	_, _, err = mc.Mnt(context.Background(), "/")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.EqualError(t, err, "nfs: mount "+silent+": MOUNT3 MNT: no reply within 200ms: context deadline exceeded")
	require.Less(t, time.Since(start), 5*time.Second)

	// Mount: MNT at MountAddr, and GETPORT of the portmapper.
	softCfg := client.Config{Transport: transport.Config{Provider: &soft.Provider{}}}
	_, err = client.Mount(context.Background(), "127.0.0.1", "/", &client.MountOptions{Client: softCfg,
		MountAddr: silent, MountTimeout: 300 * time.Millisecond})
	require.ErrorContains(t, err, "MOUNT3 MNT: no reply within 300ms")
	defer client.SetPortmapPort(silentPort)()
	_, err = client.Mount(context.Background(), "127.0.0.1", "/", &client.MountOptions{Client: softCfg,
		RDMAPort: refusedPort(t), MountTimeout: 300 * time.Millisecond})
	require.ErrorContains(t, err, "GETPORT: no reply within 300ms", "then NFS over RDMA, refused")
	require.ErrorIs(t, err, syscall.ECONNREFUSED)

	// Negative: ctx alone bounds the call.
	mc.Timeout = -1
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err = mc.Mnt(ctx, "/")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotContains(t, err.Error(), "no reply within")
}

// TestMountOverRDMA: with no portmapper on the server host (refused, or
// silent past MountTimeout), Mount sends MNT over the RPC-over-RDMA
// connection, as rdma-nfsd serves it, and Close's UMNT too; Exports
// lists the exports the same way.
func TestMountOverRDMA(t *testing.T) {
	env := nfstest.Start(t, nil)
	require.NoError(t, os.WriteFile(env.Path("f"), []byte("over rdma"), 0o644))
	_, port, _ := net.SplitHostPort(env.Srv.RDMAAddr().String())
	rdmaPort, _ := strconv.Atoi(port)
	_, sport, _ := net.SplitHostPort(silentServer(t))
	silentPort, _ := strconv.Atoi(sport)
	for name, pm := range map[string]int{"refused": refusedPort(t), "silent": silentPort} {
		restore := client.SetPortmapPort(pm)
		opt := &client.MountOptions{Client: client.Config{Transport: transport.Config{Provider: &soft.Provider{}}},
			RDMAPort: rdmaPort, MountTimeout: 300 * time.Millisecond}
		ctx := callCtx(t)
		exp, err := client.Mount(ctx, "127.0.0.1", "/", opt)
		require.NoError(t, err, name)
		got, err := fs.ReadFile(exp.FS(ctx), "f")
		require.NoError(t, err, name)
		require.Equal(t, "over rdma", string(got), name)
		require.NoError(t, exp.Close(), name)

		list, err := client.Exports(ctx, "127.0.0.1", opt)
		require.NoError(t, err, name)
		require.Equal(t, []client.ExportEntry{{Dir: "/"}}, list, name)

		_, err = client.Mount(ctx, "127.0.0.1", "/nowhere", opt)
		var ne *client.Error
		require.ErrorAs(t, err, &ne, name)
		require.ErrorContains(t, err, "MOUNT3 MNT /nowhere", name)
		restore()
	}
}
