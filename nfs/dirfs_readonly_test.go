package nfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5"
	"golang.org/x/sys/unix"
)

// TestDirReadOnly: a read-only Dir reads as before, reports no write
// capability (go-nfs then answers NFS3ERR_ROFS) and refuses every change
// with EROFS, leaving the directory as it was.
func TestDirReadOnly(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := DirFS(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetReadOnly()
	if billy.CapabilityCheck(d, billy.WriteCapability) {
		t.Error("a read-only Dir reports the write capability")
	}
	f, err := d.Open("f")
	if err != nil {
		t.Fatalf("opening for reading: %v", err)
	}
	_ = f.Close()
	sub, err := d.Chroot("d")
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]func() error{
		"create":   func() error { _, err := d.Create("g"); return err },
		"open rw":  func() error { _, err := d.OpenFile("f", os.O_RDWR, 0); return err },
		"truncate": func() error { _, err := d.OpenFile("f", os.O_WRONLY|os.O_TRUNC, 0); return err },
		"rename":   func() error { return d.Rename("f", "g") },
		"remove":   func() error { return d.Remove("f") },
		"link":     func() error { return d.Link("f", "g") },
		"symlink":  func() error { return d.Symlink("f", "g") },
		"mkdir":    func() error { return d.MkdirAll("e", 0o755) },
		"tempfile": func() error { _, err := d.TempFile("", "x"); return err },
		"chmod":    func() error { return d.Chmod("f", 0o600) },
		"chown":    func() error { return d.Chown("f", 1, 1) },
		"lchown":   func() error { return d.Lchown("f", 1, 1) },
		"chtimes":  func() error { return d.Chtimes("f", time.Now(), time.Now()) },
		"chroot create": func() error {
			_, err := sub.Create("g")
			return err
		},
	}
	for name, change := range changes {
		if err := change(); !errors.Is(err, unix.EROFS) {
			t.Errorf("%s on a read-only Dir: %v, want EROFS", name, err)
		}
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 {
		t.Errorf("the directory holds %d entries after refused changes, want 2", len(ents))
	}
	if data, _ := os.ReadFile(filepath.Join(root, "f")); string(data) != "data" {
		t.Errorf("f holds %q", data)
	}
}
