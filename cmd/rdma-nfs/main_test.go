package main

import (
	"bytes"
	"context"
	"errors"
	"io"
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
	srv, err := server.New(server.Config{Handler: h, Transport: transport.Config{Provider: &soft.Provider{}, AcceptVersion2: true},
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

	// The same over RPC-over-RDMA version 2, which the server accepts.
	out, errs = must(t, append(flags, "-rpcrdma-v2", "-stats"), "cat", "up")
	require.True(t, bytes.Equal(data, []byte(out)))
	require.Contains(t, errs, " version=2\n")
	_, errs = must(t, append(flags, "-stats"), "stat", "up")
	require.Contains(t, errs, " version=1\n")

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
	var errb bytes.Buffer
	require.Equal(t, exitNFS, mainStatus(t.Context(), append(append([]string(nil), flags...), "ls", "missing"), io.Discard, &errb))
	require.Equal(t, "rdma-nfs: lstat /missing: no such file or directory (NFS3ERR_NOENT)\n", errb.String())
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
		{[]string{"-mount-timeout", "-1s"}, "-mount-timeout -1s"},
		{[]string{"-mount-timeout", "soon"}, "-mount-timeout"},
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
		{[]string{"ls", "a", "b"}, "ls: wrong number of arguments (usage: rdma-nfs [flags] ls [path])"},
		{[]string{"get", "a"}, "get: wrong number of arguments"},
		{[]string{"exports", "x"}, "exports: unexpected arguments"},
		{[]string{"cp", "a", "b"}, "cp: exactly one"},
		{[]string{"cp", "-x", "a", ":b"}, "-x"},
		{[]string{"rm"}, "rm: wrong number of arguments"},
		{[]string{"mkdir"}, "mkdir: wrong number of arguments"},
		{[]string{"mv", "a"}, "mv: wrong number of arguments"},
		{[]string{"rm", "-x", "a"}, "-x"},
	} {
		args := append(append([]string(nil), base...), tc.args...)
		if strings.HasPrefix(tc.args[0], "-") {
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
	}{{[]string{"-h"}, "-credits"}, {[]string{"-help"}, "-rsize"}, {append(base, "bench", "-h"), "-jobs"},
		{[]string{"bench", "-h"}, "-no-write"}, {[]string{"cp", "-h"}, "-r"}, {[]string{"ls", "-h"}, "ls [path]"},
		{[]string{"stat", "-h"}, "stat path"}, {[]string{"cat", "-help"}, "cat path"}, {[]string{"get", "-h"}, "get [-p] remote local"},
		{[]string{"put", "-h"}, "put [-p] local remote"}, {[]string{"exports", "-h"}, "exports"}, {[]string{"-h", "ls"}, "mount-timeout"},
		{[]string{"-h"}, "130 interrupted"}, {[]string{"-h"}, "4 MOUNT\nrefused"}, {[]string{"cp", "-h"}, "-p\tkeep"},
		{[]string{"rm", "-h"}, "rm [-r] path..."}, {[]string{"mv", "-h"}, "mv src dst"}, {[]string{"mkdir", "-h"}, "-p\tmake the missing parents"}} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, mainStatus(t.Context(), tc.args, &out, &errb), "%v", tc.args)
		require.Contains(t, out.String(), tc.usage, "%v prints the usage on stdout", tc.args)
		require.Empty(t, errb.String(), "%v", tc.args)
	}
	// A failure that is not the command line's: the server not reached.
	var out, errb bytes.Buffer
	require.Equal(t, exitTransport, mainStatus(t.Context(), append(base, "ls"), &out, &errb), errb.String())
}

// TestNoPortmapper: with no -mount-addr and no portmapper answering on
// the server host, MOUNT goes over the RDMA connection: the soft server
// and client meet with their defaults (the quick start).
func TestNoPortmapper(t *testing.T) {
	dir, flags := testServer(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello"), []byte("hi\n"), 0o644))
	var noMountAddr []string
	for i := 0; i < len(flags); i += 2 {
		if flags[i] != "-mount-addr" {
			noMountAddr = append(noMountAddr, flags[i], flags[i+1])
		}
	}
	out, _ := must(t, noMountAddr, "ls", "/")
	require.Regexp(t, `^-rw-r--r-- .* 3 .* hello\n$`, out)
	out, _ = must(t, noMountAddr, "exports")
	require.Equal(t, "/\t\n", out)
}

// TestMountTimeout: a MOUNT server that never answers fails the command
// after -mount-timeout, with a message saying so.
func TestMountTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	var errb bytes.Buffer
	start := time.Now()
	status := mainStatus(t.Context(), []string{"-provider", "soft", "-server", "127.0.0.1", "-port", "1",
		"-mount-addr", l.Addr().String(), "-mount-timeout", "300ms", "ls"}, io.Discard, &errb)
	require.Equal(t, exitTransport, status)
	require.Equal(t, "rdma-nfs: nfs: mount "+l.Addr().String()+": MOUNT3 MNT: no reply within 300ms: context deadline exceeded\n", errb.String())
	require.Less(t, time.Since(start), 10*time.Second)
}

