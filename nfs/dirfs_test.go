package nfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The method sets package nfs's LINK and COMMIT look for (defined
// elsewhere as nfs.Linker and nfs.Syncer); Dir must have them.
var (
	_ interface {
		Link(oldname, newname string) error
	} = (*Dir)(nil)
	_ interface{ Sync(path string) error } = (*Dir)(nil)
)

func TestDirConfined(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "export")
	outside := filepath.Join(base, "secret")
	writeFile(t, outside)
	writeFile(t, filepath.Join(root, "in"))
	for name, target := range map[string]string{
		"abs": outside, "rel": "../secret", "dir": base, "deep": "x/../../../secret",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	d, err := DirFS(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	// ".." stops at the root.
	for _, name := range []string{"../secret", "/../../secret", "a/../../secret"} {
		if _, err := d.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat(%q) = %v, want not exist", name, err)
		}
	}
	if fi, err := d.Stat("../in"); err != nil || fi.Name() != "in" {
		t.Errorf("Stat(../in) = %v, %v", fi, err)
	}
	// Symbolic links resolve inside the root, whatever they say.
	for _, name := range []string{"abs", "rel", "deep", "dir/secret"} {
		if f, err := d.Open(name); err == nil {
			b, _ := io.ReadAll(f)
			_ = f.Close()
			t.Errorf("Open(%q) read %q from outside the root", name, b)
		}
		if err := d.Chmod(name, 0o777); err == nil {
			t.Errorf("Chmod(%q) reached outside the root", name)
		}
		if err := d.Chtimes(name, timeZero, timeZero); err == nil {
			t.Errorf("Chtimes(%q) reached outside the root", name)
		}
		if err := d.Sync(name); err == nil {
			t.Errorf("Sync(%q) reached outside the root", name)
		}
		if _, err := d.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0); err == nil {
			t.Errorf("OpenFile(%q) reached outside the root", name)
		}
	}
	// An absolute link resolves from the root, as in a chroot.
	if err := os.Symlink("/in", filepath.Join(root, "rootabs")); err != nil {
		t.Fatal(err)
	}
	if fi, err := d.Stat("rootabs"); err != nil || fi.IsDir() {
		t.Errorf("Stat(rootabs) = %v, %v", fi, err)
	}
	if _, err := d.Stat("dir"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(dir) = %v, want not exist", err)
	}
	// Lstat, Readlink, Remove and Link act on the link itself.
	if fi, err := d.Lstat("abs"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("Lstat(abs) = %v, %v", fi, err)
	}
	if got, err := d.Readlink("abs"); err != nil || got != outside {
		t.Errorf("Readlink(abs) = %q, %v", got, err)
	}
	if err := d.Link("abs", "abs2"); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove("abs2"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != outside {
		t.Fatalf("outside file changed: %q, %v", b, err)
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o644 {
		t.Fatalf("outside file mode changed: %v", fi.Mode())
	}
}

func TestDirLinkSyncTempFile(t *testing.T) {
	root := t.TempDir()
	d, err := DirFS(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, err := d.Create("a/b/file")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	if f.Name() != "a/b/file" {
		t.Errorf("Name = %q", f.Name())
	}
	_ = f.Close()
	if err := d.Sync("a/b/file"); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync("a/b"); err != nil {
		t.Fatal(err)
	}
	if err := d.Link("a/b/file", "hard"); err != nil {
		t.Fatal(err)
	}
	if err := d.Link("a/b/file", "hard"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Link: %v, want exist", err)
	}
	fi, err := d.Lstat("hard")
	if err != nil || fi.Sys().(*fileInfoStat).Nlink != 2 {
		t.Fatalf("Lstat(hard) = %v, %v", fi, err)
	}
	tf, err := d.TempFile("a", "tmp-")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tf.Name(), "a/tmp-") {
		t.Errorf("TempFile name %q", tf.Name())
	}
	_ = tf.Close()
	if _, err := os.Stat(filepath.Join(root, tf.Name())); err != nil {
		t.Error(err)
	}
	ents, err := d.ReadDir("a")
	if err != nil || len(ents) != 2 || ents[0].Name() != "b" || !ents[0].IsDir() {
		t.Errorf("ReadDir(a) = %v, %v", ents, err)
	}
	sub, err := d.Chroot("a")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.(*Dir).Close()
	if _, err := sub.Stat("../../hard"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Chroot escape: %v", err)
	}
	if _, err := sub.Stat("b/file"); err != nil {
		t.Error(err)
	}
	if err := d.Remove("a/b"); err == nil {
		t.Error("Remove of a non-empty directory")
	}
	if err := d.MkdirAll("a/b/c/d", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove("a/b/c/d"); err != nil {
		t.Fatal(err)
	}
}

var timeZero = time.Unix(0, 0)
