package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMain runs main instead of the tests when RDMA_NFS_TEST_MAIN is set:
// the test binary is then rdma-nfs, for tests that signal the process.
func TestMain(m *testing.M) {
	if os.Getenv("RDMA_NFS_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// entries lists a directory's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestPutInterrupted: rdma-nfs put (from stdin) and cp to the export
// (from a FIFO), interrupted by SIGINT while they write, exit 130 and
// leave the file they were replacing as it was, and no temporary file;
// the bytes they had sent were in a temporary file beside the target,
// never under the target's name.
func TestPutInterrupted(t *testing.T) {
	for _, how := range []string{"put", "cp"} {
		t.Run(how, func(t *testing.T) {
			dir, flags := testServer(t)
			target := filepath.Join(dir, "big")
			old := []byte("the old content, whole\n")
			require.NoError(t, os.WriteFile(target, old, 0o640))

			// 4 MiB of input, then the input is left open: the copy waits.
			data := bytes.Repeat([]byte("new "), 1<<20)
			done := make(chan struct{})
			t.Cleanup(func() { close(done) })
			feed := func(open func() (io.WriteCloser, error)) {
				w, err := open()
				if err != nil {
					return
				}
				_, _ = w.Write(data)
				<-done
				w.Close()
			}
			var cmd *exec.Cmd
			if how == "put" {
				cmd = exec.Command(os.Args[0], append(flags, "-progress", "never", "put", "-", "/big")...)
				stdin, err := cmd.StdinPipe()
				require.NoError(t, err)
				go feed(func() (io.WriteCloser, error) { return stdin, nil })
			} else {
				fifo := filepath.Join(t.TempDir(), "fifo")
				require.NoError(t, syscall.Mkfifo(fifo, 0o600))
				cmd = exec.Command(os.Args[0], append(flags, "-progress", "never", "cp", fifo, ":/big")...)
				go feed(func() (io.WriteCloser, error) { return os.OpenFile(fifo, os.O_WRONLY, 0) }) // waits for the reader
			}
			cmd.Env = append(os.Environ(), "RDMA_NFS_TEST_MAIN=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			var temp string
			require.Eventually(t, func() bool {
				for _, name := range entries(t, dir) {
					if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && strings.HasPrefix(name, ".big.rdma-nfs-") && fi.Size() > 0 {
						temp = name
						return true
					}
				}
				return false
			}, 30*time.Second, 5*time.Millisecond, "no temporary file beside the target")
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			require.Equal(t, old, got, "the target changed while the copy ran")

			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			err = cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
			require.Equal(t, 130, ee.ExitCode(), "stderr: %s", stderr.String())
			require.Equal(t, "rdma-nfs: interrupted (SIGINT)\n", stderr.String())
			got, err = os.ReadFile(target)
			require.NoError(t, err)
			require.Equal(t, old, got, "the interrupted copy changed the target")
			require.Equal(t, []string{"big"}, entries(t, dir), "the temporary file %s is left", temp)
		})
	}
}

// TestPutReplaces: put over an existing file replaces it whole through a
// temporary file and RENAME, keeping its permissions; put into a
// directory writes under the source's base name, as cp(1); get into a
// directory likewise.
func TestPutReplaces(t *testing.T) {
	dir, flags := testServer(t)
	local := t.TempDir()
	src := filepath.Join(local, "f.txt")
	require.NoError(t, os.WriteFile(src, []byte("new"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), bytes.Repeat([]byte("old"), 1<<20), 0o600))
	var before syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(dir, "f.txt"), &before))

	must(t, flags, "put", src, "/f.txt")
	got, err := os.ReadFile(filepath.Join(dir, "f.txt"))
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
	fi, err := os.Stat(filepath.Join(dir, "f.txt"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the replaced file's permissions")
	var after syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(dir, "f.txt"), &after))
	require.NotEqual(t, before.Ino, after.Ino, "a new file renamed over the old, not the old truncated")
	require.Equal(t, []string{"f.txt"}, entries(t, dir))

	// Into a directory, both ways; "-" into one needs a name.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	must(t, flags, "put", src, "/d")
	got, err = os.ReadFile(filepath.Join(dir, "d", "f.txt"))
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
	ldir := filepath.Join(local, "ldir")
	require.NoError(t, os.Mkdir(ldir, 0o755))
	must(t, flags, "get", "/d/f.txt", ldir)
	got, err = os.ReadFile(filepath.Join(ldir, "f.txt"))
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
	_, _, err = rdmaNFS(t, flags, "put", "-", "/d")
	require.ErrorContains(t, err, "/d is a directory")
	// A target written as a directory must be one.
	_, _, err = rdmaNFS(t, flags, "put", src, "/nodir/")
	require.ErrorIs(t, err, os.ErrNotExist)
	_, _, err = rdmaNFS(t, flags, "cp", src, ":/f.txt/")
	require.ErrorContains(t, err, "stat /f.txt: not a directory")
	require.NoFileExists(t, filepath.Join(dir, "nodir"))
	require.Equal(t, []string{"f.txt"}, entries(t, filepath.Join(dir, "d")))

	// A put the server refuses (a directory it may not write) leaves
	// nothing.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "ro"), 0o555))
	_, _, err = rdmaNFS(t, append(flags, "-uid", "1000", "-gid", "1000"), "put", src, "/ro/x")
	require.ErrorIs(t, err, os.ErrPermission)
	require.Empty(t, entries(t, filepath.Join(dir, "ro")))
}

// TestPreserve: -p gives the copy its source's modification time and
// permissions on get, put and cp -r, both ways, directories included.
func TestPreserve(t *testing.T) {
	dir, flags := testServer(t)
	local := t.TempDir()
	mtime := time.Date(2011, 3, 4, 5, 6, 7, 0, time.UTC)
	atime := mtime.Add(time.Hour)
	src := filepath.Join(local, "f")
	require.NoError(t, os.WriteFile(src, []byte("data"), 0o604))
	require.NoError(t, os.Chmod(src, 0o604))
	require.NoError(t, os.Chtimes(src, atime, mtime))
	check := func(p string, perm os.FileMode) {
		t.Helper()
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.True(t, mtime.Equal(fi.ModTime()), "%s: mtime %v, want %v", p, fi.ModTime(), mtime)
		require.Equal(t, perm, fi.Mode().Perm(), p)
		require.True(t, atime.Equal(time.Unix(fi.Sys().(*syscall.Stat_t).Atim.Unix())), "%s: atime", p)
	}

	must(t, flags, "put", "-p", src, "/f")
	check(filepath.Join(dir, "f"), 0o604)
	must(t, flags, "get", "-p", "/f", filepath.Join(local, "g"))
	check(filepath.Join(local, "g"), 0o604)
	// Without -p: the copy's times are now's.
	must(t, flags, "put", src, "/h")
	fi, err := os.Stat(filepath.Join(dir, "h"))
	require.NoError(t, err)
	require.False(t, mtime.Equal(fi.ModTime()))

	tree := filepath.Join(local, "tree")
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "sub"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "sub", "x"), []byte("x"), 0o604))
	for _, p := range []string{filepath.Join(tree, "sub", "x"), filepath.Join(tree, "sub"), tree} {
		require.NoError(t, os.Chtimes(p, atime, mtime))
	}
	must(t, flags, "cp", "-r", "-p", tree, ":/tree")
	check(filepath.Join(dir, "tree", "sub", "x"), 0o604)
	check(filepath.Join(dir, "tree", "sub"), 0o750)
	check(filepath.Join(dir, "tree"), 0o750)
	back := filepath.Join(local, "back")
	must(t, flags, "cp", "-r", "-p", ":/tree", back)
	check(filepath.Join(back, "sub", "x"), 0o604)
	check(filepath.Join(back, "sub"), 0o750)
	check(back, 0o750)
}

