package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	exportsfile "github.com/go-rpcrdma/rpcrdma/nfs/server/exports"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

func contextWithCause(t *testing.T) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(t.Context())
	t.Cleanup(func() { cancel(nil) })
	return ctx, cancel
}

// exportsServer serves the exports of an exports(5) text, each a fresh
// directory, and returns the flags that reach it.
func exportsServer(t *testing.T, text string) []string {
	tab, err := exportsfile.Parse("exports", []byte(text))
	require.NoError(t, err)
	var exps []server.Export
	for _, e := range tab.Exports {
		d, err := server.DirFS(t.TempDir())
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		h, err := server.NewDirHandler(d, server.DirHandlerOptions{})
		require.NoError(t, err)
		exps = append(exps, server.Export{Path: e.Path, Handler: h, Rules: e.Rules})
	}
	srv, err := server.New(server.Config{Exports: exps, Transport: transport.Config{Provider: &soft.Provider{}},
		RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Rpcbind: server.RpcbindConfig{Disable: true}})
	require.NoError(t, err)
	go func() { _ = srv.Serve(context.Background()) }()
	t.Cleanup(func() { _ = srv.Close() })
	_, port, _ := net.SplitHostPort(srv.RDMAAddr().String())
	return []string{"-provider", "soft", "-server", "127.0.0.1", "-port", port,
		"-mount-addr", srv.TCPAddr().String(), "-timeout", "60s"}
}

// TestExitStatus: each class of failure exits with its own status and a
// one-line message in plain words: 1 local, 2 usage, 3 the server not
// reached, 4 MOUNT refused (named MNT3ERR_*), 5 an NFS status, 128 plus
// the signal's number when interrupted.
func TestExitStatus(t *testing.T) {
	_, flags := testServer(t)
	refused := exportsServer(t, "/x 10.9.9.9(rw,insecure)\n")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := l.Addr().String()
	l.Close()
	missing := filepath.Join(t.TempDir(), "missing")
	local := filepath.Join(t.TempDir(), "local")
	require.NoError(t, os.WriteFile(local, []byte("x"), 0o644))
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		msg    string // stderr, whole
	}{
		{"local", append(flags, "put", missing, "/x"), exitFailure, "rdma-nfs: stat " + missing + ": no such file or directory\n"},
		{"usage", append(flags, "-credits", "-1", "ls"), exitUsage, "rdma-nfs: -credits -1: out of range [1, 16384] (0: 128)\n"},
		{"transport", []string{"-provider", "soft", "-server", "127.0.0.1", "-mount-addr", closedPort, "ls"}, exitTransport, ""},
		{"mount access", append(refused, "-export", "/x", "ls"), exitMount, "rdma-nfs: mount 127.0.0.1:/x: permission denied (MNT3ERR_ACCES)\n"},
		{"mount noent", append(refused, "-export", "/nope", "ls"), exitMount, "rdma-nfs: mount 127.0.0.1:/nope: no such file or directory (MNT3ERR_NOENT)\n"},
		{"nfs", append(flags, "get", "/a/b", t.TempDir()), exitNFS, "rdma-nfs: lstat /a/b: no such file or directory (NFS3ERR_NOENT)\n"},
		{"nfs rm", append(flags, "rm", "/a"), exitNFS, "rdma-nfs: remove /a: no such file or directory (NFS3ERR_NOENT)\n"},
		{"nfs put", append(flags, "put", local, "/nodir/x"), exitNFS, "rdma-nfs: open /nodir/x: no such file or directory (NFS3ERR_NOENT)\n"},
	} {
		var errb bytes.Buffer
		status := mainStatus(t.Context(), tc.args, io.Discard, &errb)
		require.Equal(t, tc.status, status, "%s: %s", tc.name, errb.String())
		if tc.msg != "" {
			require.Equal(t, tc.msg, errb.String(), tc.name)
		} else {
			require.Contains(t, errb.String(), "connection refused", tc.name)
		}
	}

	// Interrupted: the signal's status, whatever the error it caused.
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		ctx, cancel := contextWithCause(t)
		cancel(interrupted{sig})
		var errb bytes.Buffer
		require.Equal(t, want, exitStatus(ctx, context.Cause(ctx), &errb))
		require.Equal(t, "rdma-nfs: "+interrupted{sig}.Error()+"\n", errb.String())
		require.Equal(t, 0, exitStatus(ctx, nil, &errb), "a command that finished despite the signal")
	}
	require.Equal(t, "interrupted (SIGINT)", interrupted{syscall.SIGINT}.Error())
}
