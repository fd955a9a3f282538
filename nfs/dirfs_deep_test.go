package nfs

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
// than PATH_MAX is stat'ed, changed, linked, renamed and listed like any
// other, and a symbolic link down there still stays inside the root.
func TestDirDeeperThanPathMax(t *testing.T) {
	root := t.TempDir()
	deep := deepTree(t, root)
	require.Greater(t, len(deep), unix.PathMax)
	d, err := DirFS(root)
	require.NoError(t, err)
	defer d.Close()
	file := deep + "/file"

	fi, err := d.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, int64(4), fi.Size())
	require.NoError(t, d.Chmod(file, 0o600))
	require.NoError(t, d.Lchown(file, 1234, 1234))
	f, err := d.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	fi, err = d.Lstat(file)
	require.NoError(t, err)
	st := fi.Sys().(*fileInfoStat)
	assert.Equal(t, [4]uint32{0o600, 1234, 1234, 0}, [4]uint32{st.Mode & 0o7777, st.Uid, st.Gid, uint32(st.Size)})

	require.NoError(t, d.Link(file, deep+"/link"))
	require.NoError(t, d.Rename(deep+"/link", "top"))
	fi, err = d.Stat("top")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), uint64(fi.Sys().(*fileInfoStat).Nlink))
	infos, err := d.ReadDir(deep)
	require.NoError(t, err)
	var names []string
	for _, fi := range infos {
		names = append(names, fi.Name())
	}
	assert.ElementsMatch(t, []string{"file", "up"}, names)

	// The link down there resolves inside the root: /etc is not reached.
	_, err = d.Stat(deep + "/up/passwd")
	assert.True(t, errors.Is(err, fs.ErrNotExist), "Stat through the deep link: %v", err)
	require.NoError(t, d.Remove(file))
	_, err = os.Stat(filepath.Join(root, "top"))
	require.NoError(t, err)
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
