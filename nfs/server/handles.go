package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server/exports"
	"golang.org/x/sys/unix"
)

// File handles of a DirHandler (at most NFS3_FHSIZE, 64 bytes; big-endian):
//
//	[0]      version, 2
//	[1]      kind: 1 the kernel's file handle, 2 inode and generation
//	[2:10]   export id: SHA-256 of the export's fsid (DirHandlerOptions.FSID),
//	         or without one of the file system id and the root's identity
//	[10:18]  inode number
//	[18:26]  inode number of the directory the handle was made in (a hint)
//	kind 1:  [26:30] kernel handle type, [30] its length n, [31:31+n]
//	         kernel handle (1 to 21 bytes)
//	kind 2:  [26:30] inode generation (FS_IOC_GETVERSION, 0 if unknown)
//	then zeros up to a multiple of 4 bytes, m bytes in all (32 to 52),
//	[m:m+12] MAC: the first 12 bytes of HMAC-SHA256 of bytes [0:m] under
//	         the handle key (DirHandlerOptions.HandleKey).
//
// A handle is 44 to 64 bytes. The length is a multiple of 4, so that the
// handle needs no XDR padding: a decoder that skips no padding after a
// handle (go-nfs-client's xdr.ReadOpaque, for one) still reads the
// arguments after it right.
//
// The 21 bytes of kernel handle hold what name_to_handle_at(2) gives on
// the file systems an export usually lies on: ext4 8 bytes (inode and
// generation), xfs 8 or 12 (12 with 64-bit inode numbers), tmpfs 12,
// btrfs 20 (object id, root id, generation). A larger one (overlayfs, for
// one) makes a kind 2 handle, as does a file system without export
// support.
//
// The MAC is what lets resolve refuse a handle the server did not make
// at the cost of one HMAC, before any lookup, index access or system
// call: without it, a well-formed handle naming an unknown inode would
// cost a walk of the whole export. 12 bytes (96 bits) leave room for
// btrfs's 20-byte kernel handles, where 16 would not, and make a forgery
// a matter of about 2^95 calls, each a network round trip; 8 bytes would
// leave a client sending 10^6 calls a second for a year a chance of about
// 2 in a million.
//
// Nothing in a handle is a counter or a cache slot, so handles survive a
// server restart (under the same handle key) and never go stale for lack
// of room. Version 1 handles (without a MAC, made before version 2) are
// stale.
const (
	fhVersion     = 2
	fhVersion1    = 1
	fhKindKernel  = 1
	fhKindInode   = 2
	fhHeader      = 26
	fhKernelLen   = fhHeader + 4
	fhKernelStart = fhKernelLen + 1
	fhMACLen      = 12
	fhKernelMax   = nfs3.FHSize - fhMACLen - fhKernelStart
	fhMin         = fhKernelLen + 2 + fhMACLen // a kind 2 handle: 30 bytes padded to 32, and the MAC
)

// fsIocGetVersion is FS_IOC_GETVERSION, _IOR('v', 1, long).
const fsIocGetVersion = 0x80007601 | (strconv.IntSize/8)<<16

// Errors of a handle the DirHandler cannot resolve: the Server answers
// NFS3ERR_STALE to a handle of a file that is gone or of another export,
// NFS3ERR_BADHANDLE to one it did not make (RFC 1813 §2.6).
var (
	ErrStaleHandle   = errors.New("nfs: stale file handle")
	ErrForeignHandle = errors.New("nfs: file handle of another export")
	ErrBadHandle     = errors.New("nfs: malformed file handle")
)

// fileID is what a handle says about a file, without the export and the
// parent hint.
type fileID struct {
	kind  byte
	ino   uint64
	ktype int32
	kfh   []byte
	gen   uint32
}

func (a fileID) equal(b fileID) bool {
	return a.kind == b.kind && a.ino == b.ino && a.ktype == b.ktype && bytes.Equal(a.kfh, b.kfh) && a.gen == b.gen
}

