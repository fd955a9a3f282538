package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestKeptListing: a listing resumed (cookie past the start) of a directory
// that has not changed is the kept one; one that starts (cookie 0), or
// resumes after a create changed the directory's times, reads the
// directory again and sees the new name.
func TestKeptListing(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(root, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, h := openHandler(t, root, DirHandlerOptions{})
	list := func(cookie uint64) []dirEntry {
		t.Helper()
		dir, err := h.objectAt(".")
		if err != nil {
			t.Fatal(err)
		}
		defer dir.close()
		l, err := h.listing(dir, cookie)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := list(0)
	if len(first) != 2 {
		t.Fatalf("listing %v, want a and b", first)
	}
	if again := list(cookieFirst + 1); &again[0] != &first[0] {
		t.Error("a resumed listing of an unchanged directory was read again")
	}
	if fresh := list(0); &fresh[0] == &first[0] {
		t.Error("a listing from cookie 0 reused the kept one")
	}
	if err := os.WriteFile(filepath.Join(root, "c"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Directory times have the kernel's clock granularity (a create in
	// the same tick as the last change leaves them): set mtime apart.
	if err := os.Chtimes(root, time.Unix(1, 0), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if l := list(cookieFirst + 1); len(l) != 3 {
		t.Errorf("listing after a create resumed with %d names, want 3 (a kept listing of a changed directory)", len(l))
	}
}
