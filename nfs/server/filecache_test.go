package server

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// closeLog records the descriptors an openFiles closes instead of closing
// them (the numbers in these tests are made up).
type closeLog []int

func (l *closeLog) close(fd int) error { *l = append(*l, fd); return nil }

func newTestOpenFiles(max int) (*openFiles, *closeLog) {
	c := newOpenFiles(max, time.Hour)
	var log closeLog
	c.close = log.close
	return c, &log
}

// TestOpenFilesRefs: a descriptor is closed when the last of the cache
// and the calls using it lets go; a read-write descriptor serves reads,
// not the other way round; a second descriptor added for a handle that
// has one as good is closed at once.
func TestOpenFilesRefs(t *testing.T) {
	c, closed := newTestOpenFiles(8)
	a := []byte("handle-a")
	if of := c.get(a, false); of != nil {
		t.Fatal("get of an empty cache found a descriptor")
	}
	ro := c.add(a, &openFile{fd: 10})
	if c.get(a, true) != nil {
		t.Fatal("a read-only descriptor was given for a write")
	}
	if of := c.get(a, false); of != ro {
		t.Fatal("a read found no descriptor")
	}
	c.put(ro)
	rw := c.add(a, &openFile{fd: 11, rw: true}) // replaces the read-only one
	if rw.fd != 11 || !slices.Equal(*closed, nil) {
		t.Fatalf("add rw = fd %d, closed %v: the read-only one is in use", rw.fd, *closed)
	}
	c.put(ro)
	if !slices.Equal(*closed, []int{10}) {
		t.Fatalf("closed %v, want [10] once its last user put it", *closed)
	}
	if of := c.add(a, &openFile{fd: 12}); of != rw {
		t.Fatal("a read-only descriptor replaced a read-write one")
	}
	if !slices.Equal(*closed, []int{10, 12}) {
		t.Fatalf("closed %v, want the redundant 12 closed", *closed)
	}
	c.put(rw)
	c.put(rw)
	c.forget(a, &openFile{fd: 99}) // not the cached one: no effect
	if c.len() != 1 {
		t.Fatalf("forget of another descriptor dropped the cached one")
	}
	c.forget(a, nil)
	if c.len() != 0 || !slices.Equal(*closed, []int{10, 12, 11}) {
		t.Fatalf("after forget: %d cached, closed %v", c.len(), *closed)
	}
}

// TestOpenFilesEvict: at its limit the cache gives way to a new
// descriptor by dropping the least recently used, which a call still
// using it keeps open until it puts it.
func TestOpenFilesEvict(t *testing.T) {
	c, closed := newTestOpenFiles(2)
	a, b, n := []byte("a"), []byte("b"), []byte("n")
	ofA := c.add(a, &openFile{fd: 1})
	c.epoch++
	c.put(c.add(b, &openFile{fd: 2}))
	c.epoch++
	c.put(c.add(n, &openFile{fd: 3}))
	if c.get(a, false) != nil || c.len() != 2 {
		t.Fatalf("a, the least recently used, is still cached (%d)", c.len())
	}
	if len(*closed) != 0 {
		t.Fatalf("closed %v while a call uses it", *closed)
	}
	c.put(ofA)
	if !slices.Equal(*closed, []int{1}) {
		t.Fatalf("closed %v, want [1]", *closed)
	}
}

// TestOpenFilesSweep: a sweep closes what no call used since the sweep
// before, and the sweeps stop with the cache empty.
func TestOpenFilesSweep(t *testing.T) {
	c, closed := newTestOpenFiles(8)
	a, b := []byte("a"), []byte("b")
	c.put(c.add(a, &openFile{fd: 1}))
	c.put(c.add(b, &openFile{fd: 2}))
	c.sweep()
	if c.len() != 2 {
		t.Fatalf("the first sweep closed a descriptor used since the last one: %v", *closed)
	}
	c.put(c.get(b, false))
	c.sweep()
	if !slices.Equal(*closed, []int{1}) || c.len() != 1 {
		t.Fatalf("second sweep: closed %v, %d cached; want a closed, b kept", *closed, c.len())
	}
	c.sweep()
	if !slices.Equal(*closed, []int{1, 2}) || c.len() != 0 || c.armed {
		t.Fatalf("third sweep: closed %v, %d cached, armed %v", *closed, c.len(), c.armed)
	}
}

