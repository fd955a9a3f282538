package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExportSet: an exports file's directories are opened once and kept
// across reloads while listed; a reload that fails (a bad line, a
// directory that is not there) changes nothing and names the line.
func TestExportSet(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	require.NoError(t, os.Mkdir(a, 0o755))
	require.NoError(t, os.Mkdir(b, 0o755))
	file := filepath.Join(base, "exports")
	write := func(s string) { require.NoError(t, os.WriteFile(file, []byte(s), 0o644)) }

	x := &exportSet{file: file}
	defer x.close()
	write(a + " 127.0.0.1(rw)\n" + b + " *(ro)\n")
	exps, err := x.load()
	require.NoError(t, err)
	require.Len(t, exps, 2)
	require.Equal(t, a, exps[0].Path)
	require.Len(t, exps[0].Rules, 1)
	ha := exps[0].Handler
	x.keep(exps)

	write(a + " 10.0.0.0/8(ro)\n")
	exps, err = x.load()
	require.NoError(t, err)
	require.Len(t, exps, 1)
	require.Same(t, ha, exps[0].Handler, "an export kept keeps its handler")
	x.keep(exps)
	require.Len(t, x.open, 1, "the export removed is closed")

	write(a + " 10.0.0.0/8(ro)\n" + filepath.Join(base, "missing") + " *(rw)\n")
	_, err = x.load()
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), ":2:"), "the line: %v", err)
	write("relative *(rw)\n")
	_, err = x.load()
	require.ErrorContains(t, err, "exports:1:")
	require.Len(t, x.open, 1, "failed reloads open nothing")
}
