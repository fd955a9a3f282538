package server

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirEntries: the handles and attributes READDIRPLUS takes through one
// descriptor of the directory are those handle and lstat(2) give, in the
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
		_, h := openHandler(t, root, opt)
		for _, dir := range []string{".", "sub"} {
			do, err := h.objectAt(dir)
			if err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(filepath.Join(root, dir))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				name := filepath.Join(dir, e.Name())
				var st unix.Stat_t
				fh, err := h.entry(do, e.Name(), &st)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if want := h.handle(name); !bytes.Equal(fh, want) {
					t.Errorf("%s: handle %x, handle %x", name, fh, want)
				}
				var lst unix.Stat_t
				if err := unix.Lstat(filepath.Join(root, name), &lst); err != nil {
					t.Fatal(err)
				}
				if fattrOf(&st) != fattrOf(&lst) {
					t.Errorf("%s: attributes %+v, lstat %+v", name, fattrOf(&st), fattrOf(&lst))
				}
			}
			var st unix.Stat_t
			if _, err := h.entry(do, "missing", &st); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("missing entry: %v", err)
			}
			for _, bad := range []string{"", ".", "..", "sub/b"} {
				if _, err := h.entry(do, bad, &st); err == nil {
					t.Errorf("entry(%q) did not fail", bad)
				}
			}
			do.close()
		}

		// A fresh handler knows the names READDIRPLUS gave out.
		_, h2 := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
		do, err := h2.objectAt("sub")
		if err != nil {
			t.Fatal(err)
		}
		defer do.close()
		var st unix.Stat_t
		fh, err := h2.entry(do, "b", &st)
		if err != nil {
			t.Fatal(err)
		}
		if name, ok := h2.dir.idx.lookup(fileIno(t, filepath.Join(root, "sub", "b"))); !ok || name != "sub/b" {
			t.Errorf("index: %q, %v", name, ok)
		}
		if name, err := h2.resolve(fh); err != nil || name != "sub/b" {
			t.Errorf("resolve: %q, %v", name, err)
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
