package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMkdirMvRm: mkdir (-p makes parents and accepts a directory that
// exists), mv (RENAME, into a directory as mv(1)), rm (-r for a
// directory and what it holds; the export's root refused); errors name
// the export's paths from its root.
func TestMkdirMvRm(t *testing.T) {
	dir, flags := testServer(t)

	must(t, flags, "mkdir", "/a", ":b")
	require.DirExists(t, filepath.Join(dir, "a"))
	require.DirExists(t, filepath.Join(dir, "b"))
	_, _, err := rdmaNFS(t, flags, "mkdir", "/a")
	require.ErrorIs(t, err, os.ErrExist)
	_, _, err = rdmaNFS(t, flags, "mkdir", "/x/y/z")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "mkdir /x/y/z:")
	must(t, flags, "mkdir", "-p", "/x/y/z", "/a")
	require.DirExists(t, filepath.Join(dir, "x", "y", "z"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x", "f"), []byte("f"), 0o644))
	_, _, err = rdmaNFS(t, flags, "mkdir", "-p", "/x/f/g")
	require.ErrorContains(t, err, "mkdir /x/f: not a directory")

	must(t, flags, "mv", "/x/f", "/x/g")
	require.NoFileExists(t, filepath.Join(dir, "x", "f"))
	require.FileExists(t, filepath.Join(dir, "x", "g"))
	must(t, flags, "mv", "/x/g", "/a") // into the directory
	require.FileExists(t, filepath.Join(dir, "a", "g"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b", "old"), []byte("old"), 0o644))
	must(t, flags, "mv", "/a/g", "/b/old") // over a file
	got, err := os.ReadFile(filepath.Join(dir, "b", "old"))
	require.NoError(t, err)
	require.Equal(t, "f", string(got))
	_, _, err = rdmaNFS(t, flags, "mv", "/nope", "/b")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "rename /nope:")

	_, _, err = rdmaNFS(t, flags, "rm", "/x")
	require.ErrorContains(t, err, "rm: /x is a directory (use -r)")
	require.DirExists(t, filepath.Join(dir, "x", "y", "z"))
	for i := range 1000 { // more than one READDIRPLUS page
		require.NoError(t, os.WriteFile(filepath.Join(dir, "x", "y", "z", fmt.Sprintf("file-with-a-longish-name-%04d", i)), nil, 0o644))
	}
	require.NoError(t, os.Symlink("nowhere", filepath.Join(dir, "x", "y", "link")))
	must(t, flags, "rm", "-r", "/x", "/b/old")
	require.Equal(t, []string{"a", "b"}, entries(t, dir))
	require.Empty(t, entries(t, filepath.Join(dir, "b")))
	_, _, err = rdmaNFS(t, flags, "rm", "-r", "/")
	require.ErrorContains(t, err, "refusing to remove the export's root")
	_, _, err = rdmaNFS(t, flags, "rm", "/a")
	require.ErrorContains(t, err, "rm: /a is a directory (use -r)", "as rm(1), even empty")
	must(t, flags, "rm", "-r", "/a")
	require.Equal(t, []string{"b"}, entries(t, dir))
}
