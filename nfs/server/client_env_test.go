package server_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// The tests that drive the server with the Go client (package client)
// through its exported API, as those of package client drive it.

// clientGuard bounds each call of the Go client, so that a bug fails the
// test instead of hanging it.
const clientGuard = 60 * time.Second

// clientEnv is a Server on the soft provider with its export mounted by
// the Go client.
type clientEnv struct {
	dir string // the exported directory
	srv *server.Server
	exp *client.Export
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
	srv := startServer(t, scfg)
	return &clientEnv{dir: dir, srv: srv, exp: mountExport(t, srv, mopt)}
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

// patternFile writes size bytes of pattern(size, seed) to name in the
// exported directory and returns them with the file's handle, looked up
// by the client.
func (e *clientEnv) patternFile(t testing.TB, name string, size int, seed byte) ([]byte, client.FH) {
	t.Helper()
	data := pattern(size, seed)
	require.NoError(t, os.WriteFile(e.path(name), data, 0o644))
	fh, _, err := e.exp.Lookup(callCtx(t), name, true)
	require.NoError(t, err)
	return data, fh
}
