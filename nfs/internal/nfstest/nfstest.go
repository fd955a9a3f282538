// Package nfstest runs an NFS server of package nfs/server on the soft
// provider over loopback and mounts it with the Go client of package
// nfs/client, for the tests of both packages (as net/http/httptest serves
// net/http's). Only tests import it: a program that links the client does
// not link the server through it.
package nfstest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// Guard bounds each call a test makes through the client, so that a bug
// fails the test instead of hanging it.
const Guard = 60 * time.Second

// Version2 is set by RPCRDMA_TEST_VERSION2=1 (make unit runs the NFS
// packages' tests once more with it): every server Serve starts accepts
// RPC-over-RDMA version 2 and every client Mount makes offers it, so that
// the suites run over version 2 (docs/v2.md); Mount checks that it did.
var Version2 = os.Getenv("RPCRDMA_TEST_VERSION2") == "1"

// served holds the servers Serve started, which accept version 2 when
// Version2 is set (a test's own server may not).
var served sync.Map

// Env is a Server on the soft provider exporting a fresh temporary
// directory, mounted by the Go client.
type Env struct {
	Dir string // the exported directory
	Srv *server.Server
	Exp *client.Export
}

// Start exports a fresh temporary directory (server.DirFS and a
// DirHandler, as cmd/rdma-nfsd does) and mounts it; tweak, if not nil,
// adjusts the server's and the client's configuration first.
func Start(t testing.TB, tweak func(*server.Config, *client.MountOptions)) *Env {
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
	srv := Serve(t, scfg)
	return &Env{Dir: dir, Srv: srv, Exp: Mount(t, srv, mopt)}
}

// Path returns name's path (slash-separated) in the exported directory.
func (e *Env) Path(name string) string { return filepath.Join(e.Dir, filepath.FromSlash(name)) }

// Serve serves cfg on the soft provider and loopback TCP (ports chosen by
// the kernel unless cfg names them), without rpcbind unless cfg
// configures it, until the test ends. The tests run as root: root_squash,
// the zero Squash, is kept only if cfg sets AnonUID; otherwise root's
// calls run as root (no_root_squash).
func Serve(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	cfg.Transport.Provider = &soft.Provider{}
	if Version2 {
		cfg.Transport.AcceptVersion2 = true
	}
	if cfg.RDMAAddr == "" {
		cfg.RDMAAddr = "127.0.0.1:0"
	}
	if cfg.TCPAddr == "" {
		cfg.TCPAddr = "127.0.0.1:0"
	}
	if cfg.Squash == server.RootSquash && cfg.AnonUID == 0 {
		cfg.Squash = server.NoRootSquash
	}
	if cfg.Rpcbind == (server.RpcbindConfig{}) {
		cfg.Rpcbind.Disable = true
	}
	srv, err := server.New(cfg)
	require.NoError(t, err)
	served.Store(srv, true)
	t.Cleanup(func() { served.Delete(srv) })
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, server.ErrClosed)
	})
	return srv
}

// Mount mounts srv's root with the Go client over soft (opt's own
// provider if it names one: a test that counts its registered memory)
// until the test ends.
func Mount(t testing.TB, srv *server.Server, opt client.MountOptions) *client.Export {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Guard)
	defer cancel()
	if opt.Client.Transport.Provider == nil {
		opt.Client.Transport.Provider = &soft.Provider{}
	}
	_, port, err := net.SplitHostPort(srv.RDMAAddr().String())
	require.NoError(t, err)
	opt.RDMAPort, err = strconv.Atoi(port)
	require.NoError(t, err)
	opt.MountAddr = srv.TCPAddr().String()
	if Version2 {
		opt.Client.Transport.OfferVersion2 = true
	}
	exp, err := client.Mount(ctx, "127.0.0.1", "/", &opt)
	require.NoError(t, err)
	if _, ours := served.Load(srv); Version2 && ours {
		require.EqualValues(t, 2, exp.Client.Conn().Stats().Negotiated.Version, "RPCRDMA_TEST_VERSION2: the mount runs version 2")
	}
	t.Cleanup(func() { _ = exp.Close() })
	return exp
}

// Pattern returns n bytes that differ with seed and position.
func Pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}
