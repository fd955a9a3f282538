package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/nfstest"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// The tests that drive the server with the Go client (package client)
// through its exported API, as those of package client drive it.

// clientGuard bounds each call of the Go client, so that a bug fails the
// test instead of hanging it.
const clientGuard = nfstest.Guard

// clientEnv is a Server on the soft provider with its export mounted by
// the Go client.
type clientEnv struct {
	dir string // the exported directory
	srv *server.Server
	exp *client.Export
}

// startClientEnv exports a fresh temporary directory and mounts it
// (nfstest.Start); tweak adjusts the server's and the client's
// configuration.
func startClientEnv(t testing.TB, tweak func(*server.Config, *client.MountOptions)) *clientEnv {
	t.Helper()
	e := nfstest.Start(t, tweak)
	return &clientEnv{dir: e.Dir, srv: e.Srv, exp: e.Exp}
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
