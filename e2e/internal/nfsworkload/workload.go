// Package nfsworkload is the file workload the end-to-end tests run on an
// NFS mount (the Linux kernel client's, of our server or of knfsd): files of
// many sizes checked by checksum, a random read/write/truncate exerciser
// checked against an in-memory model, a large directory, the namespace
// operations (rename, hard link, symlink, attributes, remove), and a tree
// copied in and out. It knows nothing of NFS: every check is on what the
// mount shows through ordinary system calls.
package nfsworkload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// FileSizes are the sizes Files writes: empty, around the 1024 and 4096
// inline thresholds and a page, a 64 KiB chunk, and larger files that take
// many READs and WRITEs.
var FileSizes = []int{0, 1, 1023, 1024, 1025, 4095, 4096, 4097, 65536, 65537, 1<<20 + 3, 8 << 20}

// Sums maps a file's name to the SHA-256 of its contents.
type Sums map[string]string

// Files writes one file of each of FileSizes into dir, with contents drawn
// from seed, and returns their checksums.
func Files(t testing.TB, dir string, seed uint64) Sums {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	sums := Sums{}
	for _, n := range FileSizes {
		name := "file-" + strconv.Itoa(n)
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatalf("writing %s: %v", name, err)
		}
		sums[name] = sum(data)
	}
	return sums
}

// Verify reads every file of sums in dir and compares its checksum.
func Verify(t testing.TB, dir string, sums Sums) {
	t.Helper()
	for name, want := range sums {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		if got := sum(data); got != want {
			t.Fatalf("%s (%d bytes): checksum %s, want %s", name, len(data), got, want)
		}
	}
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Exercise runs random reads, writes and truncates on a few files in dir for
// d, checking every read, and every file at the end, against an in-memory
// model of what the files must hold. It returns the number of operations.
func Exercise(t testing.TB, dir string, d time.Duration, seed uint64) int {
	t.Helper()
	const files, maxSize = 4, 3 << 20
	rng := rand.New(rand.NewPCG(seed, 0xe7e7))
	model := make([][]byte, files)
	fds := make([]*os.File, files)
	for i := range fds {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("exercise-%d", i)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fds[i] = f
	}
	ops := 0
	for deadline := time.Now().Add(d); time.Now().Before(deadline); ops++ {
		i := rng.IntN(files)
		f := fds[i]
		switch op := rng.IntN(10); {
		case op < 4: // write
			off := rng.IntN(maxSize)
			n := 1 + rng.IntN(min(maxSize-off, 256<<10))
			data := make([]byte, n)
			for k := range data {
				data[k] = byte(rng.Uint32())
			}
			if _, err := f.WriteAt(data, int64(off)); err != nil {
				t.Fatalf("op %d: write %d bytes at %d of file %d: %v", ops, n, off, i, err)
			}
			if need := off + n; need > len(model[i]) {
				model[i] = append(model[i], make([]byte, need-len(model[i]))...)
			}
			copy(model[i][off:], data)
		case op < 8: // read
			off := rng.IntN(maxSize)
			n := 1 + rng.IntN(256<<10)
			got := make([]byte, n)
			k, err := f.ReadAt(got, int64(off))
			if err != nil && err != io.EOF {
				t.Fatalf("op %d: read %d bytes at %d of file %d: %v", ops, n, off, i, err)
			}
			want := []byte{}
			if off < len(model[i]) {
				want = model[i][off:min(off+n, len(model[i]))]
			}
			if !bytes.Equal(got[:k], want) {
				t.Fatalf("op %d: read %d bytes at %d of file %d: got %d bytes that differ from the model's %d", ops, n, off, i, k, len(want))
			}
		case op < 9: // truncate
			n := rng.IntN(maxSize)
			if err := f.Truncate(int64(n)); err != nil {
				t.Fatalf("op %d: truncate file %d to %d: %v", ops, i, n, err)
			}
			if n < len(model[i]) {
				model[i] = model[i][:n]
			} else {
				model[i] = append(model[i], make([]byte, n-len(model[i]))...)
			}
		default: // sync: data reaches the server
			if err := f.Sync(); err != nil {
				t.Fatalf("op %d: fsync file %d: %v", ops, i, err)
			}
		}
	}
	for i, f := range fds {
		got, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, model[i]) {
			t.Fatalf("file %d: %d bytes at the end differ from the model's %d", i, len(got), len(model[i]))
		}
	}
	return ops
}

