package nfs

import (
	"os"
	"syscall"
	"time"

	gonfs "github.com/willscott/go-nfs"
	"golang.org/x/sys/unix"
)

// fileInfoStat is what fileInfo.Sys returns.
type fileInfoStat = syscall.Stat_t

// fileInfo is an os.FileInfo from a stat(2) result. Sys returns the
// *syscall.Stat_t go-nfs reads owner, link count and file id from.
type fileInfo struct {
	name string
	st   syscall.Stat_t
}

func newFileInfo(name string, st *unix.Stat_t) *fileInfo {
	return &fileInfo{name: name, st: syscall.Stat_t{
		Dev: st.Dev, Ino: st.Ino, Nlink: st.Nlink, Mode: st.Mode, Uid: st.Uid, Gid: st.Gid,
		Rdev: st.Rdev, Size: st.Size, Blksize: st.Blksize, Blocks: st.Blocks,
		Atim: syscall.Timespec{Sec: st.Atim.Sec, Nsec: st.Atim.Nsec},
		Mtim: syscall.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec},
		Ctim: syscall.Timespec{Sec: st.Ctim.Sec, Nsec: st.Ctim.Nsec},
	}}
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) Mode() os.FileMode  { return fileMode(fi.st.Mode) }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Sec, fi.st.Mtim.Nsec) }
func (fi *fileInfo) IsDir() bool        { return fi.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (fi *fileInfo) Sys() any           { return &fi.st }

// fileMode converts a stat(2) mode to an os.FileMode.
func fileMode(m uint32) os.FileMode {
	mode := os.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= os.ModeDir
	case unix.S_IFLNK:
		mode |= os.ModeSymlink
	case unix.S_IFIFO:
		mode |= os.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= os.ModeSocket
	case unix.S_IFCHR:
		mode |= os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		mode |= os.ModeDevice
	}
	if m&unix.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	return mode
}

// unixMode converts the permission and set-id bits of an os.FileMode to a
// mode for chmod(2), open(2) and mkdir(2).
func unixMode(m os.FileMode) uint32 {
	mode := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		mode |= unix.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		mode |= unix.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		mode |= unix.S_ISVTX
	}
	return mode
}

// statFileAttr is gonfs.ToFileAttribute(newFileInfo(name, st), path) for
// any name and path, in one allocation instead of three: go-nfs builds the
// attributes from the os.FileInfo's mode, size and modification time and
// from the *syscall.Stat_t its Sys returns (link count, owner, device
// numbers, file id), and gives the modification time as all three times.
// TestStatFileAttr holds it to go-nfs's answer, so that replies built
// here stay byte for byte what go-nfs would send.
func statFileAttr(st *unix.Stat_t) *gonfs.FileAttribute {
	m := fileMode(st.Mode)
	t := gonfs.ToNFSTime(time.Unix(st.Mtim.Sec, st.Mtim.Nsec))
	return &gonfs.FileAttribute{
		Type:     fileType(m),
		FileMode: uint32(m),
		Nlink:    uint32(st.Nlink),
		UID:      st.Uid,
		GID:      st.Gid,
		Filesize: uint64(st.Size),
		Used:     uint64(st.Size),
		SpecData: [2]uint32{unix.Major(st.Rdev), unix.Minor(st.Rdev)},
		Fileid:   st.Ino,
		Atime:    t,
		Mtime:    t,
		Ctime:    t,
	}
}

// attr is statFileAttr of fi's stat result.
func (fi *fileInfo) attr() *gonfs.FileAttribute {
	s := &fi.st
	return statFileAttr(&unix.Stat_t{Mode: s.Mode, Nlink: s.Nlink, Uid: s.Uid, Gid: s.Gid, Size: s.Size,
		Rdev: s.Rdev, Ino: s.Ino, Mtim: unix.Timespec{Sec: s.Mtim.Sec, Nsec: s.Mtim.Nsec}})
}

// statFileID is fileAttr(info, name).Fileid without building the attributes
// where info is one of ours (READDIR's entries need only the file id).
func statFileID(info os.FileInfo, name string) uint64 {
	if fi, ok := info.(*fileInfo); ok {
		return fi.st.Ino
	}
	return fileAttr(info, name).Fileid
}

// fileAttr is gonfs.ToFileAttribute(info, name), by statFileAttr where
// info is one of ours.
func fileAttr(info os.FileInfo, name string) *gonfs.FileAttribute {
	if fi, ok := info.(*fileInfo); ok {
		return fi.attr()
	}
	return gonfs.ToFileAttribute(info, name)
}

// fileType is the NFS file type of an os.FileMode, as go-nfs's
// ToFileAttribute decides it.
func fileType(m os.FileMode) gonfs.FileType {
	switch {
	case m.IsDir():
		return gonfs.FileTypeDirectory
	case m&os.ModeSymlink != 0:
		return gonfs.FileTypeLink
	case m&os.ModeCharDevice != 0:
		return gonfs.FileTypeCharacter
	case m&os.ModeDevice != 0:
		return gonfs.FileTypeBlock
	case m&os.ModeSocket != 0:
		return gonfs.FileTypeSocket
	case m&os.ModeNamedPipe != 0:
		return gonfs.FileTypeFIFO
	}
	return gonfs.FileTypeRegular
}
