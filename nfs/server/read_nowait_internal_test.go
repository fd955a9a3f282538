package server

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestPreadNoWait: preadNoWait reads what the page cache holds, gives
// io.EOF at the file's end, and errWouldBlock for data the kernel would
// have to read from the disk (pages dropped with POSIX_FADV_DONTNEED; on
// tmpfs, which has no disk, data is always there).
func TestPreadNoWait(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 8192)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(t, os.WriteFile(name, data, 0o644))
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	fd := int(f.Fd())
	var sfs unix.Statfs_t
	require.NoError(t, unix.Fstatfs(fd, &sfs))

	require.NoError(t, f.Sync())
	require.NoError(t, unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED))
	buf := make([]byte, 4096)
	n, err := preadNoWait(fd, buf, 0, int64(len(data)))
	if sfs.Type == unix.TMPFS_MAGIC {
		require.NoError(t, err, "tmpfs")
	} else {
		require.ErrorIs(t, err, errWouldBlock, "pages dropped: %d bytes read", n)
	}

	_, err = os.ReadFile(name) // back in the page cache
	require.NoError(t, err)
	n, err = preadNoWait(fd, buf, 0, int64(len(data)))
	require.NoError(t, err)
	require.Equal(t, data[:4096], buf[:n])
	n, err = preadNoWait(fd, make([]byte, 8192), 4096, int64(len(data)))
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, 4096, n)
	n, err = preadNoWait(fd, buf, 8192, int64(len(data)))
	require.ErrorIs(t, err, io.EOF)
	require.Zero(t, n)
}
