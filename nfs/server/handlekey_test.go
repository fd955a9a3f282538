package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestLoadHandleKey: a missing key file is made (its directories too),
// 32 random bytes, mode 0600, no temporary file left; loaded again, the
// same key, not created.
func TestLoadHandleKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "rdma-nfsd")
	name := filepath.Join(dir, "handle-key")
	key, created, err := LoadHandleKey(name)
	if err != nil || !created {
		t.Fatalf("LoadHandleKey = %v, created %v", err, created)
	}
	if len(key) != HandleKeySize || bytes.Equal(key, make([]byte, HandleKeySize)) {
		t.Fatalf("key %x", key)
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode() != 0o600 || fi.Size() != HandleKeySize {
		t.Fatalf("key file: %v, %v", fi.Mode(), err)
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("its directory: %v, %v", di.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %d files, want the key alone", len(ents))
	}
	onDisk, _ := os.ReadFile(name)
	if !bytes.Equal(onDisk, key) {
		t.Fatalf("file holds %x, key %x", onDisk, key)
	}
	again, created, err := LoadHandleKey(name)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("loaded again: %x, created %v, %v; want %x", again, created, err, key)
	}
	// Another file, another key.
	other, _, err := LoadHandleKey(filepath.Join(dir, "other"))
	if err != nil || bytes.Equal(other, key) {
		t.Fatalf("a second key file: %x, %v", other, err)
	}
}

// TestLoadHandleKeyRace: processes starting at once share one key file:
// every caller gets the key that is in the file.
func TestLoadHandleKeyRace(t *testing.T) {
	name := filepath.Join(t.TempDir(), "handle-key")
	const n = 8
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { keys[i], _, errs[i] = LoadHandleKey(name) })
	}
	wg.Wait()
	onDisk, _ := os.ReadFile(name)
	for i := range n {
		if errs[i] != nil || !bytes.Equal(keys[i], onDisk) {
			t.Fatalf("caller %d: %x, %v; the file holds %x", i, keys[i], errs[i], onDisk)
		}
	}
}

// TestLoadHandleKeyRefused: a key file others may read or write, of
// another size, of another owner or not a regular file is refused with an
// error that names it and says why, and left as it was.
func TestLoadHandleKeyRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		mode os.FileMode
		want string
	}{
		{"group-readable", testKey(1), 0o640, "mode 0640"},
		{"world-readable", testKey(1), 0o604, "mode 0604"},
		{"group-writable", testKey(1), 0o620, "mode 0620"},
		{"short", testKey(1)[:31], 0o600, "31 bytes, want 32"},
		{"long", append(testKey(1), 0), 0o600, "33 bytes, want 32"},
		{"empty", nil, 0o600, "0 bytes, want 32"},
	} {
		name := filepath.Join(dir, tc.name)
		if err := os.WriteFile(name, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, tc.mode); err != nil {
			t.Fatal(err)
		}
		key, _, err := LoadHandleKey(name)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %x, %v; want an error naming the file and %q", tc.name, key, err, tc.want)
		}
		if got, _ := os.ReadFile(name); !bytes.Equal(got, tc.data) {
			t.Errorf("%s: the file changed", tc.name)
		}
		if fi, _ := os.Stat(name); fi.Mode() != tc.mode {
			t.Errorf("%s: mode changed to %v", tc.name, fi.Mode())
		}
	}
	if _, _, err := LoadHandleKey(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}

	// Another user's file: as root, one chowned away; else one of root's.
	foreign := "/etc/passwd"
	if os.Geteuid() == 0 {
		foreign = filepath.Join(dir, "foreign")
		if err := os.WriteFile(foreign, testKey(1), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := LoadHandleKey(foreign); err == nil || !strings.Contains(err.Error(), "owned by uid") {
		t.Errorf("a file of another user: %v", err)
	}
}
