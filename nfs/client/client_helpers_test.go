package client_test

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// clientGuard bounds each client test's calls, so that a bug fails the
// test instead of hanging it.
const clientGuard = 60 * time.Second

// clientEnv is a Server on the soft provider with its export mounted by
// the Go client.
type clientEnv struct {
	dir string // the exported directory
	srv *server.Server
	exp *client.Export
	ctx context.Context
}

// startClientEnv exports a fresh temporary directory (server.DirFS and
// DirHandler, as cmd/rdma-nfsd) and mounts it; tweak adjusts the server's
// and the client's configuration.
func startClientEnv(t testing.TB, tweak func(*server.Config, *client.MountOptions)) *clientEnv {
	t.Helper()
	dir := t.TempDir()
	d, err := server.DirFS(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	h, err := server.NewDirHandler(d, server.DirHandlerOptions{})
	require.NoError(t, err)
	scfg := server.Config{Handler: h}
	var mopt client.MountOptions
	if tweak != nil {
		tweak(&scfg, &mopt)
	}
	srv := startClientServer(t, scfg)
	return &clientEnv{dir: dir, srv: srv, exp: mountExport(t, srv, mopt), ctx: t.Context()}
}

// startClientServer serves cfg on the soft provider and loopback TCP,
// without rpcbind.
func startClientServer(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	cfg.Transport.Provider = &soft.Provider{}
	cfg.RDMAAddr, cfg.TCPAddr = "127.0.0.1:0", "127.0.0.1:0"
	if cfg.Squash == server.RootSquash && cfg.AnonUID == 0 {
		cfg.Squash = server.NoRootSquash // the tests run as root; squashing tests set AnonUID
	}
	cfg.Rpcbind.Disable = true
	srv, err := server.New(cfg)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, server.ErrClosed)
	})
	return srv
}

// mountExport mounts srv's root with the Go client over soft.
func mountExport(t testing.TB, srv *server.Server, opt client.MountOptions) *client.Export {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientGuard)
	defer cancel()
	opt.Client.Transport.Provider = &soft.Provider{}
	_, port, err := net.SplitHostPort(srv.RDMAAddr().String())
	require.NoError(t, err)
	opt.RDMAPort, err = strconv.Atoi(port)
	require.NoError(t, err)
	opt.MountAddr = srv.TCPAddr().String()
	exp, err := client.Mount(ctx, "127.0.0.1", "/", &opt)
	require.NoError(t, err)
	t.Cleanup(func() { _ = exp.Close() })
	return exp
}

// callCtx bounds one test call.
func callCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), clientGuard)
	t.Cleanup(cancel)
	return ctx
}

// pattern returns n bytes that differ with seed and position.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

// path returns name's path in the exported directory.
func (e *clientEnv) path(name string) string { return filepath.Join(e.dir, filepath.FromSlash(name)) }

// stats returns the client connection's counters.
func (e *clientEnv) stats() transport.Stats { return e.exp.Client.Conn().Stats() }
