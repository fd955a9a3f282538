package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
)

// handleModes runs f with the index-only handler and, where the process
// may use open_by_handle_at, with the kernel's.
func handleModes(t *testing.T, f func(t *testing.T, opt DirHandlerOptions)) {
	t.Run("index", func(t *testing.T) { f(t, DirHandlerOptions{IndexOnly: true}) })
	t.Run("kernel", func(t *testing.T) {
		root := t.TempDir()
		_, h := openHandler(t, root, DirHandlerOptions{})
		if !h.ByKernelHandle() {
			t.Skip("open_by_handle_at not permitted (needs CAP_DAC_READ_SEARCH)")
		}
		f(t, DirHandlerOptions{})
	})
}

// openHandler opens root as a Dir with a DirHandler: one server "start".
func openHandler(t testing.TB, root string, opt DirHandlerOptions) (*Dir, *DirHandler) {
	t.Helper()
	d, err := DirFS(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	h, err := NewDirHandler(d, opt)
	if err != nil {
		t.Fatal(err)
	}
	return d, h
}

func writeFile(t *testing.T, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(name), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustResolve checks that fh resolves to want under h.
func mustResolve(t *testing.T, h *DirHandler, fh []byte, want string) {
	t.Helper()
	got, err := h.resolve(fh)
	if err != nil {
		t.Fatalf("resolve for %q: %v", want, err)
	}
	if got != rel(want) {
		t.Fatalf("resolve = %q, want %q", got, rel(want))
	}
}

// mustStale checks that fh is refused as stale.
func mustStale(t *testing.T, h *DirHandler, fh []byte) {
	t.Helper()
	name, err := h.resolve(fh)
	if statusOf(err) != nfs3.ErrStale || !errors.Is(err, ErrStaleHandle) {
		t.Fatalf("resolve = %q, %v; want NFS3ERR_STALE", name, err)
	}
}

func TestHandleStableAcrossRestart(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root := t.TempDir()
		names := []string{"a", "d/b", "d/e/c", "d/e"}
		for _, n := range names[:3] {
			writeFile(t, filepath.Join(root, n))
		}
		if err := os.Symlink("a", filepath.Join(root, "d/link")); err != nil {
			t.Fatal(err)
		}
		names = append(names, "d/link", "")
		_, h1 := openHandler(t, root, opt)
		handles := map[string][]byte{}
		for _, n := range names {
			fh := h1.handle(n)
			if len(fh) == 0 || len(fh) > nfs3.FHSize || len(fh)%4 != 0 {
				t.Fatalf("handle of %q: %d bytes, want a multiple of 4 up to 64 (no XDR padding)", n, len(fh))
			}
			handles[n] = fh
			mustResolve(t, h1, fh, n)
		}
		// A restart: a new Dir and handler, with nothing in common.
		_, h2 := openHandler(t, root, opt)
		for _, n := range names {
			mustResolve(t, h2, handles[n], n)
			if got := h2.handle(n); string(got) != string(handles[n]) {
				t.Errorf("handle of %q changed across restart: %x, was %x", n, got, handles[n])
			}
		}
	})
}

func TestHandleManyFilesNoEviction(t *testing.T) {
	// One tree for both modes: creating 5,000 files is the slow part.
	root := t.TempDir()
	const n = 5000
	var names []string
	for i := range n {
		name := fmt.Sprintf("d%02d/f%04d", i%50, i)
		names = append(names, name)
		if i < 50 {
			if err := os.Mkdir(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Create(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		_, h1 := openHandler(t, root, opt)
		handles := make([][]byte, n)
		for i, name := range names {
			handles[i] = h1.handle(name)
		}
		// All still resolve on the handler that made them (no LRU) ...
		for i, name := range names {
			mustResolve(t, h1, handles[i], name)
		}
		if w := h1.dir.idx.walks; w != 0 {
			t.Errorf("%d walks on the handler that made the handles", w)
		}
		// ... and after a restart, at the cost of at most one walk.
		_, h2 := openHandler(t, root, opt)
		for i, name := range names {
			mustResolve(t, h2, handles[i], name)
		}
		if w := h2.dir.idx.walks; w > 1 {
			t.Errorf("%d walks after restart, want at most 1", w)
		}
	})
}

func TestHandleRename(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "d/f"))
		_, h := openHandler(t, root, opt)
		fh := h.handle("d/f")
		dh := h.handle("d")
		rename := func(from, to string) {
			t.Helper()
			if err := os.Rename(filepath.Join(root, from), filepath.Join(root, to)); err != nil {
				t.Fatal(err)
			}
			h.dir.idx.renamed(from, to)
		}

		// As RENAME renames: the index follows.
		rename("d/f", "d/g")
		mustResolve(t, h, fh, "d/g")
		rename("d", "e")
		mustResolve(t, h, fh, "e/g")
		mustResolve(t, h, dh, "e")

		// Behind the server's back, and after a restart.
		if err := os.MkdirAll(filepath.Join(root, "x/y"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(root, "e/g"), filepath.Join(root, "x/y/z")); err != nil {
			t.Fatal(err)
		}
		mustResolve(t, h, fh, "x/y/z")
		if err := os.Rename(filepath.Join(root, "x"), filepath.Join(root, "w")); err != nil {
			t.Fatal(err)
		}
		_, h2 := openHandler(t, root, opt)
		mustResolve(t, h2, fh, "w/y/z")
		mustResolve(t, h2, dh, "e")
	})
}