// identify returns the identity of name (not following a last symbolic
// link), the inode of its directory (0 for the root) and whether it is a
// directory.
func (d *Dir) identify(name string) (id fileID, parent uint64, dir bool, err error) {
	dirfd, base, err := d.parent(name)
	if err != nil {
		return fileID{}, 0, false, pathErr("identify", name, err)
	}
	defer unix.Close(dirfd)
	if base != "." {
		var pst unix.Stat_t
		if err := unix.Fstat(dirfd, &pst); err != nil {
			return fileID{}, 0, false, pathErr("identify", name, err)
		}
		parent = pst.Ino
	}
	fd, err := unix.Openat(dirfd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fileID{}, 0, false, pathErr("identify", name, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if id, err = fdIdentity(fd, &st); err != nil {
		return fileID{}, 0, false, pathErr("identify", name, err)
	}
	return id, parent, st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// identity returns the identity of name (not following a last symbolic
// link) without its directory's: one openat2 instead of two descriptors,
// for checking a name against a handle.
func (d *Dir) identity(name string) (fileID, error) {
	fd, err := d.openat(name, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fileID{}, pathErr("identify", name, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	id, err := fdIdentity(fd, &st)
	if err != nil {
		return fileID{}, pathErr("identify", name, err)
	}
	return id, nil
}

// kernelID is the identity of the file ino whose kernel file handle is
// fh, if the handle fits one of ours.
func kernelID(fh unix.FileHandle, ino uint64) (fileID, bool) {
	if fh.Size() <= 0 || fh.Size() > fhKernelMax {
		return fileID{}, false
	}
	return fileID{kind: fhKindKernel, ino: ino, ktype: fh.Type(), kfh: fh.Bytes()}, true
}

// fdIdentity returns the identity of the file fd (an O_PATH descriptor)
// and fills st with its attributes: the kernel's file handle when it has
// one that fits, else the inode and its generation.
func fdIdentity(fd int, st *unix.Stat_t) (fileID, error) {
	if err := unix.Fstat(fd, st); err != nil {
		return fileID{}, err
	}
	return identityOf(fd, st), nil
}

// identityOf is fdIdentity for a file whose attributes st already holds.
func identityOf(fd int, st *unix.Stat_t) fileID {
	if fh, _, err := unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH); err == nil {
		if id, ok := kernelID(fh, st.Ino); ok {
			return id
		}
	}
	id := fileID{kind: fhKindInode, ino: st.Ino}
	if t := st.Mode & unix.S_IFMT; t == unix.S_IFREG || t == unix.S_IFDIR {
		if rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			if g, err := unix.IoctlGetUint32(rfd, fsIocGetVersion); err == nil {
				id.gen = g
			}
			_ = unix.Close(rfd)
		}
	}
	return id
}

// encodeHandle lays out a handle of export for id made in directory
// parent, sealed with export's key.
func encodeHandle(export exportID, id fileID, parent uint64) []byte {
	b := encodeBody(export.id, id, parent)
	mac := export.key.sum(b)
	return append(b, mac[:]...)
}

// encodeBody lays out a handle without its MAC, with room for it.
func encodeBody(export [8]byte, id fileID, parent uint64) []byte {
	b := make([]byte, fhKernelLen, nfs3.FHSize)
	b[0], b[1] = fhVersion, id.kind
	copy(b[2:10], export[:])
	binary.BigEndian.PutUint64(b[10:18], id.ino)
	binary.BigEndian.PutUint64(b[18:26], parent)
	if id.kind == fhKindKernel {
		binary.BigEndian.PutUint32(b[26:30], uint32(id.ktype))
		b = append(b, byte(len(id.kfh)))
		b = append(b, id.kfh...)
	} else {
		binary.BigEndian.PutUint32(b[26:30], id.gen)
	}
	return append(b, make([]byte, -len(b)&3)...)
}

// padded4 is n rounded up to a multiple of 4.
func padded4(n int) int { return (n + 3) &^ 3 }

// Errors of checkHandle, made once: a forged handle costs no allocation.
var (
	errHandleSize  = fmt.Errorf("%w: not 44 to 64 bytes in multiples of 4", ErrBadHandle)
	errHandleVer   = fmt.Errorf("%w: unknown version", ErrBadHandle)
	errHandleMAC   = fmt.Errorf("%w: its MAC does not match (not made by this server, or under another handle key)", ErrBadHandle)
	errHandleOldV1 = fmt.Errorf("%w: a version 1 handle, made by an earlier server before handles carried a MAC", ErrStaleHandle)
)

// checkHandle checks fh's size, version and MAC under key, and nothing
// else: what resolve does before anything else. A version 1 handle is
// stale (a handle this server's predecessor made); any other failure is
// ErrBadHandle.
func checkHandle(key *handleKey, fh []byte) error {
	if len(fh) >= padded4(fhKernelLen) && len(fh) <= nfs3.FHSize && len(fh)&3 == 0 && fh[0] == fhVersion1 {
		return errHandleOldV1 // 32 to 64 bytes, as version 1 handles were
	}
	if len(fh) < fhMin || len(fh) > nfs3.FHSize || len(fh)&3 != 0 {
		return errHandleSize
	}
	if fh[0] != fhVersion {
		return errHandleVer
	}
	if !key.verify(fh[:len(fh)-fhMACLen], fh[len(fh)-fhMACLen:]) {
		return errHandleMAC
	}
	return nil
}

// decodeHandle parses a handle, without checking its MAC (checkHandle).
// It allocates nothing: id.kfh is a piece of fh, so an id kept beyond the
// call (whose message fh is in) must copy it.
func decodeHandle(fh []byte) (export [8]byte, id fileID, parent uint64, err error) {
	if len(fh) < fhMin || len(fh) > nfs3.FHSize || len(fh)&3 != 0 || fh[0] != fhVersion {
		return export, id, 0, fmt.Errorf("%w: %d bytes", ErrBadHandle, len(fh))
	}
	body := fh[:len(fh)-fhMACLen]
	copy(export[:], body[2:10])
	id = fileID{kind: body[1], ino: binary.BigEndian.Uint64(body[10:18])}
	parent = binary.BigEndian.Uint64(body[18:26])
	switch {
	case id.kind == fhKindKernel && len(body) > fhKernelStart && body[fhKernelLen] > 0 &&
		len(body) == padded4(fhKernelStart+int(body[fhKernelLen])) && allZero(body[fhKernelStart+int(body[fhKernelLen]):]):
		id.ktype = int32(binary.BigEndian.Uint32(body[26:30]))
		end := fhKernelStart + int(body[fhKernelLen])
		id.kfh = body[fhKernelStart:end:end]
	case id.kind == fhKindInode && len(body) == padded4(fhKernelLen) && allZero(body[fhKernelLen:]):
		id.gen = binary.BigEndian.Uint32(body[26:30])
	default:
		return export, id, 0, fmt.Errorf("%w: kind %d, %d bytes", ErrBadHandle, body[1], len(fh))
	}
	return export, id, parent, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// DirHandlerOptions tune a DirHandler.
type DirHandlerOptions struct {
	// IndexOnly resolves handles through the index and the tree alone,
	// never with open_by_handle_at(2), even when the process may use it
	// (CAP_DAC_READ_SEARCH). Handles are the same either way.
	IndexOnly bool
	// FSID is the export's fsid (exports(5) fsid=; the forms of
	// exports.ParseFSID: "root" or "0", a number, a UUID). It names the
	// export in the handles, instead of the directory's file system and
	// root: the handles stay valid across a restart wherever the
	// directory then lies, for as long as the fsid stays. It is also the
	// fsid of every fattr3, as knfsd gives it: the number ("root" is 0),
	// or a UUID's two 64-bit halves XORed. "" means none: handles name
	// the directory's file system and root, and fattr3's fsid is the
	// device number of the export's file system (encoded as Linux's
	// new_encode_dev, as knfsd's).
	FSID string
	// HandleKey is the secret every handle is sealed with: a MAC over
	// the handle (HMAC-SHA256, 12 bytes) lets the handler refuse a
	// handle it did not make (NFS3ERR_BADHANDLE, RFC 1813 §2.6) before
	// any lookup. At least 16 bytes; LoadHandleKey keeps HandleKeySize
	// random bytes in a file. A handle resolves only under the key it
	// was made with: keep the key across restarts, and give every
	// export of a Server the same one, so that a handle of an export no
	// longer served is stale, not bad. nil means a random key made once
	// per process, shared by every DirHandler of the process: handles
	// then survive a new DirHandler, not a restart of the process.
	HandleKey []byte
}

// DirHandler is the export a Server serves: a Dir with stable file handles
// (RFC 1813 §2.4, nfs_fh3). A handle names a file by its file system
// identity (the kernel's own file handle, as knfsd's, or its inode and
// generation), never by a slot in a cache, so it survives a server restart
// and any number of files, and it follows its file across renames. A
// handle of a removed file is stale (NFS3ERR_STALE); a handle of another
// export, or one the server did not make, is refused.
//
// Every handle carries a MAC under DirHandlerOptions.HandleKey, checked
// first: a handle the server did not make (a forged, altered or cut one,
// or one made under another key) is refused at the cost of an HMAC, with
// no lookup, index access or system call.
//
// The Server works on a file by its name below the root, which DirHandler
// finds for a genuine handle, in order: in the Dir's index of names it
// handed out (checked against the file); with open_by_handle_at(2) and
// the name /proc gives the descriptor, when the process may (root,
// CAP_DAC_READ_SEARCH); in the directory the handle was made in; and last
// by a walk of the whole export, which fills the index. The walk is still
// there for the genuine handles the index lost: after a restart without
// privilege the first unknown handle costs a walk of the tree, and so
// does each handle of a file removed behind the server's back, once (the
// index then remembers the inode as gone, up to 65,536 of them). So a
// client can make the server walk only as often as it holds distinct
// handles the server issued. DirHandler also keeps the descriptors of the
// files in use open between calls, and recent directory listings for
// READDIR and READDIRPLUS.
type DirHandler struct {
	dir     *Dir
	export  exportID
	fsid    uint64 // fattr3's (DirHandlerOptions.FSID)
	fsidOpt string // DirHandlerOptions.FSID, canonical; "" if none
	root    fileID
	byKernl bool // open_by_handle_at works here
	// inMemory: the export is on tmpfs or ramfs (one file system:
	// RESOLVE_NO_XDEV), whose reads never wait on a device.
	inMemory bool

	listings listings
	entries  entryHandles
	files    *openFiles
}

// NewDirHandler returns a DirHandler exporting d.
func NewDirHandler(d *Dir, opt DirHandlerOptions) (*DirHandler, error) {
	key, err := newHandleKey(opt.HandleKey)
	if err != nil {
		return nil, err
	}
	var fsid string
	if opt.FSID != "" {
		var err error
		if fsid, err = exports.ParseFSID(opt.FSID); err != nil {
			return nil, fmt.Errorf("nfs: DirHandlerOptions.FSID: %w", err)
		}
	}
	root, _, _, err := d.identify(".")
	if err != nil {
		return nil, fmt.Errorf("nfs: export %q: %w", d.root, err)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(d.fd, &sfs); err != nil {
		return nil, fmt.Errorf("nfs: export %q: statfs: %w", d.root, err)
	}
	var rst unix.Stat_t
	if err := unix.Fstat(d.fd, &rst); err != nil {
		return nil, fmt.Errorf("nfs: export %q: stat: %w", d.root, err)
	}
	h := &DirHandler{dir: d, root: root, files: newOpenFiles(openFilesMax, openFilesSweep),
		fsid: encodeDev(rst.Dev), export: exportID{key: key},
		inMemory: sfs.Type == unix.TMPFS_MAGIC || sfs.Type == unix.RAMFS_MAGIC}
	sum := sha256.New()
	if fsid != "" {
		h.fsid, h.fsidOpt = fattrFSID(fsid), fsid
		_, _ = fmt.Fprintf(sum, "go-rpcrdma nfs fsid\x00%s", fsid)
	} else {
		_, _ = fmt.Fprintf(sum, "go-rpcrdma nfs export\x00%d:%d\x00", sfs.Fsid.Val[0], sfs.Fsid.Val[1])
		sum.Write(encodeBody([8]byte{}, root, 0))
	}
	copy(h.export.id[:], sum.Sum(nil))
	d.idx.add(root.ino, ".", true)
	if !opt.IndexOnly && root.kind == fhKindKernel {
		fd, err := unix.OpenByHandleAt(d.fd, unix.NewFileHandle(root.ktype, root.kfh), unix.O_PATH|unix.O_CLOEXEC)
		if err == nil {
			_ = unix.Close(fd)
			h.byKernl = true
		}
	}
	return h, nil
}

// encodeDev encodes a device number as Linux's new_encode_dev (what
// knfsd's fattr3 fsid is without fsid=): minor's low byte, then the
// major, then minor's other bits.
func encodeDev(dev uint64) uint64 {
	major, minor := uint64(unix.Major(dev)), uint64(unix.Minor(dev))
	return minor&0xff | major<<8 | (minor&^0xff)<<12
}

// fattrFSID is fattr3's fsid for a canonical fsid= value
// (exports.ParseFSID), as knfsd's encode_fattr3 gives it: the number
// (root: 0), or a UUID's two halves XORed, each read as a 64-bit word in
// the host's byte order.
func fattrFSID(fsid string) uint64 {
	if fsid == "root" {
		return 0
	}
	if n, err := strconv.ParseUint(fsid, 10, 32); err == nil {
		return n
	}
	u, _ := hex.DecodeString(fsid) // 16 bytes: ParseFSID checked it
	if len(u) != 16 {
		return 0
	}
	return binary.NativeEndian.Uint64(u[:8]) ^ binary.NativeEndian.Uint64(u[8:])
}

// fattr returns the fattr3 of st (fattrOf), a file of h's export, with
// the export's fsid.
func (h *DirHandler) fattr(st *unix.Stat_t) nfs3.Fattr {
	a := fattrOf(st)
	a.FSID = h.fsid
	return a
}

// FSID returns the fsid of the export's fattr3s (DirHandlerOptions.FSID).
func (h *DirHandler) FSID() uint64 { return h.fsid }

// ByKernelHandle reports whether the handler resolves handles with
// open_by_handle_at(2).
func (h *DirHandler) ByKernelHandle() bool { return h.byKernl }

// handle returns the handle of the file name below the root (not
// following a last symbolic link; a name that climbs out of the root is
// the root), or nil if there is none, and records the name in the index.
func (h *DirHandler) handle(name string) []byte {
	o, err := h.objectAt(name)
	if err != nil {
		return nil
	}
	o.close()
	return o.fh
}

// check reports whether name is the file id.
func (h *DirHandler) check(name string, id fileID) bool {
	got, err := h.dir.identity(name)
	return err == nil && got.equal(id)
}

// resolve returns the name of the file of fh. A handle whose MAC does not
// match is refused first (checkHandle), with nothing looked up.
func (h *DirHandler) resolve(fh []byte) (string, error) {
	if err := checkHandle(h.export.key, fh); err != nil {
		return "", err
	}
	export, id, parent, err := decodeHandle(fh)
	if err != nil {
		return "", err
	}
	if export != h.export.id {
		return "", ErrForeignHandle
	}
	if id.equal(h.root) {
		return ".", nil
	}
	x := h.dir.idx
	if name, ok := x.lookup(id.ino); ok {
		if h.check(name, id) {
			return name, nil
		}
		x.forget(id.ino, name)
	}
	if h.byKernl && id.kind == fhKindKernel {
		name, err := h.byKernelHandle(id)
		if err != nil || name != "" {
			return name, err
		}
	}
	if name, ok := h.inDir(parent, id); ok {
		return name, nil
	}
	if x.isGone(id.ino) {
		return "", fmt.Errorf("%w: inode %d", ErrStaleHandle, id.ino)
	}
	h.walk()
	if name, ok := x.lookup(id.ino); ok && h.check(name, id) {
		return name, nil
	}
	x.markGone(id.ino)
	return "", fmt.Errorf("%w: inode %d not found under %s", ErrStaleHandle, id.ino, h.dir.root)
}

// byKernelHandle opens id with open_by_handle_at and names it through
// /proc. It returns "" and no error when the kernel knows the file but
// gives no usable name (a disconnected non-directory).
func (h *DirHandler) byKernelHandle(id fileID) (string, error) {
	fd, err := unix.OpenByHandleAt(h.dir.fd, unix.NewFileHandle(id.ktype, id.kfh), unix.O_PATH|unix.O_CLOEXEC)
	if err == unix.ESTALE || err == unix.ENOENT {
		h.dir.idx.markGone(id.ino)
		return "", fmt.Errorf("%w: %w", ErrStaleHandle, err)
	}
	if err != nil {
		return "", nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && st.Nlink == 0 {
		h.dir.idx.markGone(id.ino)
		return "", fmt.Errorf("%w: inode %d unlinked", ErrStaleHandle, id.ino)
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", nil
	}
	var name string
	switch {
	case p == h.dir.real:
		name = "."
	case strings.HasPrefix(p, h.dir.real+"/"):
		name = p[len(h.dir.real)+1:]
	default:
		return "", nil
	}
	if !h.check(name, id) {
		return "", nil
	}
	h.dir.idx.add(id.ino, name, st.Mode&unix.S_IFMT == unix.S_IFDIR)
	return name, nil
}

// inDir looks for id in the directory of inode parent, if the index
// knows that directory.
func (h *DirHandler) inDir(parent uint64, id fileID) (string, bool) {
	var dir string
	switch {
	case parent == 0:
		return "", false
	case parent == h.root.ino:
		dir = "."
	default:
		var ok bool
		if dir, ok = h.dir.idx.lookup(parent); !ok {
			return "", false
		}
	}
	ents, err := h.dir.readDir(dir)
	if err != nil {
		return "", false
	}
	for _, e := range ents {
		if e.ino != id.ino {
			continue
		}
		name := path.Join(dir, e.name)
		if h.check(name, id) {
			h.dir.idx.add(id.ino, name, e.dir)
			return name, true
		}
	}
	return "", false
}

// walk indexes every file of the export (one walk at a time; a caller
// that waited for another's walk does not walk again).
func (h *DirHandler) walk() {
	x := h.dir.idx
	x.mu.Lock()
	before := x.walks
	x.mu.Unlock()
	x.walkMu.Lock()
	defer x.walkMu.Unlock()
	x.mu.Lock()
	done := x.walks != before
	x.mu.Unlock()
	if done {
		return
	}
	var visit func(dir string)
	visit = func(dir string) {
		ents, err := h.dir.readDir(dir)
		if err != nil {
			return
		}
		x.mu.Lock()
		for _, e := range ents {
			x.addLocked(e.ino, path.Join(dir, e.name), e.dir)
		}
		x.mu.Unlock()
		for _, e := range ents {
			if e.dir {
				visit(path.Join(dir, e.name))
			}
		}
	}
	visit(".")
	x.mu.Lock()
	x.walks++
	x.mu.Unlock()
}
