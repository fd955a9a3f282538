package server

import (
	"path"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
)

// object is the file a handle names, open as an O_PATH descriptor that
// was checked to be that file, or the open-file cache's descriptor of it:
// the procedures work through it (and through /proc/self/fd for the calls
// that take a name), so that they reach the file the handle names
// whatever its depth, and never another that took its name.
type object struct {
	dh *DirHandler // of its export
	fd int
	// of is the open-file cache's entry whose descriptor fd is (close
	// gives it back), nil if fd is the object's own.
	of   *openFile
	st   unix.Stat_t // its attributes when opened
	name string      // below the export's root, "." for the root
	// nameHint: name is the handle index's, not checked (an object from
	// the open-file cache): a rename on the server's disk may have made
	// it stale. path checks it.
	nameHint bool
	fh       []byte
}

// openObject opens the file of fh. Errors are ErrStaleHandle,
// ErrForeignHandle and ErrBadHandle (statusOf maps them).
//
// A file in the open-file cache (a directory a LOOKUP, CREATE or REMOVE
// worked in, a file being read or written) is its cached descriptor, an
// fstat away, where resolving the handle costs opening its name twice
// (to check it, and to open it); the descriptor pins the inode, so it is
// the handle's file, and a link count of zero makes the handle stale.
func (h *DirHandler) openObject(fh []byte) (*object, error) {
	if o, err := h.cachedObject(fh); o != nil || err != nil {
		return o, err
	}
	name, err := h.resolve(fh)
	if err != nil {
		return nil, err
	}
	_, id, _, _ := decodeHandle(fh) // resolve decoded it
	fd, err := h.dir.openat(name, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, ErrStaleHandle
	}
	o := &object{dh: h, fd: fd, name: name, fh: fh}
	got, err := fdIdentity(fd, &o.st)
	if err != nil || !got.equal(id) || (o.st.Nlink == 0 && !o.isDir()) {
		o.close()
		return nil, ErrStaleHandle // the name was taken by another file since
	}
	return o, nil
}

// openDir is openObject for a handle that must name a directory
// (NFS3ERR_NOTDIR otherwise), which it puts in the open-file cache.
func (h *DirHandler) openDir(fh []byte) (*object, error) {
	o, err := h.openObject(fh)
	if err != nil {
		return nil, err
	}
	if !o.isDir() {
		o.close()
		return nil, nfs3.ErrNotDir
	}
	if o.of == nil {
		h.cacheDir(fh, o) // the next call in it (a create after a create) finds it
	}
	return o, nil
}

// cachedObject returns fh's object through its open-file cache
// descriptor; nil and no error if it has none, or if its name is not in
// the handle index (openObject then resolves the handle).
func (h *DirHandler) cachedObject(fh []byte) (*object, error) {
	of := h.files.get(fh, false)
	if of == nil {
		return nil, nil
	}
	o := &object{dh: h, fd: of.fd, of: of, fh: fh, nameHint: true}
	if err := h.statOpen(fh, of, &o.st); err != nil {
		h.files.put(of)
		return nil, err
	}
	if o.st.Ino == h.root.ino {
		o.name, o.nameHint = ".", false
		return o, nil
	}
	name, ok := h.dir.idx.lookup(o.st.Ino)
	if !ok {
		h.files.put(of)
		return nil, nil
	}
	o.name = name
	return o, nil
}

// close releases o's descriptor: closed, or given back to the cache.
func (o *object) close() {
	if o.of != nil {
		o.dh.files.put(o.of)
		return
	}
	_ = unix.Close(o.fd)
}

// path returns o's name below the export's root, checked to be o's file
// if it is the index's hint (nameHint): for the procedures that go by
// name from it (LOOKUP and READDIR of "..").
func (o *object) path() (string, error) {
	if !o.nameHint {
		return o.name, nil
	}
	_, id, _, err := decodeHandle(o.fh)
	if err != nil {
		return "", err
	}
	if o.dh.check(o.name, id) {
		o.nameHint = false
		return o.name, nil
	}
	o.dh.dir.idx.forget(id.ino, o.name)
	name, err := o.dh.resolve(o.fh)
	if err != nil {
		return "", err
	}
	o.name, o.nameHint = name, false
	return name, nil
}

func (o *object) isDir() bool { return o.st.Mode&unix.S_IFMT == unix.S_IFDIR }

// proc is the /proc/self/fd name of the descriptor: a name that reaches
// the file itself for the system calls that take names (chmod, utimes,
// access, open), short whatever the file's depth.
func (o *object) proc() string { return "/proc/self/fd/" + strconv.Itoa(o.fd) }

// child is the name below the root of the entry base of directory o.
func (o *object) child(base string) string {
	if o.name == "." {
		return base
	}
	return path.Join(o.name, base)
}

// attr returns the attributes o had when opened.
func (o *object) attr() nfs3.PostOpAttr { return nfs3.PostOpAttr{Set: true, Attr: o.dh.fattr(&o.st)} }

// fresh returns o's attributes now (none if they cannot be read).
func (o *object) fresh() nfs3.PostOpAttr {
	var st unix.Stat_t
	if unix.Fstat(o.fd, &st) != nil {
		return nfs3.PostOpAttr{}
	}
	return nfs3.PostOpAttr{Set: true, Attr: o.dh.fattr(&st)}
}

// wcc returns o's wcc_data (RFC 1813 §2.6): its size and times when
// opened, its attributes now.
func (o *object) wcc() nfs3.WccData {
	return nfs3.WccData{Before: preOpOf(&o.st), After: o.fresh()}
}

// fattrOf returns the fattr3 (RFC 1813 §2.6) of st: its type and mode
// (with the setuid, setgid and sticky bits), real atime, mtime and ctime,
// and the bytes used by its blocks; its fsid is 0 (DirHandler.fattr
// gives the export's).
func fattrOf(st *unix.Stat_t) nfs3.Fattr {
	return nfs3.Fattr{
		Type:   fileTypeOf(st.Mode),
		Mode:   st.Mode & 0o7777,
		Nlink:  uint32(st.Nlink),
		UID:    st.Uid,
		GID:    st.Gid,
		Size:   uint64(st.Size),
		Used:   uint64(st.Blocks) * 512,
		Rdev:   nfs3.SpecData{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)},
		FileID: st.Ino,
		Atime:  timeOf(st.Atim),
		Mtime:  timeOf(st.Mtim),
		Ctime:  timeOf(st.Ctim),
	}
}

// preOpOf returns the pre_op_attr of st.
func preOpOf(st *unix.Stat_t) nfs3.PreOpAttr {
	return nfs3.PreOpAttr{Set: true, Attr: nfs3.WccAttr{Size: uint64(st.Size), Mtime: timeOf(st.Mtim), Ctime: timeOf(st.Ctim)}}
}

func timeOf(ts unix.Timespec) nfs3.Time {
	return nfs3.Time{Sec: uint32(ts.Sec), Nsec: uint32(ts.Nsec)}
}

// fileTypeOf is the ftype3 of a stat mode.
func fileTypeOf(mode uint32) nfs3.FileType {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return nfs3.TypeDir
	case unix.S_IFLNK:
		return nfs3.TypeLnk
	case unix.S_IFCHR:
		return nfs3.TypeChr
	case unix.S_IFBLK:
		return nfs3.TypeBlk
	case unix.S_IFSOCK:
		return nfs3.TypeSock
	case unix.S_IFIFO:
		return nfs3.TypeFIFO
	}
	return nfs3.TypeReg
}