// BigDir creates n empty files in a new directory under dir, lists it and
// checks that every name comes back exactly once, then removes it.
func BigDir(t testing.TB, dir string, n int) {
	t.Helper()
	d := filepath.Join(dir, "bigdir")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("entry-%05d-with-a-longer-name", i)
		f, err := os.Create(filepath.Join(d, want[i]))
		if err != nil {
			t.Fatalf("creating entry %d: %v", i, err)
		}
		_ = f.Close()
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(ents))
	for i, e := range ents {
		got[i] = e.Name()
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("listing %d entries: got %d names, first differences %v", n, len(got), firstDiff(got, want))
	}
	if err := os.RemoveAll(d); err != nil {
		t.Fatal(err)
	}
}

func firstDiff(got, want []string) []string {
	var d []string
	for i := 0; i < max(len(got), len(want)) && len(d) < 4; i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			d = append(d, fmt.Sprintf("[%d] %q vs %q", i, g, w))
		}
	}
	return d
}

// Namespace checks rename, hard link, symlink and readlink, chmod, chown and
// utimes, remove and rmdir in a new directory under dir.
func Namespace(t testing.TB, dir string) {
	t.Helper()
	d := filepath.Join(dir, "ns")
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must(os.MkdirAll(filepath.Join(d, "sub"), 0o755), "mkdir")
	a, b := filepath.Join(d, "a"), filepath.Join(d, "sub", "b")
	must(os.WriteFile(a, []byte("contents of a"), 0o644), "create a")

	must(os.Rename(a, b), "rename a to sub/b")
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatalf("a still exists after rename: %v", err)
	}
	expect(t, b, "contents of a")

	l := filepath.Join(d, "link")
	must(os.Link(b, l), "hard link")
	expect(t, l, "contents of a")
	var st syscall.Stat_t
	must(syscall.Stat(b, &st), "stat b")
	if st.Nlink != 2 {
		t.Fatalf("nlink of a hard-linked file = %d, want 2", st.Nlink)
	}

	s := filepath.Join(d, "symlink")
	must(os.Symlink("sub/b", s), "symlink")
	target, err := os.Readlink(s)
	must(err, "readlink")
	if target != "sub/b" {
		t.Fatalf("readlink = %q, want sub/b", target)
	}
	expect(t, s, "contents of a")

	must(os.Chmod(b, 0o600), "chmod")
	must(os.Chown(b, 1234, 5678), "chown")
	mtime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	must(os.Chtimes(b, mtime, mtime), "utimes")
	fi, err := os.Stat(b)
	must(err, "stat after setattr")
	must(syscall.Stat(b, &st), "stat after setattr")
	if fi.Mode().Perm() != 0o600 || st.Uid != 1234 || st.Gid != 5678 || !fi.ModTime().Equal(mtime) {
		t.Fatalf("after chmod/chown/utimes: mode %v uid %d gid %d mtime %v", fi.Mode(), st.Uid, st.Gid, fi.ModTime())
	}

	must(os.Remove(s), "remove symlink")
	must(os.Remove(l), "remove link")
	must(os.Remove(b), "remove b")
	must(os.Remove(filepath.Join(d, "sub")), "rmdir sub")
	must(os.Remove(d), "rmdir ns")
}

func expect(t testing.TB, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if string(got) != want {
		t.Fatalf("%s holds %q, want %q", path, got, want)
	}
}

// MakeTree writes a tree of directories and files of various sizes under
// root, for CopyTree.
func MakeTree(t testing.TB, root string, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x7e3e))
	for d := range 6 {
		dir := filepath.Join(root, fmt.Sprintf("d%d", d), fmt.Sprintf("e%d", d%3))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range 8 {
			data := make([]byte, rng.IntN(200<<10))
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", f)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// CopyTree copies src to dst with cp -r and checks that dst holds the same
// tree: the same names and the same contents.
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -r %s %s: %v: %s", src, dst, err, out)
	}
	a, b := TreeSums(t, src), TreeSums(t, dst)
	if len(a) != len(b) {
		t.Fatalf("cp -r: %d files in the copy, %d in the source", len(b), len(a))
	}
	for name, s := range a {
		if b[name] != s {
			t.Fatalf("cp -r: %s differs in the copy", name)
		}
	}
}

// TreeSums returns the checksum of every regular file under root, by path
// relative to root.
func TreeSums(t testing.TB, root string) Sums {
	t.Helper()
	sums := Sums{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		sums[rel] = sum(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}
