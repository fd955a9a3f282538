package client

import (
	"io/fs"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
)

// FH is an NFSv3 file handle (nfs_fh3, RFC 1813 §2.5): opaque, at most 64
// bytes.
type FH []byte

// FileType is an ftype3 (RFC 1813 §2.6).
type FileType uint32

// File types (RFC 1813 §2.6, ftype3).
const (
	TypeReg  = FileType(nfs3.TypeReg)
	TypeDir  = FileType(nfs3.TypeDir)
	TypeBlk  = FileType(nfs3.TypeBlk)
	TypeChr  = FileType(nfs3.TypeChr)
	TypeLnk  = FileType(nfs3.TypeLnk)
	TypeSock = FileType(nfs3.TypeSock)
	TypeFIFO = FileType(nfs3.TypeFIFO)
)

// Attr is an fattr3 (RFC 1813 §2.6), a file's attributes.
type Attr struct {
	Type                 FileType
	Mode                 uint32 // permission bits and setuid, setgid, sticky
	Nlink, UID, GID      uint32
	Size, Used           uint64
	RdevMajor, RdevMinor uint32
	FSID, FileID         uint64
	Atime, Mtime, Ctime  time.Time
}

// FileMode returns the attributes' type and permissions as an fs.FileMode.
func (a *Attr) FileMode() fs.FileMode {
	m := fs.FileMode(a.Mode & 0o777)
	if a.Mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if a.Mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if a.Mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	switch a.Type {
	case TypeDir:
		m |= fs.ModeDir
	case TypeLnk:
		m |= fs.ModeSymlink
	case TypeBlk:
		m |= fs.ModeDevice
	case TypeChr:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case TypeSock:
		m |= fs.ModeSocket
	case TypeFIFO:
		m |= fs.ModeNamedPipe
	}
	return m
}

// SetAttr is an sattr3 (RFC 1813 §2.6): the attributes SETATTR, CREATE,
// MKDIR and SYMLINK set. A nil field is left unchanged; AtimeNow and
// MtimeNow set the time to the server's clock (SET_TO_SERVER_TIME) when
// Atime or Mtime is nil.
type SetAttr struct {
	Mode, UID, GID     *uint32
	Size               *uint64
	Atime, Mtime       *time.Time
	AtimeNow, MtimeNow bool
}

// StableHow is a stable_how (RFC 1813 §3.3.7): how far a WRITE's data
// must reach before the server replies.
type StableHow uint32

// Write stabilities (RFC 1813 §3.3.7).
const (
	Unstable = StableHow(nfs3.Unstable)
	DataSync = StableHow(nfs3.DataSync)
	FileSync = StableHow(nfs3.FileSync)
)

// WriteVerf is a writeverf3 (RFC 1813 §3.3.7): it changes when the server
// loses data written UNSTABLE and not yet committed.
type WriteVerf [8]byte

// WccAttr are the attributes of wcc_data (RFC 1813 §2.6): Before holds
// size, mtime and ctime only; either may be absent.
type WccAttr struct {
	Before, After *Attr
}

// The conversions below are between the client's types, its public API,
// and those of the NFSv3 codec (package nfs3), which encodes every call's
// arguments and decodes every result.

// attrFromFattr returns the fattr3 a as an Attr.
func attrFromFattr(a *nfs3.Fattr) Attr {
	return Attr{
		Type: FileType(a.Type), Mode: a.Mode, Nlink: a.Nlink, UID: a.UID, GID: a.GID,
		Size: a.Size, Used: a.Used, RdevMajor: a.Rdev.Major, RdevMinor: a.Rdev.Minor,
		FSID: a.FSID, FileID: a.FileID,
		Atime: a.Atime.Time(), Mtime: a.Mtime.Time(), Ctime: a.Ctime.Time(),
	}
}

// attrOf returns the attributes of a post_op_attr as a new Attr, nil when
// absent.
func attrOf(p *nfs3.PostOpAttr) *Attr {
	if !p.Set {
		return nil
	}
	a := attrFromFattr(&p.Attr)
	return &a
}

// wccOf returns a wcc_data as a WccAttr: Before holds the wcc_attr's size,
// mtime and ctime only.
func wccOf(w *nfs3.WccData) WccAttr {
	var wa WccAttr
	if w.Before.Set {
		b := &w.Before.Attr
		wa.Before = &Attr{Size: b.Size, Mtime: b.Mtime.Time(), Ctime: b.Ctime.Time()}
	}
	wa.After = attrOf(&w.After)
	return wa
}

// sattrOf returns s as an sattr3 (nil: nothing set). A time given is set
// to it (SET_TO_CLIENT_TIME); AtimeNow or MtimeNow without one sets the
// server's clock (SET_TO_SERVER_TIME).
func sattrOf(s *SetAttr) nfs3.Sattr {
	var a nfs3.Sattr
	if s == nil {
		return a
	}
	if s.Mode != nil {
		a.SetMode, a.Mode = true, *s.Mode
	}
	if s.UID != nil {
		a.SetUID, a.UID = true, *s.UID
	}
	if s.GID != nil {
		a.SetGID, a.GID = true, *s.GID
	}
	if s.Size != nil {
		a.SetSize, a.Size = true, *s.Size
	}
	a.Atime = setTimeOf(s.Atime, s.AtimeNow)
	a.Mtime = setTimeOf(s.Mtime, s.MtimeNow)
	return a
}

// setTimeOf returns a set_atime or set_mtime: t when given, else the
// server's clock when now, else DONT_CHANGE.
func setTimeOf(t *time.Time, now bool) nfs3.SetTime {
	switch {
	case t != nil:
		return nfs3.SetTime{How: nfs3.SetToClientTime, Time: nfs3.TimeOf(*t)}
	case now:
		return nfs3.SetTime{How: nfs3.SetToServerTime}
	}
	return nfs3.SetTime{How: nfs3.DontChange}
}

// cloneFH returns a copy of a handle that aliases a reply, nil when it is
// empty.
func cloneFH(fh []byte) FH {
	if len(fh) == 0 {
		return nil
	}
	return FH(append([]byte(nil), fh...))
}
