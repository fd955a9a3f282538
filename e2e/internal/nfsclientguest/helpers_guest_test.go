//go:build e2eguest

package nfsclientguest

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
		logKernelTail(t)
	}
	require.NoError(t, err, "mounting %s:%s", serverIP, path)
	t.Cleanup(func() {
		if t.Failed() {
			logKernelTail(t)
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

// pattern returns n pseudo-random bytes that depend on seed.
func pattern(n int, seed uint64) []byte {
	p := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		p[i] = byte(r.Uint32())
	}
	return p
}

// requireData compares data without dumping it.
func requireData(t testing.TB, want, got []byte, msgAndArgs ...any) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	require.Failf(t, "data differ", "want %d bytes, got %d, first difference at %d: %v", len(want), len(got), i,
		msgAndArgs)
}

// logKernelTail logs the end of the kernel log.
func logKernelTail(t testing.TB) {
	out, _ := exec.Command("dmesg").CombinedOutput()
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	t.Logf("dmesg | tail -n 30:\n%s", strings.Join(lines[max(0, len(lines)-30):], "\n"))
}

// execCommand runs a shell command, returning its error.
func execCommand(cmd string) error { return exec.Command("sh", "-c", cmd).Run() }

// sh runs a shell command in the guest.
func sh(t testing.TB, cmd string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
	require.NoError(t, err, "%s: %s", cmd, out)
	return string(out)
}
