package gonfsd_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-rpcrdma/rpcrdma/e2e/internal/gonfsd"
	"github.com/stretchr/testify/require"
)

func TestDirFS(t *testing.T) {
	dir := t.TempDir()
	fs := gonfsd.NewDirFS(dir)
	require.Equal(t, dir, fs.Root())

	f, err := fs.Create("a/b/file")
	require.NoError(t, err)
	require.Equal(t, "a/b/file", f.Name(), "the name as given: go-nfs looks it up again")
	_, err = f.Write([]byte("hello world"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(5))
	require.NoError(t, f.Lock())
	require.NoError(t, f.Unlock())
	require.NoError(t, f.Close())
	got, err := os.ReadFile(filepath.Join(dir, "a", "b", "file"))
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))

	f, err = fs.Open("a/b/file")
	require.NoError(t, err)
	p := make([]byte, 3)
	_, err = f.ReadAt(p, 2)
	require.NoError(t, err)
	require.Equal(t, "llo", string(p))
	require.NoError(t, f.Close())

	fi, err := fs.Stat("a/b/file")
	require.NoError(t, err)
	require.EqualValues(t, 5, fi.Size())
	require.NoError(t, fs.Chmod("a/b/file", 0o600))
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, fs.Chtimes("a/b/file", mtime, mtime))
	fi, err = fs.Lstat("a/b/file")
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.True(t, fi.ModTime().Equal(mtime))
	require.NoError(t, fs.Chown("a/b/file", os.Getuid(), os.Getgid()))
	require.NoError(t, fs.Lchown("a/b/file", os.Getuid(), os.Getgid()))

	require.NoError(t, fs.Symlink("file", "a/b/link"))
	target, err := fs.Readlink("a/b/link")
	require.NoError(t, err)
	require.Equal(t, "file", target)
	require.NoError(t, fs.Rename("a/b/file", "a/moved"))
	require.NoError(t, fs.MkdirAll("a/c/d", 0o755))
	ents, err := fs.ReadDir("a")
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	require.Equal(t, []string{"b", "c", "moved"}, names)

	tmp, err := fs.TempFile("a/c", "tmp")
	require.NoError(t, err)
	require.Equal(t, "a/c", filepath.Dir(tmp.Name()), "TempFile names are relative to the root")
	require.NoError(t, tmp.Close())
	require.NoError(t, fs.Remove(tmp.Name()))

	sub, err := fs.Chroot("a")
	require.NoError(t, err)
	f, err = sub.Open("moved")
	require.NoError(t, err)
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
	require.NoError(t, f.Close())
	require.Equal(t, "x/y", fs.Join("x", "y"))

	_, err = fs.Stat("nothing")
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = fs.ReadDir("nothing")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorIs(t, fs.Remove("nothing"), os.ErrNotExist)
	_, err = fs.TempFile("nothing", "x")
	require.ErrorIs(t, err, os.ErrNotExist)
}

// Names cannot climb out of the root: ".." stops at it.
func TestDirFSConfined(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	require.NoError(t, os.Mkdir(root, 0o755))
	fs := gonfsd.NewDirFS(root)
	for _, name := range []string{"../escape", "/../../escape", "a/../../escape"} {
		f, err := fs.Create(name)
		require.NoError(t, err, name)
		require.NoError(t, f.Close())
		_, err = os.Stat(filepath.Join(root, "escape"))
		require.NoError(t, err, "%s lands inside the root", name)
		_, err = os.Stat(filepath.Join(parent, "escape"))
		require.ErrorIs(t, err, os.ErrNotExist, "%s escaped", name)
	}
	var _ billy.Change = fs // go-nfs applies SETATTR through it
}

// TestDirFSLink: Link makes a hard link.
func TestDirFSLink(t *testing.T) {
	dir := t.TempDir()
	fs := gonfsd.NewDirFS(dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644))
	require.NoError(t, fs.Link("a", "/b"))
	a, err := os.Stat(filepath.Join(dir, "a"))
	require.NoError(t, err)
	b, err := os.Stat(filepath.Join(dir, "b"))
	require.NoError(t, err)
	require.True(t, os.SameFile(a, b))
	require.ErrorIs(t, fs.Link("a", "b"), os.ErrExist)
}
