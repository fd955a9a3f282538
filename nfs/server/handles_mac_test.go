package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"golang.org/x/sys/unix"
)

// testKey is a handle key of HandleKeySize bytes c.
func testKey(c byte) []byte { return bytes.Repeat([]byte{c}, HandleKeySize) }

// mustBad checks that fh is refused as a handle the server did not make
// (NFS3ERR_BADHANDLE), without a walk of the export or a change to the
// index.
func mustBad(t *testing.T, h *DirHandler, what string, fh []byte) {
	t.Helper()
	x := h.dir.idx
	x.mu.Lock()
	walks, known, gone := x.walks, len(x.byIno), len(x.gone)
	x.mu.Unlock()
	name, err := h.resolve(fh)
	if statusOf(err) != nfs3.ErrBadHandle || !errors.Is(err, ErrBadHandle) {
		t.Fatalf("%s (%x): resolve = %q, %v; want NFS3ERR_BADHANDLE", what, fh, name, err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.walks != walks || len(x.byIno) != known || len(x.gone) != gone {
		t.Fatalf("%s: walks %d -> %d, index %d -> %d, gone %d -> %d: a forged handle reached the index",
			what, walks, x.walks, known, len(x.byIno), gone, len(x.gone))
	}
}

// fhField names the field of byte i of the handle fh (handles.go).
func fhField(fh []byte, i int) string {
	body := len(fh) - fhMACLen
	switch {
	case i == 0:
		return "version"
	case i == 1:
		return "kind"
	case i < 10:
		return "export id"
	case i < 18:
		return "inode"
	case i < 26:
		return "parent"
	case i >= body:
		return "MAC"
	case fh[1] == fhKindInode && i < 30:
		return "generation"
	case fh[1] == fhKindInode:
		return "padding"
	case i < 30:
		return "kernel handle type"
	case i == 30:
		return "kernel handle length"
	case i < fhKernelStart+int(fh[fhKernelLen]):
		return "kernel handle"
	}
	return "padding"
}

// TestHandleForgedRefused: a handle the server did not make is
// NFS3ERR_BADHANDLE before any lookup: each byte of a genuine handle
// altered (every field, in each of its bits' senses), a random MAC, every
// prefix, a longer handle, and the handle of a file that was never issued.
// None walks the export or touches the index; the genuine handles still
// resolve.
func TestHandleForgedRefused(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "d/f"))
		writeFile(t, filepath.Join(root, "g"))
		_, h := openHandler(t, root, opt)
		genuine := map[string][]byte{"root": h.handle(""), "dir": h.handle("d"), "file": h.handle("d/f")}
		// A handle of the inode kind, as made where the file system has no
		// kernel handle (or one too large): the same inode as g.
		id, parent, _, err := h.dir.identify("g")
		if err != nil {
			t.Fatal(err)
		}
		genuine["inode kind"] = encodeHandle(h.export, fileID{kind: fhKindInode, ino: id.ino}, parent)
		for what, fh := range genuine {
			if err := checkHandle(h.export.key, fh); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			for i := range fh {
				for _, bit := range []byte{0x01, 0x80, 0xff} {
					bad := bytes.Clone(fh)
					bad[i] ^= bit
					mustBad(t, h, fmt.Sprintf("%s, byte %d (%s) ^ %#x", what, i, fhField(fh, i), bit), bad)
				}
			}
			random := bytes.Clone(fh)
			for i := len(fh) - fhMACLen; i < len(fh); i++ {
				random[i] = byte(i*73 + 11)
			}
			mustBad(t, h, what+", another MAC", random)
			for n := range len(fh) {
				mustBad(t, h, fmt.Sprintf("%s, first %d bytes", what, n), fh[:n])
			}
			mustBad(t, h, what+", 4 bytes longer", append(bytes.Clone(fh), 0, 0, 0, 0))
		}
		// A well-formed handle of an inode the server never gave out, as a
		// client without the key would make it.
		forged := encodeHandle(exportID{id: h.export.id, key: mustKey(t, testKey(0x5a))}, fileID{kind: fhKindInode, ino: 1 << 40}, 0)
		mustBad(t, h, "never issued", forged)
		if w := h.dir.idx.walks; w != 0 {
			t.Fatalf("%d walks", w)
		}
		mustResolve(t, h, genuine["file"], "d/f")
		mustResolve(t, h, genuine["dir"], "d")
	})
}

func mustKey(t testing.TB, key []byte) *handleKey {
	t.Helper()
	k, err := newHandleKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestHandleKeyAcrossRestart: handles made under a key resolve after a
// restart (a new Dir and DirHandler) under the same key, and are
// NFS3ERR_BADHANDLE, with no walk, under another key.
func TestHandleKeyAcrossRestart(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "d/f"))
		opt.HandleKey = testKey(1)
		_, h1 := openHandler(t, root, opt)
		names := []string{"", "d", "d/f"}
		var handles [][]byte
		for _, n := range names {
			handles = append(handles, h1.handle(n))
		}
		_, same := openHandler(t, root, opt)
		for i, n := range names {
			mustResolve(t, same, handles[i], n)
		}
		opt.HandleKey = testKey(2)
		_, other := openHandler(t, root, opt)
		for i, n := range names {
			mustBad(t, other, "handle of "+n+" under another key", handles[i])
		}
		if w := other.dir.idx.walks; w != 0 {
			t.Fatalf("%d walks", w)
		}
		// The handler's own handles are made under its key.
		mustResolve(t, other, other.handle("d/f"), "d/f")
	})
}

