package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCachedObject: a directory a call worked in (openDir) is in the
// open-file cache, and the next openObject of its handle is the cached
// descriptor, its name the index's hint; after a rename on the server's
// disk, path finds the directory's new name (LOOKUP and READDIR of ".."
// go by it); once it is removed, its handle is stale.
func TestCachedObject(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
		_, h := openHandler(t, root, opt)
		fh := h.handle("a/b")
		require.NotNil(t, fh)

		o, err := h.openDir(fh)
		require.NoError(t, err)
		require.Nil(t, o.of, "the first open: not cached yet")
		o.close()
		require.True(t, h.files.cached(fh), "openDir cached the directory")

		o, err = h.openObject(fh)
		require.NoError(t, err)
		require.NotNil(t, o.of, "the second open: the cached descriptor")
		require.True(t, o.nameHint)
		p, err := o.path()
		require.NoError(t, err)
		require.Equal(t, "a/b", p)
		o.close()

		require.NoError(t, os.Rename(filepath.Join(root, "a"), filepath.Join(root, "c")))
		o, err = h.openObject(fh)
		require.NoError(t, err)
		require.NotNil(t, o.of)
		p, err = o.path()
		require.NoError(t, err)
		require.Equal(t, "c/b", p, "the name after a rename on the server's disk")
		o.close()

		require.NoError(t, os.Remove(filepath.Join(root, "c", "b")))
		_, err = h.openObject(fh)
		require.True(t, errors.Is(err, ErrStaleHandle), "a removed directory's handle: %v", err)
		require.False(t, h.files.cached(fh), "a removed directory leaves the cache")
	})
}
