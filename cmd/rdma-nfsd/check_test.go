package main

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheck: -check (as nginx -t) checks the flags, the exports file and
// the exported directories, prints "configuration ok" (exit status 0) or
// each error on a line of its own naming the file and line (exit status
// 1), and serves nothing: the ports it would listen on stay free, even one
// in use. A mistake on the command line is still exit status 2.
func TestCheck(t *testing.T) {
	base := t.TempDir()
	a := filepath.Join(base, "a")
	require.NoError(t, os.Mkdir(a, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "file"), nil, 0o644))
	file := filepath.Join(base, "exports")
	write := func(text string) { require.NoError(t, os.WriteFile(file, []byte(text), 0o644)) }
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	_, port, _ := net.SplitHostPort(busy.Addr().String())

	check := func(args ...string) (int, string, string) {
		t.Helper()
		o, err := parse(append([]string{"-check", "-provider", "soft", "-addr", "127.0.0.1", "-rdma-port", port, "-tcp-port", port}, args...), io.Discard)
		if err != nil {
			var errb bytes.Buffer
			return mainStatus(t.Context(), append([]string{"-check"}, args...), &errb), "", errb.String()
		}
		var out, errb bytes.Buffer
		err = checkConfig(o, &out, &errb)
		status := mainStatus(t.Context(), append([]string{"-check", "-provider", "soft", "-rdma-port", port, "-tcp-port", port}, args...), io.Discard)
		if err == nil {
			require.Equal(t, 0, status)
		}
		return status, out.String(), errb.String()
	}

	write(a + " 127.0.0.1(rw)\n")
	status, out, errs := check("-exports", file, "-metrics", "127.0.0.1:0")
	require.Equal(t, [3]any{0, "configuration ok\n", ""}, [3]any{status, out, errs})
	status, out, _ = check("-dir", a)
	require.Equal(t, [2]any{0, "configuration ok\n"}, [2]any{status, out})

	// Every error, each on its line, naming the file's line.
	write(a + " 127.0.0.1(rw)\n" + filepath.Join(base, "none") + " *(ro)\n" + filepath.Join(base, "file") + " *(ro)\n")
	status, out, errs = check("-exports", file, "-metrics", "nohost.invalid:x")
	require.Equal(t, 1, status)
	require.Empty(t, out)
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	require.Len(t, lines, 3, errs)
	require.Contains(t, lines[0], file+":2:")
	require.Contains(t, lines[0], "no such file or directory")
	require.Contains(t, lines[1], file+":3:")
	require.Contains(t, lines[1], "not a directory")
	require.Contains(t, lines[2], "-metrics")
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, "rdma-nfsd: "), l)
	}

	write(a + " 127.0.0.1(rw,async)\n")
	status, _, errs = check("-exports", file)
	require.Equal(t, 1, status)
	require.Contains(t, errs, file+":1:")
	status, _, errs = check("-exports", filepath.Join(base, "missing"))
	require.Equal(t, 1, status)
	require.Contains(t, errs, "no such file")
	status, _, errs = check("-dir", filepath.Join(base, "none"))
	require.Equal(t, 1, status)
	require.Contains(t, errs, "-dir")

	// The handle key file: checked, and never made by -check.
	write(a + " 127.0.0.1(rw)\n")
	key := filepath.Join(base, "state", "handle-key")
	status, out, _ = check("-exports", file, "-handle-key", key)
	require.Equal(t, [2]any{0, "configuration ok\n"}, [2]any{status, out})
	require.NoFileExists(t, key)
	require.NoError(t, os.Mkdir(filepath.Dir(key), 0o700))
	require.NoError(t, os.WriteFile(key, make([]byte, 32), 0o644))
	status, _, errs = check("-exports", file, "-handle-key", key)
	require.Equal(t, 1, status)
	require.Contains(t, errs, "-handle-key")
	require.Contains(t, errs, "mode 0644")

	// The command line's mistakes: exit status 2, as without -check.
	status, _, errs = check("-exports", file, "-credits", "-5")
	require.Equal(t, 2, status, errs)
	require.Contains(t, errs, "-credits")
}
