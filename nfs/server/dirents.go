package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// Directory entries as getdents64(2) returns them: struct linux_dirent64
// records (include/linux/dirent.h), each
//
//	u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[] (NUL-terminated, padded)
//
// in the host's byte order. The inode number and the type come with the
// name, so a listing costs no stat of each entry, as knfsd's READDIR takes
// the fileid from the file system's readdir (d_ino).

// direntHead is the fixed part of a linux_dirent64, before d_name.
const direntHead = 19

// direntsBufSize is the buffer listDir reads entries into, per getdents64.
const direntsBufSize = 32 << 10

var direntsBufs = sync.Pool{New: func() any { b := make([]byte, direntsBufSize); return &b }}

// errDirent reports a getdents64 record that does not parse: a record
// length shorter than its fixed part or running past the data, or a name
// that is empty or not NUL-terminated within its record.
var errDirent = errors.New("nfs: malformed linux_dirent64 record")

// parseDirents calls fn for each record of buf, the bytes one getdents64
// returned, in order, "." and ".." included; it stops at the first record
// that does not parse (errDirent), having called fn for those before it.
// name is a copy.
func parseDirents(buf []byte, fn func(name string, ino uint64, typ uint8)) error {
	for len(buf) > 0 {
		if len(buf) < direntHead {
			return errDirent
		}
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen <= direntHead || reclen > len(buf) {
			return errDirent
		}
		name := buf[direntHead:reclen]
		end := bytes.IndexByte(name, 0)
		if end <= 0 {
			return errDirent
		}
		fn(string(name[:end]), binary.NativeEndian.Uint64(buf[0:8]), buf[18])
		buf = buf[reclen:]
	}
	return nil
}

// readDirents lists the directory open as fd (O_RDONLY) with getdents64,
// without "." and ".."; an entry whose type the file system does not give
// (DT_UNKNOWN) is typed by an fstatat, and left out if it is gone by then.
func readDirents(fd int) ([]dirent, error) {
	bp := direntsBufs.Get().(*[]byte)
	defer direntsBufs.Put(bp)
	var ents []dirent
	var untyped []int // indices into ents
	for {
		n, err := unix.Getdents(fd, *bp)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		err = parseDirents((*bp)[:n], func(name string, ino uint64, typ uint8) {
			if name == "." || name == ".." {
				return
			}
			if typ == unix.DT_UNKNOWN {
				untyped = append(untyped, len(ents))
			}
			ents = append(ents, dirent{name: name, ino: ino, dir: typ == unix.DT_DIR})
		})
		if err != nil {
			return nil, err
		}
	}
	return statUntyped(fd, ents, untyped)
}

// statUntyped types the entries ents[i], for each i of untyped, of the
// directory open as fd by an fstatat, and leaves out those gone by then.
func statUntyped(fd int, ents []dirent, untyped []int) ([]dirent, error) {
	gone := 0
	for _, i := range untyped {
		var st unix.Stat_t
		switch err := unix.Fstatat(fd, ents[i].name, &st, unix.AT_SYMLINK_NOFOLLOW); {
		case err == unix.ENOENT:
			ents[i].name, gone = "", gone+1
		case err != nil:
			return nil, err
		default:
			ents[i].dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
		}
	}
	if gone == 0 {
		return ents, nil
	}
	kept := ents[:0]
	for _, e := range ents {
		if e.name != "" {
			kept = append(kept, e)
		}
	}
	return kept, nil
}