// TestBenchLeavesOthersFiles: bench never overwrites or removes a file it
// did not create: -no-write reads an existing file and leaves it, a
// writing run refuses an existing name; a file bench created is removed
// at the end unless -keep.
func TestBenchLeavesOthersFiles(t *testing.T) {
	dir, flags := testServer(t)
	precious := bytes.Repeat([]byte("precious"), 1<<17) // 1 MiB
	p := filepath.Join(dir, "precious.bin")
	require.NoError(t, os.WriteFile(p, precious, 0o600))
	bench := []string{"bench", "-size", "1MiB", "-duration", "100ms", "-jobs", "2"}

	out, _ := must(t, flags, append(bench, "-no-write", "-file", "precious.bin")...)
	require.Contains(t, out, "seq-read: 1.0 MiB")
	require.NotContains(t, out, "seq-write")
	got, err := os.ReadFile(p)
	require.NoError(t, err, "-no-write removed the file it read")
	require.Equal(t, precious, got)

	var errb bytes.Buffer
	status := mainStatus(t.Context(), append(append([]string(nil), flags...), append(bench, "-file", "precious.bin")...), io.Discard, &errb)
	require.Equal(t, 1, status)
	require.Contains(t, errb.String(), "precious.bin exists")
	got, err = os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, precious, got, "a writing bench overwrote a file it did not create")

	_, _, err = rdmaNFS(t, flags, append(bench, "-no-write", "-file", "absent")...)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoFileExists(t, filepath.Join(dir, "absent"))

	must(t, flags, append(bench, "-file", "made")...)
	require.NoFileExists(t, filepath.Join(dir, "made"), "bench removes the file it created")
	must(t, flags, append(bench, "-file", "kept", "-keep")...)
	fi, err := os.Stat(filepath.Join(dir, "kept"))
	require.NoError(t, err)
	require.Equal(t, int64(1<<20), fi.Size())
}

// TestGetRenames: get writes a temporary file beside the target and
// renames it once complete: an existing target is replaced whole (keeping
// its permissions, as cp(1) does), a failed get leaves no file under the
// target's name and no temporary file.
func TestGetRenames(t *testing.T) {
	dir, flags := testServer(t)
	data := bytes.Repeat([]byte("new data "), 500000)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), data, 0o644))
	local := t.TempDir()
	target := filepath.Join(local, "f")
	require.NoError(t, os.WriteFile(target, bytes.Repeat([]byte("old"), 3<<20), 0o600))
	must(t, flags, "get", "f", target)
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, data, got)
	fi, err := os.Stat(target)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	_, _, err = rdmaNFS(t, flags, "get", "missing", filepath.Join(local, "g"))
	require.ErrorIs(t, err, os.ErrNotExist)
	ents, err := os.ReadDir(local)
	require.NoError(t, err)
	require.Len(t, ents, 1, "only f: no g, no temporary file")
}

// TestWriteAtomic: a write that fails part way leaves the target as it
// was (absent, or its old content) and no temporary file; one that
// succeeds replaces it, through a symbolic link.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "t")
	failing := func(w io.Writer) error {
		_, _ = w.Write([]byte("partial"))
		return errors.New("interrupted")
	}
	require.EqualError(t, writeAtomic(target, fileMeta{perm: 0o644}, false, failing), "interrupted")
	require.NoFileExists(t, target)
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o640))
	require.EqualError(t, writeAtomic(target, fileMeta{perm: 0o644}, false, failing), "interrupted")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "old", string(got))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "no temporary file left")

	require.NoError(t, os.Symlink("t", filepath.Join(dir, "link")))
	require.NoError(t, writeAtomic(filepath.Join(dir, "link"), fileMeta{perm: 0o644}, false, func(w io.Writer) error {
		_, err := w.Write([]byte("whole"))
		return err
	}))
	got, err = os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "whole", string(got))
	fi, err := os.Lstat(filepath.Join(dir, "link"))
	require.NoError(t, err)
	require.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link stays a link")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	require.ErrorContains(t, writeAtomic(filepath.Join(dir, "d"), fileMeta{perm: 0o644}, false, failing), "is a directory")
	require.ErrorIs(t, writeAtomic(filepath.Join(dir, "nodir")+"/", fileMeta{perm: 0o644}, false, failing), os.ErrNotExist)
	require.ErrorContains(t, writeAtomic(target+"/", fileMeta{perm: 0o644}, false, failing), "not a directory")
}

// TestCpDirectoryTarget: as cp(1), cp into an existing directory (either
// side) copies under the source's base name, and replaces an existing
// file whole; cp -r of a tree into an existing directory makes the tree
// there.
func TestCpDirectoryTarget(t *testing.T) {
	dir, flags := testServer(t)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "rdir"), 0o755))
	local := t.TempDir()
	src := filepath.Join(local, "f.txt")
	require.NoError(t, os.WriteFile(src, []byte("short"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rdir", "f.txt"), []byte("a longer old content"), 0o644))

	for _, dst := range []string{":/rdir", ":rdir/", ":/rdir/f.txt"} {
		must(t, flags, "cp", src, dst)
		got, err := os.ReadFile(filepath.Join(dir, "rdir", "f.txt"))
		require.NoError(t, err, dst)
		require.Equal(t, "short", string(got), dst)
	}
	require.NoDirExists(t, filepath.Join(dir, "rdir", "rdir"))

	ldir := filepath.Join(local, "ldir")
	require.NoError(t, os.Mkdir(ldir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ldir, "f.txt"), []byte("a longer old content"), 0o644))
	must(t, flags, "cp", ":/rdir/f.txt", ldir)
	got, err := os.ReadFile(filepath.Join(ldir, "f.txt"))
	require.NoError(t, err)
	require.Equal(t, "short", string(got))

	tree := filepath.Join(local, "tree")
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "sub", "x"), []byte("x"), 0o644))
	must(t, flags, "cp", "-r", tree, ":rdir")
	got, err = os.ReadFile(filepath.Join(dir, "rdir", "tree", "sub", "x"))
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
	must(t, flags, "cp", "-r", ":rdir/tree", ldir)
	got, err = os.ReadFile(filepath.Join(ldir, "tree", "sub", "x"))
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
}

// mainStatus runs the command line args as main does and returns the exit
// status, having reported an error on stderr (exitStatus).
func mainStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return exitStatus(ctx, run(ctx, args, stdout, stderr), stderr)
}
