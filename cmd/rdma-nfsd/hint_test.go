package main

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// TestQuickStart: rdma-nfsd on the soft provider with its defaults (but
// a port of its own) logs the rdma-nfs command that mounts it, not the
// kernel's mount options, and a client with its defaults (no MOUNT
// address) mounts it: through the portmapper if one runs, over the RDMA
// connection otherwise.
func TestQuickStart(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello"), []byte("hello"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, logs, done := startRun(t, ctx, "-provider", "soft", "-dir", dir, "-rdma-port", "0", "-squash", "no_root_squash")
	_, port, _ := net.SplitHostPort(srv.RDMAAddr().String())
	waitFor(t, "the hint", func() bool { return regexp.MustCompile(`mount with" command=`).MatchString(logs.String()) })
	require.Contains(t, logs.String(), `msg="rdma-nfsd: mount with" command="rdma-nfs -provider soft -server 127.0.0.1 -port `+port+` ls /"`)
	require.NotContains(t, logs.String(), "mountport", "the kernel cannot mount a soft server")

	p, _ := strconv.Atoi(port)
	exp, err := client.Mount(ctx, "127.0.0.1", "/", &client.MountOptions{RDMAPort: p,
		Client: client.Config{Transport: transport.Config{Provider: &soft.Provider{}}}})
	require.NoError(t, err, logs.String())
	got, err := fs.ReadFile(exp.FS(ctx), "hello")
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))
	require.NoError(t, exp.Close())
	cancel()
	require.NoError(t, <-done)
}

// TestQuickStartExports: with an exports file whose rule says nothing of
// ports (secure, the default) and no portmapper, the command rdma-nfsd
// logs works: rdma-nfs sends MOUNT over its RDMA connection, from a port
// above 1024, which counts as privileged as every call over RDMA does.
func TestQuickStartExports(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello"), []byte("hello"), 0o644))
	file := filepath.Join(t.TempDir(), "exports")
	require.NoError(t, os.WriteFile(file, []byte(dir+" 127.0.0.1(rw)\n"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, logs, done := startRun(t, ctx, "-provider", "soft", "-exports", file, "-rdma-port", "0", "-rpcbind=false")
	_, port, _ := net.SplitHostPort(srv.RDMAAddr().String())
	waitFor(t, "the hint", func() bool { return regexp.MustCompile(`mount with" command=`).MatchString(logs.String()) })
	require.Contains(t, logs.String(), `command="rdma-nfs -provider soft -server 127.0.0.1 -port `+port+` -export `+dir+` ls /"`)

	p, _ := strconv.Atoi(port)
	exp, err := client.Mount(ctx, "127.0.0.1", dir, &client.MountOptions{RDMAPort: p,
		Client: client.Config{Transport: transport.Config{Provider: &soft.Provider{}}}})
	require.NoError(t, err, logs.String())
	got, err := fs.ReadFile(exp.FS(ctx), "hello")
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))
	require.NoError(t, exp.Close())
	require.Regexp(t, `msg="nfs: MOUNT" network=rdma remote=127\.0\.0\.1:[0-9]+ path=`+regexp.QuoteMeta(dir)+` outcome=MNT3_OK`, logs.String())
	cancel()
	require.NoError(t, <-done)
}

// TestClientHint: the command logged for each provider and listener.
func TestClientHint(t *testing.T) {
	tcp := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	for _, tc := range []struct {
		provider, rdma, tcp, export, want string
	}{
		{"soft", "0.0.0.0:20049", "0.0.0.0:4000", "/", "rdma-nfs -provider soft -server 127.0.0.1 ls /"},
		{"soft", "127.0.0.1:20049", "127.0.0.1:4000", "/", "rdma-nfs -provider soft -server 127.0.0.1 ls /"},
		{"soft", "10.0.0.1:7000", "10.0.0.1:4000", "/srv", "rdma-nfs -provider soft -server 10.0.0.1 -port 7000 -export /srv ls /"},
		{"rdmacore", "10.0.0.1:20049", "10.0.0.1:4000", "/", "mount -t nfs -o vers=3,proto=rdma,port=20049,mountport=4000,mountproto=tcp 10.0.0.1:/ /mnt"},
		{"rdmacore", "[::]:20049", "[::]:4000", "/srv", "mount -t nfs -o vers=3,proto=rdma,port=20049,mountport=4000,mountproto=tcp SERVER:/srv /mnt"},
		{"rdmacore", "[fd00::1]:20049", "[fd00::1]:4000", "/", "mount -t nfs -o vers=3,proto=rdma,port=20049,mountport=4000,mountproto=tcp [fd00::1]:/ /mnt"},
	} {
		require.Equal(t, tc.want, clientHint(tc.provider, tcp(tc.rdma), tcp(tc.tcp), tc.export), "%+v", tc)
	}
}
