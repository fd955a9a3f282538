package server

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// deepTree makes a chain of directories below root whose path is longer
// than PATH_MAX, through directory descriptors (no single system call
// could name its bottom), and returns the chain's name relative to root.
func deepTree(t *testing.T, root string) string {
	t.Helper()
	comp := strings.Repeat("d", 200)
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	require.NoError(t, err)
	var parts []string
	for len(strings.Join(parts, "/")) <= unix.PathMax+300 {
		require.NoError(t, unix.Mkdirat(fd, comp, 0o755))
		next, err := unix.Openat(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		require.NoError(t, err)
		_ = unix.Close(fd)
		fd = next
		parts = append(parts, comp)
	}
	ffd, err := unix.Openat(fd, "file", unix.O_CREAT|unix.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, _ = unix.Write(ffd, []byte("deep"))
	_ = unix.Close(ffd)
	// A symbolic link at the bottom that points far above the root.
	require.NoError(t, unix.Symlinkat(strings.Repeat("../", len(parts)+5)+"etc", fd, "up"))
	_ = unix.Close(fd)
	return strings.Join(parts, "/")
}

// TestDirDeeperThanPathMax: a file whose name below the root is longer
// than PATH_MAX is opened, identified and listed like any other, and a
// symbolic link down there still stays inside the root.
func TestDirDeeperThanPathMax(t *testing.T) {
	root := t.TempDir()
	deep := deepTree(t, root)
	require.Greater(t, len(deep), unix.PathMax)
	d, h := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	file := deep + "/file"

	o, err := h.objectAt(file)
	require.NoError(t, err)
	assert.Equal(t, int64(4), o.st.Size)
	o.close()
	fd, err := d.openat(file, unix.O_RDONLY, 0)
	require.NoError(t, err)
	buf := make([]byte, 8)
	n, err := unix.Read(fd, buf)
	_ = unix.Close(fd)
	require.NoError(t, err)
	assert.Equal(t, "deep", string(buf[:n]))
	ents, err := d.readDir(deep)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.name)
	}
	assert.Equal(t, []string{"file", "up"}, names)

	// The link down there resolves inside the root: /etc is not reached.
	_, err = d.openat(deep+"/up/passwd", unix.O_RDONLY, 0)
	assert.True(t, errors.Is(err, fs.ErrNotExist), "openat through the deep link: %v", err)
	_, err = os.Stat(filepath.Join(root, "etc"))
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// TestHandleDeeperThanPathMax: handles of a file and a directory deeper
// than PATH_MAX resolve, after a restart too (when no name of them is
// indexed).
func TestHandleDeeperThanPathMax(t *testing.T) {
	handleModes(t, func(t *testing.T, opt DirHandlerOptions) {
		root := t.TempDir()
		deep := deepTree(t, root)
		_, h := openHandler(t, root, opt)
		fh := h.handle(deep + "/file")
		dh := h.handle(deep)
		require.NotNil(t, fh)
		require.NotNil(t, dh)
		mustResolve(t, h, fh, deep+"/file")
		_, h2 := openHandler(t, root, opt) // a restart: an empty index
		mustResolve(t, h2, fh, deep+"/file")
		mustResolve(t, h2, dh, deep)
	})
}
