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

// TestBadFlags: a flag out of its range (or not a flag, or not a
// command) ends the program with exit status 2 and a message naming the
// flag, one line of ours (the flag package adds the usage to its own),
// before anything connects: the server named does not exist. -h exits 0.
func TestBadFlags(t *testing.T) {
	base := []string{"-provider", "soft", "-server", "127.0.0.1", "-port", "1", "-mount-addr", "127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		name string // what the message must name
	}{
		{[]string{"-credits", "-5"}, "-credits -5"},
		{[]string{"-credits", "100000"}, "-credits 100000"},
		{[]string{"-inline", "100"}, "-inline 100"},
		{[]string{"-inline", "5000"}, "-inline 5000"},
		{[]string{"-inline", "300000"}, "-inline 300000"},
		{[]string{"-inline-send", "100"}, "-inline-send 100"},
		{[]string{"-inline-recv", "-1024"}, "-inline-recv -1024"},
		{[]string{"-rsize", "-1"}, "-rsize -1"},
		{[]string{"-rsize", "100"}, "-rsize 100"},
		{[]string{"-rsize", "2097152"}, "-rsize 2097152"},
		{[]string{"-wsize", "-1"}, "-wsize -1"},
		{[]string{"-inflight", "-1"}, "-inflight -1"},
		{[]string{"-inflight", "100000"}, "-inflight 100000"},
		{[]string{"-timeout", "-1s"}, "-timeout -1s"},
		{[]string{"-port", "0"}, "-port 0"},
		{[]string{"-port", "70000"}, "-port 70000"},
		{[]string{"-uid", "-1"}, "-uid -1"},
		{[]string{"-gid", "4294967296"}, "-gid 4294967296"},
		{[]string{"-progress", "sometimes"}, "-progress"},
		{[]string{"-provider", "x"}, "-provider"},
		{[]string{"-credits", "many"}, "-credits"},
		{[]string{"-frobnicate"}, "-frobnicate"},
		{[]string{"bench", "-jobs", "-3"}, "-jobs -3"},
		{[]string{"bench", "-jobs", "100000"}, "-jobs 100000"},
		{[]string{"bench", "-duration", "-1s"}, "-duration -1s"},
		{[]string{"bench", "-block", "0"}, "-block"},
		{[]string{"bench", "-block", "2MiB"}, "-block"},
		{[]string{"bench", "-size", "99999999999G"}, "-size"},
		{[]string{"bench", "-size", "-1"}, "-size"},
		{[]string{"bench", "-nope"}, "-nope"},
		{[]string{"frobnicate"}, "frobnicate"},
	} {
		args := append(append([]string(nil), base...), tc.args...)
		if tc.args[0] != "bench" && tc.args[0] != "frobnicate" {
			args = append(args, "ls")
		}
		var out, errb bytes.Buffer
		status := mainStatus(t.Context(), args, &out, &errb)
		require.Equal(t, 2, status, "%v: %s", tc.args, errb.String())
		first, _, _ := strings.Cut(errb.String(), "\n")
		require.Contains(t, first, tc.name, "%v: the first line names the flag", tc.args)
		require.NotContains(t, errb.String(), "connection refused", "%v: nothing connects", tc.args)
		if !strings.Contains(errb.String(), "Usage") && !strings.Contains(errb.String(), "usage:") {
			require.Equal(t, 1, strings.Count(errb.String(), "\n"), "%v: one line: %q", tc.args, errb.String())
			require.True(t, strings.HasPrefix(first, "rdma-nfs: "), first)
		}
	}
	for _, tc := range []struct {
		args  []string
		usage string // a flag the usage lists
	}{{[]string{"-h"}, "-credits"}, {[]string{"-help"}, "-rsize"}, {append(base, "bench", "-h"), "-jobs"}} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, mainStatus(t.Context(), tc.args, &out, &errb), "%v", tc.args)
		require.Contains(t, errb.String(), tc.usage, "%v prints the usage", tc.args)
	}
	// A failure that is not the command line's: status 1.
	var out, errb bytes.Buffer
	require.Equal(t, 1, mainStatus(t.Context(), append(base, "ls"), &out, &errb), errb.String())
}
