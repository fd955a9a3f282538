package client_test

import (
	"bytes"
	"context"

	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// connTracker records a Server's RDMA connections and can drop them.
type connTracker struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (ct *connTracker) onConn(network string, c net.Conn) {
	if network != server.NetRDMA {
		return
	}
	ct.mu.Lock()
	ct.conns = append(ct.conns, c)
	ct.mu.Unlock()
}

// dropAll closes the server's side of every RDMA connection.
func (ct *connTracker) dropAll() int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	for _, c := range ct.conns {
		_ = c.Close()
	}
	n := len(ct.conns)
	ct.conns = nil
	return n
}

// TestClientReconnectMidTransfer drops the server's connection in the
// middle of an 8 MiB write and of an 8 MiB read: the client reconnects,
// resends the calls in flight with their XIDs, and both transfers complete
// intact.
func TestClientReconnectMidTransfer(t *testing.T) {
	var ct connTracker
	var writes, reads atomic.Int64
	env := startClientEnv(t, func(s *server.Config, o *client.MountOptions) {
		s.OnConn = ct.onConn
		s.OnCall = func(_ string, h *xdr.CallHeader) {
			switch {
			case h.Prog == nfs.ProgNFS && h.Proc == nfs.ProcWrite && writes.Add(1) == 3,
				h.Prog == nfs.ProgNFS && h.Proc == nfs.ProcRead && reads.Add(1) == 3:
				go ct.dropAll()
			}
		}
		o.Client.WSize, o.Client.RSize = 256<<10, 256<<10
		// A retransmission that reaches the server while the first
		// transmission still executes is dropped by its duplicate
		// request cache (as knfsd's), and the reply goes to the dead
		// connection: the call timeout, as the Linux client's timeo,
		// sends it once more.
		o.Client.Transport.Reconnect = transport.ReconnectPolicy{Enabled: true, Retransmit: true, CallTimeout: 2 * time.Second}
	})
	ctx := callCtx(t)
	data := pattern(8<<20, 9)
	f, err := env.exp.Create(ctx, "big")
	require.NoError(t, err)
	_, err = io.Copy(f, bytes.NewReader(data))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	disk, err := os.ReadFile(env.path("big"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, disk), "written file differs")
	afterWrite := env.stats().Reconnects
	require.GreaterOrEqual(t, afterWrite, uint64(1), "no reconnection during the write")

	f, err = env.exp.Open(ctx, "big")
	require.NoError(t, err)
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.True(t, bytes.Equal(data, got), "read file differs")
	require.Greater(t, env.stats().Reconnects, afterWrite, "no reconnection during the read")
	t.Logf("reconnects %d, call timeouts %d, WRITE calls seen by the server %d (32 + resent), READs %d", env.stats().Reconnects, env.stats().CallTimeouts, writes.Load(), reads.Load())
}

// blockFirst returns an OnCall that blocks the first call of proc until
// release is closed, reporting its XID on started, and records the XIDs
// of every call of proc.
func blockFirst(proc uint32, started chan<- uint32, release <-chan struct{}, xids *[]uint32, mu *sync.Mutex) func(string, *xdr.CallHeader) {
	var n atomic.Int64
	return func(_ string, h *xdr.CallHeader) {
		if h.Prog != nfs.ProgNFS || h.Proc != proc {
			return
		}
		mu.Lock()
		*xids = append(*xids, h.XID)
		mu.Unlock()
		if n.Add(1) == 1 {
			started <- h.XID
			<-release
		}
	}
}

// TestClientCallLost: without retransmission, a call in flight when the
// connection drops fails with an error wrapping client.ErrCallLost and
// transport.ErrCallLost (its outcome is unknown); with retransmission
// (the default), it is sent again with the same XID and succeeds.
func TestClientCallLost(t *testing.T) {
	for _, retransmit := range []bool{false, true} {
		t.Run(map[bool]string{false: "no-retransmit", true: "retransmit"}[retransmit], func(t *testing.T) {
			var ct connTracker
			var mu sync.Mutex
			var xids []uint32
			started := make(chan uint32, 1)
			release := make(chan struct{})
			env := startClientEnv(t, func(s *server.Config, o *client.MountOptions) {
				s.OnConn = ct.onConn
				s.OnCall = blockFirst(nfs.ProcGetattr, started, release, &xids, &mu)
				if !retransmit {
					o.Client.Transport.Reconnect = transport.ReconnectPolicy{Enabled: true, Retransmit: false}
				}
			})
			ctx := callCtx(t)
			done := make(chan error, 1)
			go func() {
				_, err := env.exp.Client.Getattr(ctx, env.exp.Root)
				done <- err
			}()
			xid := <-started
			require.Equal(t, 1, ct.dropAll())
			close(release)
			err := <-done
			if !retransmit {
				require.ErrorIs(t, err, client.ErrCallLost)
				require.ErrorIs(t, err, transport.ErrCallLost)
				// The client goes on over a new connection.
				_, err = env.exp.Client.Getattr(ctx, env.exp.Root)
				require.NoError(t, err)
				return
			}
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			require.GreaterOrEqual(t, len(xids), 2)
			require.Equal(t, xid, xids[1], "the retransmission has another XID")
		})
	}
}

// TestClientVerifierChange restarts the server (a new write verifier)
// between a File's UNSTABLE WRITEs and its COMMIT: Close sees COMMIT's
// verifier differ, resends every WRITE FILE_SYNC, and the file is intact.
func TestClientVerifierChange(t *testing.T) {
	dir := t.TempDir()
	start := func(rdmaAddr string) *server.Server {
		d, err := server.DirFS(dir)
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		h, err := server.NewDirHandler(d, server.DirHandlerOptions{})
		require.NoError(t, err)
		srv, err := server.New(server.Config{Handler: h, Transport: transport.Config{Provider: &soft.Provider{}},
			RDMAAddr: rdmaAddr, TCPAddr: "127.0.0.1:0", Rpcbind: server.RpcbindConfig{Disable: true}, Squash: server.NoRootSquash})
		require.NoError(t, err)
		go func() { _ = srv.Serve(context.Background()) }()
		return srv
	}
	srv1 := start("127.0.0.1:0")
	exp := mountExport(t, srv1, client.MountOptions{Client: client.Config{WSize: 1 << 20}})
	ctx := callCtx(t)
	data := pattern(4<<20+100, 4)
	f, err := exp.Create(ctx, "v")
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	_, err = f.Stat() // waits for the WRITEs, not COMMIT
	require.NoError(t, err)

	addr := srv1.RDMAAddr().String()
	verf1 := srv1.WriteVerifier()
	require.NoError(t, srv1.Close())
	var srv2 *server.Server
	require.Eventually(t, func() bool {
		defer func() { _ = recover() }()
		srv2 = start(addr)
		return true
	}, 10*time.Second, 100*time.Millisecond)
	defer srv2.Close()
	require.NotEqual(t, verf1, srv2.WriteVerifier())

	require.NoError(t, f.Close())
	require.Equal(t, int64(5), f.Resends(), "WRITEs resent after the verifier changed")
	disk, err := os.ReadFile(dir + "/v")
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, disk))
	require.GreaterOrEqual(t, exp.Client.Conn().Stats().Reconnects, uint64(1))
}
