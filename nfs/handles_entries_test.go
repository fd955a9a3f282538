package nfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDirEntries: the handles and attributes READDIRPLUS takes through one
// descriptor of the directory are those ToHandle and Lstat give, in the
// root and in a subdirectory, for files, directories and symbolic links;
// the names are indexed (a handle resolves without a walk); a missing
// entry is fs.ErrNotExist, and names that are not one component are
// refused.
func TestDirEntries(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "sub", "deeper"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"a", "sub/b"} {
			if err := os.WriteFile(filepath.Join(root, f), []byte(f), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("../outside", filepath.Join(root, "sub", "link")); err != nil {
			t.Fatal(err)
		}
		d, h := openHandler(t, root, opt)
		for _, dir := range []string{".", "sub"} {
			de, err := h.openEntries(dir)
			if err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(filepath.Join(root, dir))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				name := filepath.Join(dir, e.Name())
				fi, fh, err := de.entry(e.Name())
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if want := h.ToHandle(d, splitPath(name)); !bytes.Equal(fh, want) {
					t.Errorf("%s: handle %x, ToHandle %x", name, fh, want)
				}
				lfi, err := d.Lstat(name)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode() != lfi.Mode() || fi.Size() != lfi.Size() || !fi.ModTime().Equal(lfi.ModTime()) ||
					fi.Name() != lfi.Name() {
					t.Errorf("%s: attributes %v %d %v, Lstat %v %d %v", name, fi.Mode(), fi.Size(), fi.ModTime(),
						lfi.Mode(), lfi.Size(), lfi.ModTime())
				}
			}
			if _, _, err := de.entry("missing"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("missing entry: %v", err)
			}
			for _, bad := range []string{"", ".", "..", "sub/b"} {
				if _, _, err := de.entry(bad); err == nil {
					t.Errorf("entry(%q) did not fail", bad)
				}
			}
			de.close()
		}

		// A fresh handler knows the names READDIRPLUS gave out.
		_, h2 := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
		de, err := h2.openEntries("sub")
		if err != nil {
			t.Fatal(err)
		}
		defer de.close()
		_, fh, err := de.entry("b")
		if err != nil {
			t.Fatal(err)
		}
		if name, ok := h2.dir.idx.lookup(fileIno(t, filepath.Join(root, "sub", "b"))); !ok || name != "sub/b" {
			t.Errorf("index: %q, %v", name, ok)
		}
		if _, p, err := h2.FromHandle(fh); err != nil || filepath.Join(p...) != "sub/b" {
			t.Errorf("FromHandle: %v, %v", p, err)
		}
	})
}

func fileIno(t *testing.T, name string) uint64 {
	t.Helper()
	fi, err := os.Lstat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}
