package server

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirConfined: every name the server resolves stays inside the root:
// ".." stops at the root; symbolic links resolve inside it whatever they
// say, an absolute one from the root as in a chroot; a name is looked up
// without following its last symbolic link where the server asks so
// (objectAt, the handles' files).
func TestDirConfined(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "export")
	outside := filepath.Join(base, "secret")
	writeFile(t, outside)
	writeFile(t, filepath.Join(root, "in"))
	for name, target := range map[string]string{
		"abs": outside, "rel": "../secret", "dir": base, "deep": "x/../../../secret", "rootabs": "/in",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	d, h := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	open := func(name string, flags int) (*os.File, error) {
		fd, err := d.openat(name, flags, 0)
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), name), nil
	}

	// ".." stops at the root.
	for _, name := range []string{"../secret", "/../../secret", "a/../../secret"} {
		if _, err := open(name, unix.O_RDONLY); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("openat(%q) = %v, want not exist", name, err)
		}
		if h.handle(name) != nil {
			t.Errorf("a handle for %q", name)
		}
	}
	if f, err := open("../in", unix.O_RDONLY); err != nil {
		t.Errorf("openat(../in) = %v", err)
	} else {
		_ = f.Close()
	}
	// Symbolic links resolve inside the root, whatever they say.
	for _, name := range []string{"abs", "rel", "deep", "dir/secret"} {
		for _, flags := range []int{unix.O_RDONLY, unix.O_WRONLY | unix.O_TRUNC, unix.O_PATH} {
			if f, err := open(name, flags); err == nil {
				b, _ := io.ReadAll(f)
				_ = f.Close()
				t.Errorf("openat(%q, %#x) reached outside the root (%q)", name, flags, b)
			}
		}
	}
	// An absolute link resolves from the root, as in a chroot.
	if f, err := open("rootabs", unix.O_RDONLY); err != nil {
		t.Errorf("openat(rootabs) = %v", err)
	} else if b, _ := io.ReadAll(f); string(b) != filepath.Join(root, "in") {
		t.Errorf("openat(rootabs) read %q", b)
	}
	// The handles' files: the link itself.
	o, err := h.objectAt("abs")
	if err != nil {
		t.Fatal(err)
	}
	if o.st.Mode&unix.S_IFMT != unix.S_IFLNK {
		t.Errorf("objectAt(abs) is not the link: mode %o", o.st.Mode)
	}
	o.close()
	if b, err := os.ReadFile(outside); err != nil || string(b) != outside {
		t.Fatalf("outside file changed: %q, %v", b, err)
	}
}

// TestDirReadDir: readDir lists a directory sorted by name, without "."
// and "..", with each entry's inode number and whether it is a directory
// (a symbolic link to one is not).
func TestDirReadDir(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a", "b", "file"))
	writeFile(t, filepath.Join(root, "a", "c"))
	if err := os.Symlink("b", filepath.Join(root, "a", "link")); err != nil {
		t.Fatal(err)
	}
	d, _ := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	ents, err := d.readDir("a")
	if err != nil {
		t.Fatal(err)
	}
	want := []dirent{
		{name: "b", ino: fileIno(t, filepath.Join(root, "a", "b")), dir: true},
		{name: "c", ino: fileIno(t, filepath.Join(root, "a", "c"))},
		{name: "link", ino: fileIno(t, filepath.Join(root, "a", "link"))},
	}
	if len(ents) != len(want) {
		t.Fatalf("readDir(a) = %+v", ents)
	}
	for i := range want {
		if ents[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, ents[i], want[i])
		}
	}
	if _, err := d.readDir("a/c"); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("readDir of a file: %v", err)
	}
	if _, err := d.readDir("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readDir of a missing name: %v", err)
	}
}
