package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// benchFiles is the size of BenchmarkHandles' export: files, in
// benchDirs directories.
const (
	benchFiles = 100_000
	benchDirs  = 100
)

// makeBenchTree creates benchFiles empty files in benchDirs directories
// under root, with openat and close alone, and returns their names.
func makeBenchTree(b *testing.B, root string) []string {
	b.Helper()
	names := make([]string, 0, benchFiles)
	for d := range benchDirs {
		dir := fmt.Sprintf("d%03d", d)
		if err := unix.Mkdir(filepath.Join(root, dir), 0o755); err != nil {
			b.Fatal(err)
		}
		dfd, err := unix.Open(filepath.Join(root, dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		for i := range benchFiles / benchDirs {
			name := fmt.Sprintf("f%05d", i)
			fd, err := unix.Openat(dfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			_ = unix.Close(fd)
			names = append(names, dir+"/"+name)
		}
		_ = unix.Close(dfd)
	}
	return names
}

// BenchmarkHandles resolves handles on an export of 100,000 files (index
// only, as a server without CAP_DAC_READ_SEARCH): Forged, a handle of an
// inode never issued with a MAC made without the key, another one each
// time, refused (NFS3ERR_BADHANDLE) without a walk; Genuine, a handle the
// server issued, found in its index; FirstAfterRestart, the first genuine
// handle a new handler gets, which costs the walk of the export that the
// index needs (what every forged handle cost before handles had a MAC).
func BenchmarkHandles(b *testing.B) {
	root := b.TempDir()
	names := makeBenchTree(b, root)
	opt := DirHandlerOptions{IndexOnly: true, HandleKey: testKey(9)}
	_, h := openHandler(b, root, opt)
	genuine := make([][]byte, 0, 1024)
	for i := 0; i < len(names); i += len(names) / cap(genuine) {
		genuine = append(genuine, h.handle(names[i]))
	}
	// Handles as genuine ones look, of inodes far from any, under a
	// forger's key.
	forger := exportID{id: h.export.id, key: mustKey(b, testKey(10))}
	forged := make([][]byte, len(genuine))
	for i, fh := range genuine {
		_, id, parent, err := decodeHandle(fh)
		if err != nil {
			b.Fatal(err)
		}
		id.ino += 1<<40 + uint64(i)
		forged[i] = encodeHandle(forger, id, parent)
	}

	b.Run("Forged", func(b *testing.B) {
		before := h.dir.idx.walks
		i := 0
		for b.Loop() {
			if _, err := h.resolve(forged[i%len(forged)]); !errors.Is(err, ErrBadHandle) {
				b.Fatalf("forged handle: %v", err)
			}
			i++
		}
		if w := h.dir.idx.walks - before; w != 0 {
			b.Fatalf("%d walks for forged handles", w)
		}
	})
	b.Run("Genuine", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := h.resolve(genuine[i%len(genuine)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("FirstAfterRestart", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			d, err := DirFS(root)
			if err != nil {
				b.Fatal(err)
			}
			fresh, err := NewDirHandler(d, opt)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := fresh.resolve(genuine[len(genuine)/2]); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if fresh.dir.idx.walks != 1 {
				b.Fatalf("%d walks, want 1", fresh.dir.idx.walks)
			}
			_ = d.Close()
			b.StartTimer()
		}
	})
}
