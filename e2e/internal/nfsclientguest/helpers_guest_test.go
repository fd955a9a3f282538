//go:build e2eguest

package nfsclientguest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// The VM's addresses (e2e/README.md) and knfsd's export.
const (
	serverIP   = "10.0.0.1"
	clientIP   = "10.0.0.2"
	exportPath = "/export"
)

// ioGuard bounds each test's calls: a hang fails the test instead of the
// VM's timeout.
const ioGuard = 3 * time.Minute

// mount mounts knfsd's export with the Go client; tweak adjusts its
// configuration (the provider is set here).
func mount(t testing.TB, tweak func(*client.MountOptions)) *client.Export {
	t.Helper()
	return mountAt(t, exportPath, tweak)
}

// mountAt mounts the export at path of 10.0.0.1.
func mountAt(t testing.TB, path string, tweak func(*client.MountOptions)) *client.Export {
	t.Helper()
	opt := client.MountOptions{Client: client.Config{
		Transport: transport.Config{Provider: &rdmacore.Provider{LocalAddr: clientIP}},
	}}
	if tweak != nil {
		tweak(&opt)
	}
	opt.Client.Transport.Provider = &rdmacore.Provider{LocalAddr: clientIP}
	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	defer cancel()
	exp, err := client.Mount(ctx, serverIP, path, &opt)
	if err != nil {
		guesttest.LogKernelTail(t, 30)
	}
	require.NoError(t, err, "mounting %s:%s", serverIP, path)
	t.Cleanup(func() {
		if t.Failed() {
			guesttest.LogKernelTail(t, 30)
		}
		_ = exp.Close()
	})
	return exp
}

// testCtx bounds one test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	t.Cleanup(cancel)
	return ctx
}

// scratch makes a fresh directory in the export for one test, through the
// guest's file system, and returns its name in the export and its path.
func scratch(t testing.TB, name string) (string, string) {
	return scratchIn(t, exportPath, name)
}

// scratchIn is scratch in the exported directory root.
func scratchIn(t testing.TB, root, name string) (string, string) {
	p := root + "/" + name
	require.NoError(t, os.RemoveAll(p))
	require.NoError(t, os.Mkdir(p, 0o777))
	t.Cleanup(func() { _ = os.RemoveAll(p) })
	return name, p
}