// TestHandleKeyNil: without a key, the DirHandlers of one process share a
// random one: a handle resolves on a new DirHandler of the same process.
// A key shorter than 16 bytes is refused.
func TestHandleKeyNil(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "f"))
	_, h1 := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	_, h2 := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	mustResolve(t, h2, h1.handle("f"), "f")
	if bytes.Equal(processKey(), make([]byte, HandleKeySize)) || len(processKey()) != HandleKeySize {
		t.Fatalf("process key %x", processKey())
	}
	_, hk := openHandler(t, root, DirHandlerOptions{IndexOnly: true, HandleKey: processKey()})
	mustResolve(t, hk, h1.handle("f"), "f")

	d, err := DirFS(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := NewDirHandler(d, DirHandlerOptions{HandleKey: make([]byte, 15)}); err == nil {
		t.Fatal("a 15-byte key taken")
	}
	if _, err := NewDirHandler(d, DirHandlerOptions{HandleKey: []byte{}}); err == nil {
		t.Fatal("an empty, non-nil key taken")
	}
}

// TestHandleVersion1Stale: a handle of the format before the MAC
// (version 1, as an earlier server made it) is stale, not resolved, and
// costs no walk.
func TestHandleVersion1Stale(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "f"))
	_, h := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	v2 := h.handle("f")
	for _, n := range []int{32, 40, 64} { // kind 2; kind 1 with 8 and 33 bytes
		v1 := make([]byte, n)
		copy(v1, v2[:26])
		v1[0] = 1
		mustStale(t, h, v1)
	}
	if w := h.dir.idx.walks; w != 0 {
		t.Fatalf("%d walks", w)
	}
	// Not the size of a version 1 handle: bad, as any other.
	mustBad(t, h, "a 4-byte handle starting with 1", []byte{1, 2, 0, 0})
}

// FuzzDecodeHandle: checkHandle and decodeHandle take any bytes without
// panicking; a handle decodeHandle takes is the one encodeBody makes of
// what it decoded (one encoding per handle), and checkHandle takes only
// handles whose MAC is the key's.
func FuzzDecodeHandle(f *testing.F) {
	key := mustKey(f, testKey(3))
	export := exportID{id: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, key: key}
	f.Add(encodeHandle(export, fileID{kind: fhKindInode, ino: 7, gen: 9}, 3))
	f.Add(encodeHandle(export, fileID{kind: fhKindKernel, ino: 7, ktype: 1, kfh: []byte{1, 2, 3, 4, 5, 6, 7, 8}}, 3))
	f.Add(encodeHandle(export, fileID{kind: fhKindKernel, ino: 7, ktype: 0x4d, kfh: bytes.Repeat([]byte{9}, fhKernelMax)}, 3))
	f.Add(append([]byte{1, 2}, make([]byte, 30)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, fh []byte) {
		checked := checkHandle(key, fh)
		e, id, parent, err := decodeHandle(fh)
		if err != nil {
			if !errors.Is(err, ErrBadHandle) {
				t.Fatalf("decodeHandle: %v", err)
			}
			return
		}
		body := encodeBody(e, id, parent)
		if !bytes.Equal(body, fh[:len(fh)-fhMACLen]) {
			t.Fatalf("decoded %+v, encoded again %x, was %x", id, body, fh)
		}
		mac := key.sum(body)
		if (checked == nil) != bytes.Equal(mac[:], fh[len(fh)-fhMACLen:]) {
			t.Fatalf("checkHandle = %v for a MAC of %x, the key's %x", checked, fh[len(fh)-fhMACLen:], mac)
		}
	})
}

// TestHandleKernelRoom: the room for the kernel's handle holds btrfs's
// (20 bytes, the largest of ext4, xfs, tmpfs and btrfs), and the kernel
// handles of the file systems here (the test's temporary directory, and
// /dev/shm, tmpfs) fit it and make kind 1 handles.
func TestHandleKernelRoom(t *testing.T) {
	if fhKernelMax < 20 {
		t.Fatalf("room for %d bytes of kernel handle, btrfs needs 20", fhKernelMax)
	}
	dirs := []string{t.TempDir()}
	if shm, err := os.MkdirTemp("/dev/shm", "handles-"); err == nil {
		t.Cleanup(func() { _ = os.RemoveAll(shm) })
		dirs = append(dirs, shm)
	}
	for _, dir := range dirs {
		writeFile(t, filepath.Join(dir, "f"))
		var sfs unix.Statfs_t
		if err := unix.Statfs(dir, &sfs); err != nil {
			t.Fatal(err)
		}
		fh, _, err := unix.NameToHandleAt(unix.AT_FDCWD, filepath.Join(dir, "f"), 0)
		if err != nil {
			t.Logf("%s (file system %#x): no kernel handle: %v", dir, sfs.Type, err)
			continue
		}
		if fh.Size() > fhKernelMax {
			t.Errorf("%s (file system %#x): a %d-byte kernel handle, room for %d", dir, sfs.Type, fh.Size(), fhKernelMax)
		}
		_, h := openHandler(t, dir, DirHandlerOptions{IndexOnly: true})
		if got := h.handle("f"); got[1] != fhKindKernel || len(got) > nfs3.FHSize {
			t.Errorf("%s: a handle of kind %d, %d bytes", dir, got[1], len(got))
		}
		t.Logf("%s (file system %#x): %d-byte kernel handle, %d-byte file handle", dir, sfs.Type, fh.Size(), len(h.handle("f")))
	}
}