// TestOpenFilesTimer: the sweep runs by itself, and an idle cache ends
// up empty.
func TestOpenFilesTimer(t *testing.T) {
	c := newOpenFiles(8, time.Millisecond)
	var log closeLog
	done := make(chan struct{})
	c.close = func(fd int) error {
		_ = log.close(fd)
		close(done)
		return nil
	}
	c.put(c.add([]byte("a"), &openFile{fd: 1}))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the sweep did not close an idle descriptor")
	}
	if c.len() != 0 {
		t.Fatalf("%d cached after the sweep", c.len())
	}
}

// TestOpenHandle: a handle's descriptor is its file whatever happens to
// the name: it follows a rename; the file's removal makes the handle
// stale and drops the descriptor; a file that took the name is never
// given for the old handle.
func TestOpenHandle(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "f"))
		_, h := openHandler(t, root, opt)
		fh := h.handle("f")
		of, err := h.openHandle(fh, true)
		if err != nil {
			t.Fatal(err)
		}
		if !of.rw {
			t.Fatal("a writable file's descriptor is read-only")
		}
		if _, err := fdFile(of.fd).WriteAt([]byte("X"), 0); err != nil {
			t.Fatal(err)
		}
		h.files.put(of)
		if err := os.Rename(filepath.Join(root, "f"), filepath.Join(root, "g")); err != nil {
			t.Fatal(err)
		}
		of2, err := h.openHandle(fh, false)
		if err != nil || of2 != of {
			t.Fatalf("after a rename: %v, same descriptor %v", err, of2 == of)
		}
		h.files.put(of2)
		if b, _ := os.ReadFile(filepath.Join(root, "g")); b[0] != 'X' {
			t.Fatalf("g = %q: the write did not land in the file", b)
		}

		// Removed: stale, and the descriptor leaves the cache.
		if err := os.Remove(filepath.Join(root, "g")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, "g")) // another file takes the name
		of3, err := h.openHandle(fh, false)
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := h.statOpen(fh, of3, &st); !errors.Is(err, ErrStaleHandle) {
			t.Fatalf("statOpen of a removed file = %v, want ErrStaleHandle", err)
		}
		h.files.put(of3)
		if OpenFiles(h) != 0 {
			t.Fatal("a removed file's descriptor stays cached")
		}
		if of4, err := h.openHandle(fh, false); !errors.Is(err, ErrStaleHandle) {
			if of4 != nil {
				h.files.put(of4)
			}
			t.Fatalf("openHandle of a removed file's handle = %v, want ErrStaleHandle (not the new file)", err)
		}

		// Forgotten, then the name given to another file before the next
		// open: stale, not the other file.
		writeFile(t, filepath.Join(root, "k"))
		kfh := h.handle("k")
		if err := os.Rename(filepath.Join(root, "g"), filepath.Join(root, "k")); err != nil {
			t.Fatal(err)
		}
		if _, err := h.openHandle(kfh, false); err == nil {
			t.Fatal("a handle whose file was replaced by a rename opened the new file")
		}
	})
}

