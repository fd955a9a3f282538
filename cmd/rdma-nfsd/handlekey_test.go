package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The package's tests run the program with a key made for the test
// process unless they name a -handle-key file, so that none writes a key
// file outside its temporary directories (as root, the default is
// /var/lib/rdma-nfsd/handle-key).
func init() { handleKeyDefault = "" }

// TestDefaultHandleKeyPath: systemd's StateDirectory= first, then
// /var/lib/rdma-nfsd for root, then the user's XDG state directory, then
// ~/.local/state; no absolute directory at all: none.
func TestDefaultHandleKeyPath(t *testing.T) {
	for _, tc := range []struct {
		euid int
		env  map[string]string
		want string
	}{
		{0, nil, "/var/lib/rdma-nfsd/handle-key"},
		{0, map[string]string{"STATE_DIRECTORY": "/var/lib/rdma-nfsd:/var/lib/other"}, "/var/lib/rdma-nfsd/handle-key"},
		{0, map[string]string{"STATE_DIRECTORY": "/srv/state", "HOME": "/root"}, "/srv/state/handle-key"},
		{1000, map[string]string{"STATE_DIRECTORY": "/var/lib/private/rdma-nfsd"}, "/var/lib/private/rdma-nfsd/handle-key"},
		{1000, map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}, "/x/state/rdma-nfsd/handle-key"},
		{1000, map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/home/u"}, "/home/u/.local/state/rdma-nfsd/handle-key"},
		{1000, map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/rdma-nfsd/handle-key"},
		{1000, map[string]string{"STATE_DIRECTORY": "relative"}, ""},
		{1000, nil, ""},
	} {
		got := defaultHandleKeyPath(tc.euid, func(k string) string { return tc.env[k] })
		require.Equal(t, tc.want, got, "euid %d, %v", tc.euid, tc.env)
	}
}

// TestRdmaNfsdHandleKey: -handle-key names a file that is created when
// missing (mode 0600) and read at the next start: the root handle MNT gave
// before a restart still works after it; a restart with another key file
// refuses it (NFS3ERR_BADHANDLE, 10001); a key file others may read stops
// the program at start with a one-line message naming the flag and why.
func TestRdmaNfsdHandleKey(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "state", "handle-key")
	start := func(ctx context.Context, key string) (string, string, chan error, *syncBuffer) {
		srv, logs, done := startRun(t, ctx, "-dir", dir, "-addr", "127.0.0.1", "-rdma-port", "0", "-provider", "soft",
			"-rpcbind=false", "-handle-key", key)
		rdma, tcp := srv.Addrs()
		return rdma.String(), tcp.String(), done, logs
	}
	ctx, cancel := context.WithCancel(context.Background())
	rdma, tcp, done, logs := start(ctx, keyFile)
	require.Contains(t, logs.String(), "created a new handle key")
	fi, err := os.Stat(keyFile)
	require.NoError(t, err)
	require.EqualValues(t, 0o600, fi.Mode().Perm())
	root := mountRoot(t, tcp)
	st, _ := getattrFSID(t, rdma, root)
	require.Zero(t, st)
	cancel()
	require.NoError(t, <-done)

	ctx, cancel = context.WithCancel(context.Background())
	rdma, tcp, done, logs = start(ctx, keyFile)
	require.NotContains(t, logs.String(), "created a new handle key")
	st, _ = getattrFSID(t, rdma, root)
	require.Zero(t, st, "the handle after a restart with the same key")
	require.Equal(t, root, mountRoot(t, tcp), "MNT gives the same handle")
	cancel()
	require.NoError(t, <-done)

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	rdma, _, done, _ = start(ctx, filepath.Join(dir, "state", "other-key"))
	st, _ = getattrFSID(t, rdma, root)
	require.EqualValues(t, 10001, st, "the handle after a restart with another key: NFS3ERR_BADHANDLE")
	cancel()
	require.NoError(t, <-done)

	require.NoError(t, os.Chmod(keyFile, 0o644))
	var errb bytes.Buffer
	status := mainStatus(t.Context(), []string{"-dir", dir, "-addr", "127.0.0.1", "-rdma-port", "0", "-provider", "soft",
		"-rpcbind=false", "-handle-key", keyFile}, &errb)
	require.Equal(t, 1, status, errb.String())
	require.Equal(t, 1, strings.Count(errb.String(), "\n"), "one line: %q", errb.String())
	require.Contains(t, errb.String(), "-handle-key: handle key "+keyFile+": mode 0644")
}
