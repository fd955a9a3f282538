package client_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/nfstest"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
)

// clientGuard bounds each client test's calls, so that a bug fails the
// test instead of hanging it.
const clientGuard = nfstest.Guard

// clientEnv is a Server on the soft provider with its export mounted by
// the Go client.
type clientEnv struct {
	dir string // the exported directory
	srv *server.Server
	exp *client.Export
	ctx context.Context
}

// startClientEnv exports a fresh temporary directory and mounts it
// (nfstest.Start); tweak adjusts the server's and the client's
// configuration.
func startClientEnv(t testing.TB, tweak func(*server.Config, *client.MountOptions)) *clientEnv {
	t.Helper()
	e := nfstest.Start(t, tweak)
	return &clientEnv{dir: e.Dir, srv: e.Srv, exp: e.Exp, ctx: t.Context()}
}

// mountExport mounts srv's root with the Go client over soft.
func mountExport(t testing.TB, srv *server.Server, opt client.MountOptions) *client.Export {
	return nfstest.Mount(t, srv, opt)
}

// callCtx bounds one test call.
func callCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), clientGuard)
	t.Cleanup(cancel)
	return ctx
}

// pattern returns n bytes that differ with seed and position.
func pattern(n int, seed byte) []byte { return nfstest.Pattern(n, seed) }

// path returns name's path in the exported directory.
func (e *clientEnv) path(name string) string { return filepath.Join(e.dir, filepath.FromSlash(name)) }

// stats returns the client connection's counters.
func (e *clientEnv) stats() transport.Stats { return e.exp.Client.Conn().Stats() }