func TestHandleRemovedIsStale(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "f"))
		writeFile(t, filepath.Join(root, "g"))
		writeFile(t, filepath.Join(root, "sub/h"))
		_, h := openHandler(t, root, opt)
		fh := h.handle("f")
		gh := h.handle("g")
		hh := h.handle("sub/h")
		sh := h.handle("sub")
		remove := func(name string) {
			t.Helper()
			if err := os.Remove(filepath.Join(root, name)); err != nil {
				t.Fatal(err)
			}
			h.dir.idx.removed(name)
		}

		// As REMOVE removes.
		remove("f")
		mustStale(t, h, fh)

		// A hard link keeps the file, and its handle, alive.
		if err := os.Link(filepath.Join(root, "g"), filepath.Join(root, "sub/g2")); err != nil {
			t.Fatal(err)
		}
		remove("g")
		mustResolve(t, h, gh, "sub/g2")

		// Removed behind the server's back, seen after a restart.
		if err := os.RemoveAll(filepath.Join(root, "sub")); err != nil {
			t.Fatal(err)
		}
		_, h2 := openHandler(t, root, opt)
		mustStale(t, h2, hh)
		mustStale(t, h2, sh)
		mustStale(t, h2, gh)
		mustStale(t, h2, fh)
		// The inode reused by a new file does not revive an old handle.
		writeFile(t, filepath.Join(root, "new"))
		mustStale(t, h2, fh)
	})
}

func TestHandleForeignAndMalformed(t *testing.T) {
	rootA, rootB := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(rootA, "f"))
	writeFile(t, filepath.Join(rootB, "f"))
	_, ha := openHandler(t, rootA, DirHandlerOptions{IndexOnly: true})
	_, hb := openHandler(t, rootB, DirHandlerOptions{IndexOnly: true})
	for _, p := range []string{"", "f"} {
		_, err := hb.resolve(ha.handle(p))
		if !errors.Is(err, ErrForeignHandle) {
			t.Errorf("handle of export A on export B: %v, want ErrForeignHandle", err)
		}
	}
	// A subdirectory exported on its own is another export too.
	if err := os.Mkdir(filepath.Join(rootA, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, hs := openHandler(t, filepath.Join(rootA, "sub"), DirHandlerOptions{IndexOnly: true})
	if _, err := hs.resolve(ha.handle("f")); !errors.Is(err, ErrForeignHandle) {
		t.Errorf("handle of the parent export: %v, want ErrForeignHandle", err)
	}

	good := ha.handle("f")
	for name, fh := range map[string][]byte{
		"empty":   nil,
		"short":   good[:10],
		"long":    append(append([]byte{}, good...), make([]byte, 64)...),
		"version": append([]byte{9}, good[1:]...),
		"kind":    append([]byte{good[0], 7}, good[2:]...),
		"uuid":    make([]byte, 16), // another server's handle
	} {
		_, err := ha.resolve(fh)
		if statusOf(err) != nfs3.ErrBadHandle || !errors.Is(err, ErrBadHandle) {
			t.Errorf("%s handle: %v, want NFS3ERR_BADHANDLE", name, err)
		}
	}
}

func TestHandleRoot(t *testing.T) {
	root := t.TempDir()
	_, h := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	mustResolve(t, h, h.handle(""), "")
	if !bytes.Equal(h.handle("."), h.rootHandle()) {
		t.Error("the root's handle is not the one MNT gives")
	}
	if h.handle("missing") != nil {
		t.Error("handle of a missing file")
	}
	// A name that climbs out of the root is the root.
	mustResolve(t, h, h.handle("../.."), "")
}

// TestHandlePadding: handles of every length a kernel handle can give are
// a multiple of 4 bytes, carry a MAC that checks, and decode to what was
// encoded; pad bytes that are not zero, or a length byte that disagrees
// with the handle's size, make a bad handle.
func TestHandlePadding(t *testing.T) {
	key, err := newHandleKey(bytes.Repeat([]byte{7}, HandleKeySize))
	if err != nil {
		t.Fatal(err)
	}
	export := exportID{id: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, key: key}
	ids := []fileID{{kind: fhKindInode, ino: 7, gen: 9}}
	for n := 1; n <= fhKernelMax; n++ {
		ids = append(ids, fileID{kind: fhKindKernel, ino: 7, ktype: 0x81, kfh: bytes.Repeat([]byte{0xab}, n)})
	}
	for _, id := range ids {
		fh := encodeHandle(export, id, 3)
		if len(fh)%4 != 0 || len(fh) < fhMin || len(fh) > nfs3.FHSize {
			t.Fatalf("%d-byte kernel handle: a %d-byte file handle", len(id.kfh), len(fh))
		}
		if err := checkHandle(key, fh); err != nil {
			t.Fatalf("%d-byte kernel handle: %v", len(id.kfh), err)
		}
		e, got, parent, err := decodeHandle(fh)
		if err != nil || e != export.id || !got.equal(id) || parent != 3 {
			t.Fatalf("%d-byte kernel handle: decoded %+v %v", len(id.kfh), got, err)
		}
		if len(fh)-fhMACLen > fhKernelStart+len(id.kfh) {
			bad := bytes.Clone(fh)
			bad[len(bad)-fhMACLen-1] = 1
			if _, _, _, err := decodeHandle(bad); !errors.Is(err, ErrBadHandle) {
				t.Fatalf("%d-byte kernel handle, non-zero padding: %v", len(id.kfh), err)
			}
		}
	}
	fh := encodeHandle(export, ids[1], 3)
	fh[fhKernelLen] = 5
	if _, _, _, err := decodeHandle(fh); !errors.Is(err, ErrBadHandle) {
		t.Fatalf("length byte 5 in a handle of a 1-byte kernel handle: %v", err)
	}
}
