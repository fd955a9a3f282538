package client_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// fileSizes are the sizes of the put and get tests: empty, around the
// inline threshold and the page, around rsize and wsize (1 MiB), 8 MiB.
var fileSizes = []int{0, 1, 1000, 4095, 4096, 4097, 65536, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3<<20 + 12345, 8 << 20}

// TestClientFileSizes writes files of 0 B to 8 MiB with File.Write
// (write-behind, UNSTABLE + COMMIT at Close), checks them in the exported
// directory, and reads them back with Read (read-ahead), ReadAt and the
// fs.FS view's ReadFile.
func TestClientFileSizes(t *testing.T) {
	env := startClientEnv(t, nil)
	ctx := callCtx(t)
	for i, size := range fileSizes {
		name := fmt.Sprintf("f%d", size)
		data := pattern(size, byte(i))
		f, err := env.exp.Create(ctx, name)
		require.NoError(t, err)
		// Odd-sized writes, so that blocks straddle them.
		for rest := data; len(rest) > 0; {
			k := min(len(rest), 300000)
			n, err := f.Write(rest[:k])
			require.NoError(t, err)
			require.Equal(t, k, n)
			rest = rest[k:]
		}
		require.NoError(t, f.Close())
		disk, err := os.ReadFile(env.path(name))
		require.NoError(t, err)
		require.Equal(t, sha256.Sum256(data), sha256.Sum256(disk), "%s on the server", name)

		f, err = env.exp.Open(ctx, name)
		require.NoError(t, err)
		got, err := io.ReadAll(f)
		require.NoError(t, err)
		require.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "%s by Read", name)
		at := make([]byte, size+10)
		n, err := f.ReadAt(at, 0)
		require.Equal(t, size, n)
		require.ErrorIs(t, err, io.EOF)
		require.True(t, bytes.Equal(data, at[:n]), "%s by ReadAt", name)
		if size > 10 {
			n, err = f.ReadAt(at[:size-7], 7)
			require.NoError(t, err)
			require.True(t, bytes.Equal(data[7:], at[:n]))
		}
		require.NoError(t, f.Close())

		rf, err := env.exp.FS(ctx).(interface{ ReadFile(string) ([]byte, error) }).ReadFile(name)
		require.NoError(t, err)
		require.True(t, bytes.Equal(data, rf), "%s by ReadFile", name)
	}
	st := env.stats()
	t.Logf("client: %d WRITE calls by Read chunk, %d Write chunks offered, %d Reply chunks, %d inline calls",
		st.ReadChunkCalls, st.WriteChunks, st.ReplyChunks, st.InlineCalls)
	require.NotZero(t, st.ReadChunkCalls, "no WRITE moved its data in a Read chunk")
	require.NotZero(t, st.WriteChunks, "no READ offered a Write chunk")
}

// TestClientWriteAtSeek writes out of order with WriteAt and in place with
// Seek and Write, then checks the result.
func TestClientWriteAtSeek(t *testing.T) {
	env := startClientEnv(t, func(_ *server.Config, o *client.MountOptions) { o.Client.WSize, o.Client.RSize = 64<<10, 64<<10 })
	ctx := callCtx(t)
	data := pattern(1<<20+333, 7)
	f, err := env.exp.OpenFile(ctx, "w", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	half := len(data) / 2
	n, err := f.WriteAt(data[half:], int64(half))
	require.NoError(t, err)
	require.Equal(t, len(data)-half, n)
	n, err = f.WriteAt(data[:half], 0)
	require.NoError(t, err)
	require.Equal(t, half, n)
	_, err = f.Seek(100, io.SeekStart)
	require.NoError(t, err)
	_, err = f.Write([]byte("patched"))
	require.NoError(t, err)
	copy(data[100:], "patched")
	end, err := f.Seek(0, io.SeekEnd)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), end)
	fi, err := f.Stat()
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), fi.Size())
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	// Read sees the writes still in flight.
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got))
	require.NoError(t, f.Truncate(1000))
	require.NoError(t, f.Close())
	disk, err := os.ReadFile(env.path("w"))
	require.NoError(t, err)
	require.Equal(t, data[:1000], disk)
	_, err = f.Write([]byte("x"))
	require.ErrorIs(t, err, os.ErrClosed)
	_, err = env.exp.OpenFile(ctx, "w", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.ErrorIs(t, err, os.ErrExist)
}