// TestCpTreeProgress: cp -r draws one bar for the whole tree, counting
// its files and bytes.
func TestCpTreeProgress(t *testing.T) {
	_, flags := testServer(t)
	defer func(d time.Duration) { progressDelay = d }(progressDelay)
	progressDelay = 0
	src := t.TempDir()
	for i, size := range []int{1 << 20, 2 << 20, 10, 0} {
		p := filepath.Join(src, "d", strings.Repeat("f", i+1))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, make([]byte, size), 0o644))
	}
	_, errs := must(t, append(flags, "-progress", "always"), "cp", "-r", src, ":/t")
	lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\r")
	last := lines[len(lines)-1]
	require.Contains(t, last, "/t  4/4 files [==============================] 100%  3.0 MiB / 3.0 MiB", errs)
	require.Equal(t, 1, strings.Count(errs, "\n"), "one bar: %q", errs)

	back := filepath.Join(t.TempDir(), "back")
	_, errs = must(t, append(flags, "-progress", "always"), "cp", "-r", ":/t", back)
	require.Contains(t, errs, "4/4 files [==============================] 100%  3.0 MiB / 3.0 MiB")
}

// TestCtxReader: a Read blocked on a reader that never answers returns
// the context's cause once it ends.
func TestCtxReader(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	defer r.Close()
	ctx, cancel := contextWithCause(t)
	cr := newCtxReader(ctx, r)
	_, err = w.Write([]byte("abc"))
	require.NoError(t, err)
	buf := make([]byte, 2)
	n, err := cr.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "ab", string(buf[:n]))
	n, err = cr.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "c", string(buf[:n]))
	done := make(chan error, 1)
	go func() { _, err := cr.Read(buf); done <- err }()
	time.Sleep(50 * time.Millisecond)
	cancel(errors.New("stop"))
	require.EqualError(t, <-done, "stop")
}
