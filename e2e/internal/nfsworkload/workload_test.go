package nfsworkload

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The workload on a local directory: it must pass on a file system that
// behaves, so that a failure on an NFS mount is the mount's.
func TestWorkloadLocal(t *testing.T) {
	dir := t.TempDir()
	sums := Files(t, dir, 1)
	Verify(t, dir, sums)
	if ops := Exercise(t, dir, 300*time.Millisecond, 2); ops == 0 {
		t.Fatal("the exerciser ran no operation")
	}
	BigDir(t, dir, 500)
	if os.Geteuid() == 0 { // chown needs root
		Namespace(t, dir)
	}
	src := filepath.Join(dir, "tree")
	MakeTree(t, src, 3)
	CopyTree(t, src, filepath.Join(dir, "copy"))
}

// Verify notices a changed byte.
func TestVerifyDetectsCorruption(t *testing.T) {
	dir := t.TempDir()
	sums := Files(t, dir, 1)
	f, err := os.OpenFile(filepath.Join(dir, "file-4096"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{'!'}, 100); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	ft := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }()
		Verify(ft, dir, sums)
	}()
	if !ft.failed {
		t.Fatal("Verify did not notice a changed byte")
	}
}

type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
