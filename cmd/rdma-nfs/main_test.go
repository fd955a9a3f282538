package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// testServer exports a temporary directory with server.Server over soft and
// returns the directory and the flags that reach it.
func testServer(t *testing.T) (string, []string) {
	dir := t.TempDir()
	d, err := server.DirFS(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	h, err := server.NewDirHandler(d, server.DirHandlerOptions{})
	require.NoError(t, err)
	// The tests run as root, whose calls the default root_squash would
	// run as nobody.
	srv, err := server.New(server.Config{Handler: h, Transport: transport.Config{Provider: &soft.Provider{}},
		RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Rpcbind: server.RpcbindConfig{Disable: true},
		Squash: server.NoRootSquash})
	require.NoError(t, err)
	go func() { _ = srv.Serve(context.Background()) }()
	t.Cleanup(func() { _ = srv.Close() })
	_, port, _ := net.SplitHostPort(srv.RDMAAddr().String())
	return dir, []string{"-provider", "soft", "-server", "127.0.0.1", "-port", port,
		"-mount-addr", srv.TCPAddr().String(), "-timeout", "60s"}
}

// rdmaNFS runs the command and returns its stdout and stderr.
func rdmaNFS(t *testing.T, flags []string, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := run(t.Context(), append(append([]string(nil), flags...), args...), &out, &errb)
	return out.String(), errb.String(), err
}

func must(t *testing.T, flags []string, args ...string) (string, string) {
	t.Helper()
	out, errs, err := rdmaNFS(t, flags, args...)
	require.NoError(t, err, "rdma-nfs %v: %s", args, errs)
	return out, errs
}

func TestPutGetCatLsStat(t *testing.T) {
	dir, flags := testServer(t)
	local := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 300000) // 4.6 MiB
	require.NoError(t, os.WriteFile(filepath.Join(local, "in"), data, 0o640))

	_, errs := must(t, append(flags, "-stats", "-progress", "always"), "put", filepath.Join(local, "in"), "/up")
	got, err := os.ReadFile(filepath.Join(dir, "up"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got), "put: content differs")
	require.Contains(t, errs, "negotiated: peer_private_data=found send_inline=4096 recv_inline=4096")
	require.Contains(t, errs, "io: rsize=")
	require.Regexp(t, `calls: inline=\d+ read_chunk=[1-9]`, errs, "WRITEs of 1 MiB go in Read chunks")

	_, errs = must(t, append(flags, "-stats", "-progress", "never"), "get", "up", filepath.Join(local, "out"))
	got, err = os.ReadFile(filepath.Join(local, "out"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got), "get: content differs")
	require.Regexp(t, `chunks offered: read=\d+ write=[1-9]`, errs, "READs offer Write chunks")
	require.NotContains(t, errs, "\r", "a progress bar with -progress never")

	out, _ := must(t, flags, "cat", "up")
	require.True(t, bytes.Equal(data, []byte(out)))

	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Symlink("up", filepath.Join(dir, "ln")))
	out, _ = must(t, flags, "ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	require.Regexp(t, `^L.* ln -> up$`, lines[0])
	require.Regexp(t, `^d.* sub$`, lines[1])
	require.Regexp(t, `^-rw-r-----.* 4800000 .* up$`, lines[2])

	out, _ = must(t, flags, "stat", "/up")
	require.Contains(t, out, "Size: 4800000")
	require.Contains(t, out, "Type: regular file")

	_, _, err = rdmaNFS(t, flags, "stat", "missing")
	require.ErrorIs(t, err, os.ErrNotExist)
	_, _, err = rdmaNFS(t, flags, "frobnicate")
	require.ErrorContains(t, err, "unknown command")
}

func TestCpRecursive(t *testing.T) {
	dir, flags := testServer(t)
	src := t.TempDir()
	files := map[string][]byte{
		"a":       []byte("a file"),
		"empty":   {},
		"d/b":     bytes.Repeat([]byte{7}, 2<<20+3),
		"d/e/c":   []byte("deep"),
		"d/e/.hi": []byte("hidden"),
	}
	for name, data := range files {
		p := filepath.Join(src, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	require.NoError(t, os.Symlink("d/e/c", filepath.Join(src, "l")))
	must(t, flags, "cp", "-r", src, ":tree")
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(dir, "tree", name))
		require.NoError(t, err, name)
		require.Equal(t, data, got, name)
	}
	link, err := os.Readlink(filepath.Join(dir, "tree", "l"))
	require.NoError(t, err)
	require.Equal(t, "d/e/c", link)

	back := filepath.Join(t.TempDir(), "back")
	must(t, flags, "cp", "-r", ":tree", back)
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(back, name))
		require.NoError(t, err, name)
		require.Equal(t, data, got, name)
	}
	link, err = os.Readlink(filepath.Join(back, "l"))
	require.NoError(t, err)
	require.Equal(t, "d/e/c", link)

	_, _, err = rdmaNFS(t, flags, "cp", ":tree", back)
	require.ErrorContains(t, err, "use -r")
	_, _, err = rdmaNFS(t, flags, "cp", src, back)
	require.ErrorContains(t, err, "exactly one")
}

func TestBench(t *testing.T) {
	_, flags := testServer(t)
	out, _ := must(t, flags, "bench", "-size", "4MiB", "-duration", "300ms", "-jobs", "4")
	require.Regexp(t, `seq-write: 4.0 MiB in [\d.]+ s: [\d.]+ MiB/s`, out)
	require.Regexp(t, `seq-read: 4.0 MiB in [\d.]+ s: [\d.]+ MiB/s`, out)
	require.Regexp(t, `rand-read-4KiB-x4: [1-9]\d* ops in [\d.]+ s: \d+ IOPS`, out)
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	s := &session{stderr: &b, progress: true}
	p := s.newProgressSince("f", 100<<20, time.Now().Add(-time.Second))
	p.done.Store(50 << 20)
	time.Sleep(300 * time.Millisecond)
	p.finish()
	require.Contains(t, b.String(), "f [===============               ]  50%  50.0 MiB / 100.0 MiB")
	require.True(t, strings.HasSuffix(b.String(), "\n"))
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"123": 123, "4k": 4096, "4KiB": 4096, "32MiB": 32 << 20, "1G": 1 << 30} {
		got, err := parseSize(in)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
	_, err := parseSize("x")
	require.Error(t, err)
}
