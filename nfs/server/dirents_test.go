package server

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// appendDirent appends a linux_dirent64 record as the kernel lays it out
// (its length a multiple of 8).
func appendDirent(b []byte, ino uint64, typ uint8, name string) []byte {
	reclen := (direntHead + len(name) + 1 + 7) &^ 7
	rec := make([]byte, reclen)
	binary.NativeEndian.PutUint64(rec[0:8], ino)
	binary.NativeEndian.PutUint64(rec[8:16], uint64(len(b)+reclen))
	binary.NativeEndian.PutUint16(rec[16:18], uint16(reclen))
	rec[18] = typ
	copy(rec[direntHead:], name)
	return append(b, rec...)
}

type parsedDirent struct {
	name string
	ino  uint64
	typ  uint8
}

func parseAll(buf []byte) ([]parsedDirent, error) {
	var got []parsedDirent
	err := parseDirents(buf, func(name string, ino uint64, typ uint8) {
		got = append(got, parsedDirent{name, ino, typ})
	})
	return got, err
}

// TestParseDirents: records parse to their names, inode numbers and types;
// every prefix of a valid buffer parses to the records it holds whole and
// fails (errDirent) if it cuts one; malformed records fail without a
// panic or a loop.
func TestParseDirents(t *testing.T) {
	want := []parsedDirent{{".", 2, unix.DT_DIR}, {"..", 1, unix.DT_DIR}, {"file", 12, unix.DT_REG},
		{"a-longer-name-of-a-link", 1 << 40, unix.DT_LNK}, {"x", 13, unix.DT_UNKNOWN}}
	var buf []byte
	var ends []int
	for _, d := range want {
		buf = appendDirent(buf, d.ino, d.typ, d.name)
		ends = append(ends, len(buf))
	}
	got, err := parseAll(buf)
	require.NoError(t, err)
	require.Equal(t, want, got)
	for n := range len(buf) {
		whole := 0
		for whole < len(ends) && ends[whole] <= n {
			whole++
		}
		got, err := parseAll(buf[:n])
		boundary := 0
		if whole > 0 {
			boundary = ends[whole-1]
		}
		if n != boundary {
			require.ErrorIs(t, err, errDirent, "prefix of %d bytes", n)
		} else {
			require.NoError(t, err, "prefix of %d bytes", n)
		}
		if whole == 0 {
			require.Empty(t, got, "prefix of %d bytes", n)
		} else {
			require.Equal(t, want[:whole], got, "prefix of %d bytes", n)
		}
	}
	bad := func(what string, f func(rec []byte)) {
		rec := appendDirent(nil, 5, unix.DT_REG, "name")
		f(rec)
		_, err := parseAll(rec)
		require.ErrorIs(t, err, errDirent, what)
	}
	bad("record length 0", func(r []byte) { binary.NativeEndian.PutUint16(r[16:18], 0) })
	bad("record length of the fixed part", func(r []byte) { binary.NativeEndian.PutUint16(r[16:18], direntHead) })
	bad("record length past the data", func(r []byte) { binary.NativeEndian.PutUint16(r[16:18], uint16(len(r)+8)) })
	bad("an empty name", func(r []byte) { clear(r[direntHead:]) })
	bad("a name without its NUL", func(r []byte) {
		for i := direntHead; i < len(r); i++ {
			r[i] = 'n'
		}
	})
}

// FuzzParseDirents: any bytes parse or fail with errDirent, and every
// name given is non-empty and holds no NUL.
func FuzzParseDirents(f *testing.F) {
	f.Add(appendDirent(appendDirent(nil, 2, unix.DT_DIR, "."), 9, unix.DT_REG, "file"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, buf []byte) {
		got, err := parseAll(buf)
		if err != nil && err != errDirent {
			t.Fatalf("error %v", err)
		}
		for _, d := range got {
			if d.name == "" || len(d.name) > len(buf) {
				t.Fatalf("name %q", d.name)
			}
			for i := range len(d.name) {
				if d.name[i] == 0 {
					t.Fatalf("name %q holds a NUL", d.name)
				}
			}
		}
	})
}

// TestReadDirents: a directory's entries with their inode numbers and
// kinds, as lstat gives them, over more than one getdents64 buffer; the
// entries whose type must be found by fstatat are typed, and left out if
// gone.
func TestReadDirents(t *testing.T) {
	root := t.TempDir()
	want := map[string]bool{} // name: a directory
	for i := range 600 {      // more than one 32 KiB buffer of records
		name := filepath.Join(root, "a-name-of-forty-bytes-or-so-"+strconv.Itoa(i))
		if i%7 == 0 {
			require.NoError(t, os.Mkdir(name, 0o755))
		} else {
			require.NoError(t, os.WriteFile(name, nil, 0o644))
		}
		want[filepath.Base(name)] = i%7 == 0
	}
	require.NoError(t, os.Symlink("nowhere", filepath.Join(root, "link")))
	want["link"] = false
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	ents, err := readDirents(fd)
	require.NoError(t, err)
	require.Len(t, ents, len(want))
	for _, e := range ents {
		isDir, ok := want[e.name]
		require.True(t, ok, "entry %q", e.name)
		require.Equal(t, isDir, e.dir, "entry %q: a directory", e.name)
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(filepath.Join(root, e.name), &st))
		require.Equal(t, st.Ino, e.ino, "entry %q: inode number", e.name)
	}

	// Untyped entries: typed by fstatat, the gone one left out.
	untyped := []dirent{{name: ents[0].name, ino: ents[0].ino}, {name: "gone", ino: 1}, {name: "link", ino: 2, dir: true}}
	for _, e := range ents {
		if e.dir {
			untyped[0] = dirent{name: e.name, ino: e.ino}
			break
		}
	}
	typed, err := statUntyped(fd, untyped, []int{0, 1, 2})
	require.NoError(t, err)
	require.Len(t, typed, 2)
	require.True(t, typed[0].dir, "a directory typed by fstatat")
	require.Equal(t, "link", typed[1].name)
	require.False(t, typed[1].dir, "a symbolic link is not followed")
}
