package nfs

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	gonfs "github.com/willscott/go-nfs"
	"golang.org/x/sys/unix"
)

// TestStatFileAttr: the attributes built from a stat result are go-nfs's
// (ToFileAttribute of the same result as an os.FileInfo), field for
// field, for every file type, set-id bits, device numbers and times,
// random and real.
func TestStatFileAttr(t *testing.T) {
	types := []uint32{unix.S_IFREG, unix.S_IFDIR, unix.S_IFLNK, unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK}
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(st *unix.Stat_t) {
		t.Helper()
		want := gonfs.ToFileAttribute(newFileInfo("name", st), "/some/path")
		require.Equal(t, want, statFileAttr(st), "%+v", st)
		fi := newFileInfo("name", st)
		require.Equal(t, want, fi.attr())
		require.Equal(t, want, fileAttr(fi, "/some/path"))
		require.Equal(t, want.Fileid, statFileID(fi, "/some/path"))
	}
	for i := range 2000 {
		st := unix.Stat_t{
			Mode:  types[i%len(types)] | rng.Uint32N(0o10000),
			Nlink: rng.Uint64N(1 << 33), Uid: rng.Uint32(), Gid: rng.Uint32(),
			Size: rng.Int64(), Rdev: rng.Uint64(), Ino: rng.Uint64(), Dev: rng.Uint64(),
			Atim: unix.Timespec{Sec: rng.Int64N(1 << 40), Nsec: rng.Int64N(1e9)},
			Mtim: unix.Timespec{Sec: rng.Int64N(1<<40) - 1<<39, Nsec: rng.Int64N(1e9)},
			Ctim: unix.Timespec{Sec: rng.Int64N(1 << 40), Nsec: rng.Int64N(1e9)},
		}
		check(&st)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o4755))
	require.NoError(t, os.Symlink("f", filepath.Join(dir, "l")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "p"), 0o600))
	for _, name := range []string{dir, filepath.Join(dir, "f"), filepath.Join(dir, "l"), filepath.Join(dir, "p"), "/dev/null"} {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(name, &st))
		check(&st)
	}
	// Not one of ours: go-nfs's own answer.
	info, err := os.Lstat(filepath.Join(dir, "f"))
	require.NoError(t, err)
	require.Equal(t, gonfs.ToFileAttribute(info, "f"), fileAttr(info, "f"))
}
