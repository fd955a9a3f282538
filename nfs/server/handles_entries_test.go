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
				checkEntry(t, h, root, do, dir, e.Name(), filepath.Join(dir, e.Name()))
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

// TestDirEntriesCached: an entry's handle is cached under its inode's
// number and change time: listed again it is the same (a cache hit, one
// fstatat), with fresh attributes; a file renamed over the name gives
// the new file's handle (another inode: a miss), and a file whose
// attributes changed keeps its handle with the new attributes.
func TestDirEntriesCached(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root, h, do := filesRoot(t, opt, "a", "b", "new")
		// hit: 1 a cache hit, 0 not, -1 either (a change of attributes
		// within a tick of the file system's clock keeps the ctime).
		check := func(what, name string, hit int) []byte {
			t.Helper()
			hits := h.entries.hits
			fh := checkEntry(t, h, root, do, ".", name, what)
			if got := h.entries.hits > hits; hit >= 0 && got != (hit == 1) {
				t.Errorf("%s: a cache hit %v, want %v", what, got, hit == 1)
			}
			return fh
		}
		a := check("a, first", "a", 0)
		b := check("b, first", "b", 0)
		if !bytes.Equal(check("a, again", "a", 1), a) {
			t.Error("a listed again: another handle")
		}
		if err := os.Chmod(filepath.Join(root, "b"), 0o600); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(check("b after chmod", "b", -1), b) {
			t.Error("b after chmod: another handle")
		}
		if err := os.Rename(filepath.Join(root, "new"), filepath.Join(root, "a")); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(check("a renamed over", "a", 0), a) {
			t.Error("a renamed over: the replaced file's handle")
		}
	})
}

// checkEntry calls entry for base in do, the directory dir below root,
// and checks the handle against one made afresh (freshHandle) and the
// attributes against lstat's; it returns the handle. what names the case
// in failures.
func checkEntry(t *testing.T, h *DirHandler, root string, do *object, dir, base, what string) []byte {
	t.Helper()
	name := filepath.Join(dir, base)
	var st unix.Stat_t
	fh, err := h.entry(do, base, &st)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if want := freshHandle(t, h, do, base); !bytes.Equal(fh, want) {
		t.Errorf("%s: handle %x, made afresh %x", what, fh, want)
	}
	var lst unix.Stat_t
	if err := unix.Lstat(filepath.Join(root, name), &lst); err != nil {
		t.Fatal(err)
	}
	if fattrOf(&st) != fattrOf(&lst) {
		t.Errorf("%s: attributes %+v, lstat %+v", what, fattrOf(&st), fattrOf(&lst))
	}
	return fh
}

// freshHandle makes the handle of the entry base of directory do as
// handleOf makes one it has not cached: from the entry's descriptor.
func freshHandle(t *testing.T, h *DirHandler, do *object, base string) []byte {
	t.Helper()
	fd, err := unix.Openat(do.fd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	id, err := fdIdentity(fd, &st)
	if err != nil {
		t.Fatal(err)
	}
	return encodeHandle(h.export, id, do.st.Ino)
}

// TestHandleOfCached: the handle of a file opened by name (a LOOKUP's,
// handleOf) is the entry handles' when they have it: made once, then a
// cache hit, the same bytes as made afresh; a file renamed over the name
// has its own (another inode: a miss).
func TestHandleOfCached(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root, h, do := filesRoot(t, opt, "a", "new")
		handle := func(what string, hit bool) []byte {
			t.Helper()
			hits := h.entries.hits
			fh := h.handle("a")
			if got := h.entries.hits > hits; got != hit {
				t.Errorf("%s: a cache hit %v, want %v", what, got, hit)
			}
			if want := freshHandle(t, h, do, "a"); !bytes.Equal(fh, want) {
				t.Errorf("%s: handle %x, made afresh %x", what, fh, want)
			}
			return fh
		}
		a := handle("a, first", false)
		if !bytes.Equal(handle("a, again", true), a) {
			t.Error("a again: another handle")
		}
		if err := os.Rename(filepath.Join(root, "new"), filepath.Join(root, "a")); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(handle("a renamed over", false), a) {
			t.Error("a renamed over: the replaced file's handle")
		}
	})
}

// filesRoot makes a directory with the files names (each holding its
// name), opens a DirHandler on it with opt, and returns the directory,
// the handler and its root as an object (closed at the test's end).
func filesRoot(t *testing.T, opt DirHandlerOptions, names ...string) (string, *DirHandler, *object) {
	t.Helper()
	root := t.TempDir()
	for _, f := range names {
		if err := os.WriteFile(filepath.Join(root, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, h := openHandler(t, root, opt)
	do, err := h.objectAt(".")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(do.close)
	return root, h, do
}