// TestOpenHandleKinds: directories are cached read-only and refused for
// writing; symbolic links and FIFOs are not opened (a FIFO's open would
// block or have effects); a read-only Dir opens nothing for writing.
func TestOpenHandleKinds(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "sub", "f"))
	if err := os.Symlink("sub/f", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, h := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	sub := h.handle("sub")
	of, err := h.openHandle(sub, false)
	if err != nil || of.rw {
		t.Fatalf("directory: %v (read-write %v)", err, of != nil && of.rw)
	}
	h.files.put(of)
	if _, err := h.openHandle(sub, true); !errors.Is(err, errNotCacheable) {
		t.Fatalf("directory for writing: %v", err)
	}
	for _, name := range []string{"link", "fifo"} {
		if _, err := h.openHandle(h.handle(name), false); !errors.Is(err, errNotCacheable) {
			t.Fatalf("%s: %v, want errNotCacheable", name, err)
		}
	}
	if n := OpenFiles(h); n != 1 {
		t.Fatalf("%d descriptors cached, want the directory's", n)
	}

	rd, err := DirFS(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rd.Close() })
	rd.SetReadOnly()
	rh, err := NewDirHandler(rd, DirHandlerOptions{IndexOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	f := rh.handle("sub/f")
	if _, err := rh.openHandle(f, true); !errors.Is(err, errNotCacheable) {
		t.Fatalf("read-only Dir, for writing: %v", err)
	}
	of, err = rh.openHandle(f, false)
	if err != nil || of.rw {
		t.Fatalf("read-only Dir, for reading: %v (read-write %v)", err, of != nil && of.rw)
	}
	rh.files.put(of)
}

// TestWriteAtSync: a stable write goes through pwritev2 with RWF_SYNC,
// retried on EINTR and continued after a short write until all of b is
// written; a kernel that refuses the flag gets errNoSyncWrite with
// nothing written, and is not asked again.
func TestWriteAtSync(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	fd := fdFile(f.Fd())

	var calls, eintr int
	restore := WrapSyncWrite(func(real SyncWriteFunc) SyncWriteFunc {
		return func(fd int, b []byte, off int64) (int, error) {
			calls++
			if eintr == 0 {
				eintr++
				return 0, unix.EINTR
			}
			return real(fd, b[:min(len(b), 3)], off) // short writes
		}
	})
	n, err := fd.WriteAtSync([]byte("abcdefgh"), 2)
	restore()
	require.NoError(t, err)
	require.Equal(t, 8, n)
	require.Equal(t, 1+3, calls, "EINTR, then 3+3+2 bytes")
	got, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	require.Equal(t, "\x00\x00abcdefgh", string(got))

	n, err = fd.WriteAtSync([]byte("xy"), 0)
	require.NoError(t, err, "the real pwritev2 (Linux ≥ 4.7)")
	require.Equal(t, 2, n)

	calls = 0
	defer WrapSyncWrite(func(SyncWriteFunc) SyncWriteFunc {
		return func(int, []byte, int64) (int, error) { calls++; return 0, unix.EOPNOTSUPP }
	})()
	for range 2 {
		n, err = fd.WriteAtSync([]byte("zz"), 0)
		require.ErrorIs(t, err, errNoSyncWrite)
		require.Zero(t, n)
	}
	require.Equal(t, 1, calls, "asked once")
}

// TestOpenFilesForgetInode: forgetInode drops every descriptor of the
// inode (handles made in two directories, as of two hard links) and no
// other; one in use is closed when its call puts it.
func TestOpenFilesForgetInode(t *testing.T) {
	c, closed := newTestOpenFiles(8)
	key, err := newHandleKey(nil)
	require.NoError(t, err)
	mk := func(ino, parent uint64) []byte {
		return encodeHandle(exportID{key: key}, fileID{kind: fhKindInode, ino: ino}, parent)
	}
	a1, a2, b := mk(7, 1), mk(7, 2), mk(8, 1)
	c.put(c.add(a1, &openFile{fd: 10}))
	inUse := c.add(a2, &openFile{fd: 11})
	c.put(c.add(b, &openFile{fd: 12}))
	c.forgetInode(7)
	require.Equal(t, 1, c.len(), "the other inode's descriptor stays")
	require.True(t, c.cached(b))
	require.Equal(t, []int{10}, []int(*closed), "the unused descriptor of inode 7 closed at once")
	c.put(inUse)
	require.Equal(t, []int{10, 11}, []int(*closed), "the one in use closed when put")
}

// TestOpenFilesLRU: the descriptor given way to is the least recently
// used one by the order of calls, within one sweep period too.
func TestOpenFilesLRU(t *testing.T) {
	c, closed := newTestOpenFiles(3)
	a, b, d, n := []byte("a"), []byte("b"), []byte("d"), []byte("n")
	c.put(c.add(a, &openFile{fd: 1}))
	c.put(c.add(b, &openFile{fd: 2}))
	c.put(c.add(d, &openFile{fd: 3}))
	c.put(c.get(a, false))
	c.put(c.add(n, &openFile{fd: 4}))
	require.Equal(t, []int{2}, []int(*closed), "b, the least recently used, gave way")
	c.put(c.add(a, &openFile{fd: 5})) // a has one as good: 5 is closed
	c.put(c.add(b, &openFile{fd: 6}))
	require.Equal(t, []int{2, 5, 3}, []int(*closed), "then d gave way")
	checkOpenFiles(t, c)
}

// TestOpenFilesConsistent: after a random run of adds, uses, forgets,
// evictions and sweeps, the cache's list and inode chains hold exactly
// its descriptors, in order of use.
func TestOpenFilesConsistent(t *testing.T) {
	c, _ := newTestOpenFiles(16)
	key, err := newHandleKey(nil)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	handle := func() []byte {
		return encodeHandle(exportID{key: key}, fileID{kind: fhKindInode, ino: uint64(rng.IntN(24))}, uint64(rng.IntN(2)))
	}
	var held []*openFile
	for i := range 20000 {
		switch rng.IntN(8) {
		case 0, 1, 2:
			held = append(held, c.add(handle(), &openFile{fd: 100 + i, rw: rng.IntN(2) == 0}))
		case 3, 4:
			if of := c.get(handle(), rng.IntN(2) == 0); of != nil {
				held = append(held, of)
			}
		case 5:
			c.forget(handle(), nil)
		case 6:
			c.forgetInode(uint64(rng.IntN(24)))
		case 7:
			if rng.IntN(50) == 0 {
				c.sweep()
			}
		}
		for len(held) > 4 {
			c.put(held[0])
			held = held[1:]
		}
		if i%97 == 0 {
			checkOpenFiles(t, c)
		}
	}
	checkOpenFiles(t, c)
}

// checkOpenFiles checks c's list and inode chains against its map.
func checkOpenFiles(t *testing.T, c *openFiles) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[*openFile]bool{}
	last := ^uint64(0)
	for of := c.lru.next; of != &c.lru; of = of.next {
		require.Same(t, of, of.next.prev, "list links")
		require.Same(t, of, c.m[of.key], "a listed descriptor is the map's under its key")
		require.False(t, seen[of], "listed twice")
		require.LessOrEqual(t, of.used, last, "the list is in order of use")
		seen[of], last = true, of.used
	}
	require.Len(t, seen, len(c.m), "every cached descriptor is listed once")
	chained := 0
	for ino, first := range c.byIno {
		require.NotNil(t, first)
		for of := first; of != nil; of = of.sameIno {
			require.Equal(t, ino, of.ino)
			require.True(t, seen[of], "a chained descriptor is cached")
			chained++
		}
	}
	require.Equal(t, len(c.m), chained, "every cached descriptor is in its inode's chain once")
	require.LessOrEqual(t, len(c.m), c.max)
}

// BenchmarkOpenFilesChurn: a full cache taking a new descriptor (the
// least recently used giving way) and forgetting an inode, as a stream of
// creates and removes does; one op is one of each.
func BenchmarkOpenFilesChurn(b *testing.B) {
	c, _ := newTestOpenFiles(openFilesMax)
	key, err := newHandleKey(nil)
	require.NoError(b, err)
	mk := func(ino uint64) []byte {
		return encodeHandle(exportID{key: key}, fileID{kind: fhKindInode, ino: ino}, 1)
	}
	const files = 4 * openFilesMax
	fhs := make([][]byte, files)
	for i := range fhs {
		fhs[i] = mk(uint64(i + 10))
	}
	for i := range openFilesMax {
		c.put(c.add(fhs[i], &openFile{fd: i}))
	}
	b.ReportAllocs()
	i := openFilesMax
	for b.Loop() {
		c.put(c.add(fhs[i%files], &openFile{fd: i}))
		c.forgetInode(uint64((i+files/2)%files + 10))
		i++
	}
}
