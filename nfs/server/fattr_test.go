package server

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
)

// TestFattrOf: the fattr3 of a stat result (RFC 1813 §2.6) has its type,
// mode bits (set-id and sticky included), link count, owner, size, the
// bytes its 512-byte blocks take, device numbers, inode number and its
// own atime, mtime and ctime, for every file type, random and real.
func TestFattrOf(t *testing.T) {
	types := map[uint32]nfs3.FileType{
		unix.S_IFREG: nfs3.TypeReg, unix.S_IFDIR: nfs3.TypeDir, unix.S_IFLNK: nfs3.TypeLnk, unix.S_IFIFO: nfs3.TypeFIFO,
		unix.S_IFSOCK: nfs3.TypeSock, unix.S_IFCHR: nfs3.TypeChr, unix.S_IFBLK: nfs3.TypeBlk,
	}
	check := func(st *unix.Stat_t) {
		t.Helper()
		want := nfs3.Fattr{
			Type: types[st.Mode&unix.S_IFMT], Mode: st.Mode & 0o7777, Nlink: uint32(st.Nlink), UID: st.Uid, GID: st.Gid,
			Size: uint64(st.Size), Used: uint64(st.Blocks) * 512,
			Rdev:   nfs3.SpecData{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)},
			FileID: st.Ino,
			Atime:  nfs3.Time{Sec: uint32(st.Atim.Sec), Nsec: uint32(st.Atim.Nsec)},
			Mtime:  nfs3.Time{Sec: uint32(st.Mtim.Sec), Nsec: uint32(st.Mtim.Nsec)},
			Ctime:  nfs3.Time{Sec: uint32(st.Ctim.Sec), Nsec: uint32(st.Ctim.Nsec)},
		}
		require.Equal(t, want, fattrOf(st), "%+v", st)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []uint32{unix.S_IFREG, unix.S_IFDIR, unix.S_IFLNK, unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK}
	for i := range 2000 {
		st := unix.Stat_t{
			Mode:  kinds[i%len(kinds)] | rng.Uint32N(0o10000),
			Nlink: rng.Uint64N(1 << 31), Uid: rng.Uint32(), Gid: rng.Uint32(),
			Size: rng.Int64(), Blocks: rng.Int64N(1 << 40), Rdev: rng.Uint64(), Ino: rng.Uint64(), Dev: rng.Uint64(),
			Atim: unix.Timespec{Sec: rng.Int64N(1 << 32), Nsec: rng.Int64N(1e9)},
			Mtim: unix.Timespec{Sec: rng.Int64N(1 << 32), Nsec: rng.Int64N(1e9)},
			Ctim: unix.Timespec{Sec: rng.Int64N(1 << 32), Nsec: rng.Int64N(1e9)},
		}
		check(&st)
	}

	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(f, make([]byte, 10000), 0o755))
	require.NoError(t, os.Chmod(f, 0o755|os.ModeSetuid))
	atime, mtime := time.Unix(1_000_000_000, 111), time.Unix(1_100_000_000, 222)
	require.NoError(t, os.Chtimes(f, atime, mtime))
	require.NoError(t, os.Symlink("f", filepath.Join(dir, "l")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "p"), 0o600))
	for _, name := range []string{dir, f, filepath.Join(dir, "l"), filepath.Join(dir, "p"), "/dev/null"} {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(name, &st))
		check(&st)
	}
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(f, &st))
	a := fattrOf(&st)
	require.Equal(t, nfs3.TimeOf(atime), a.Atime, "atime is the file's own")
	require.Equal(t, nfs3.TimeOf(mtime), a.Mtime)
	require.NotEqual(t, a.Mtime, a.Ctime, "ctime is the file's own (the change of its times)")
	require.Equal(t, uint32(0o4755), a.Mode)
}