// TestExportSetattr: Export.Setattr sets a file's mode and times by
// path; a missing path is a *fs.PathError naming it.
func TestExportSetattr(t *testing.T) {
	env := startClientEnv(t, nil)
	ctx := callCtx(t)
	require.NoError(t, os.WriteFile(env.path("f"), []byte("x"), 0o644))
	mode := uint32(0o600)
	mtime := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	atime := mtime.Add(time.Hour)
	require.NoError(t, env.exp.Setattr(ctx, "f", &client.SetAttr{Mode: &mode, Mtime: &mtime, Atime: &atime}))
	fi, err := os.Stat(env.path("f"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.True(t, mtime.Equal(fi.ModTime()), "mtime %v, want %v", fi.ModTime(), mtime)
	err = env.exp.Setattr(ctx, "missing", &client.SetAttr{Mode: &mode})
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "setattr missing:")
}

// TestClientDirectory2000 lists a directory of 2,000 entries with READDIR
// and READDIRPLUS (several pages each) and through the fs.FS view.
func TestClientDirectory2000(t *testing.T) {
	env := startClientEnv(t, nil)
	ctx := callCtx(t)
	d := env.path("big")
	require.NoError(t, os.Mkdir(d, 0o755))
	want := map[string]bool{}
	for i := range 2000 {
		name := fmt.Sprintf("entry-with-a-longish-name-%04d", i)
		require.NoError(t, os.WriteFile(d+"/"+name, nil, 0o644))
		want[name] = true
	}
	dir, _, err := env.exp.Lookup(ctx, "big", true)
	require.NoError(t, err)
	for _, plus := range []bool{false, true} {
		before := env.stats().ReplyChunks
		ents, err := env.exp.Client.ReadDirAll(ctx, dir, plus)
		require.NoError(t, err)
		got := map[string]bool{}
		for _, e := range ents {
			require.False(t, got[e.Name], "%s listed twice", e.Name)
			got[e.Name] = true
		}
		require.Equal(t, want, got, "plus=%v", plus)
		pages := env.stats().ReplyChunks - before
		t.Logf("plus=%v: 2,000 entries in %d Reply chunks", plus, pages)
		require.Greater(t, pages, uint64(1), "a 2,000-entry listing in one page of 64 KiB")
	}
	des, err := env.exp.ReadDir(ctx, "big")
	require.NoError(t, err)
	require.Len(t, des, 2000)
	require.Equal(t, "entry-with-a-longish-name-0000", des[0].Name())
}

// TestClientInFlight64 runs 64 READs and 64 WRITEs at once on one
// connection, and checks that they were in flight together.
func TestClientInFlight64(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak := 0, 0
	release := make(chan struct{})
	env := startClientEnv(t, nil)
	ctx := callCtx(t)
	c := env.exp.Client
	data := pattern(64*4096, 3)
	require.NoError(t, os.WriteFile(env.path("r"), data, 0o644))
	fh, _, err := env.exp.Lookup(ctx, "r", true)
	require.NoError(t, err)
	wf, err := env.exp.Create(ctx, "w")
	require.NoError(t, err)
	wfh := wf.Handle()
	_ = release
	var wg sync.WaitGroup
	errs := make(chan error, 128)
	for i := range 64 {
		wg.Go(func() {
			mu.Lock()
			inFlight++
			peak = max(peak, inFlight)
			mu.Unlock()
			buf := make([]byte, 4096)
			n, _, err := c.Read(ctx, fh, uint64(i*4096), buf)
			if err == nil && (n != 4096 || !bytes.Equal(buf, data[i*4096:(i+1)*4096])) {
				err = fmt.Errorf("READ %d: wrong data", i)
			}
			errs <- err
			mu.Lock()
			inFlight--
			mu.Unlock()
		})
		wg.Go(func() {
			_, err := c.Write(ctx, wfh, uint64(i*4096), data[i*4096:(i+1)*4096], client.FileSync)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, wf.Close())
	disk, err := os.ReadFile(env.path("w"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, disk))
	st := env.stats()
	t.Logf("credits %d, credit stalls %d, peak goroutines in READ %d", st.Negotiated.Credits, st.CreditStalls, peak)
	require.GreaterOrEqual(t, st.Negotiated.Credits, uint32(64), "the server granted fewer than 64 credits")
}

// TestClientFSTest runs testing/fstest.TestFS over the fs.FS view of a
// tree made on the server side.
func TestClientFSTest(t *testing.T) {
	env := startClientEnv(t, nil)
	files := map[string][]byte{
		"a.txt":         []byte("hello"),
		"empty":         nil,
		"dir/b.bin":     pattern(6000, 1), // iotest.TestReader makes a READ per byte
		"dir/sub/c.txt": []byte("deep"),
		"dir/sub/d":     pattern(3000, 2),
	}
	for name, data := range files {
		p := env.path(name)
		require.NoError(t, os.MkdirAll(p[:len(p)-len(name)]+dirOf(name), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	require.NoError(t, os.Mkdir(env.path("emptydir"), 0o755))
	require.NoError(t, os.Symlink("dir/sub/c.txt", env.path("link")))
	fsys := env.exp.FS(callCtx(t))
	require.NoError(t, fstest.TestFS(fsys, "a.txt", "empty", "dir/b.bin", "dir/sub/c.txt", "dir/sub/d", "emptydir", "link"))
	got, err := fsys.(interface{ ReadFile(string) ([]byte, error) }).ReadFile("link")
	require.NoError(t, err)
	require.Equal(t, "deep", string(got))
}

func dirOf(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return ""
}
