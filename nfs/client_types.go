package nfs

import (
	"io/fs"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// FH is an NFSv3 file handle (nfs_fh3, RFC 1813 §2.5): opaque, at most 64
// bytes.
type FH []byte

// FileType is an ftype3 (RFC 1813 §2.6).
type FileType uint32

// File types (RFC 1813 §2.6, ftype3).
const (
	TypeReg  FileType = 1
	TypeDir  FileType = 2
	TypeBlk  FileType = 3
	TypeChr  FileType = 4
	TypeLnk  FileType = 5
	TypeSock FileType = 6
	TypeFIFO FileType = 7
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
	Unstable StableHow = 0
	DataSync StableHow = 1
	FileSync StableHow = 2
)

// WriteVerf is a writeverf3 (RFC 1813 §3.3.7): it changes when the server
// loses data written UNSTABLE and not yet committed.
type WriteVerf [8]byte

// WccAttr are the attributes of wcc_data (RFC 1813 §2.6): Before holds
// size, mtime and ctime only; either may be absent.
type WccAttr struct {
	Before, After *Attr
}

// appendFH appends fh as an nfs_fh3.
func appendFH(b []byte, fh FH) []byte { return xdr.AppendOpaque(b, fh) }

func appendTime(b []byte, t time.Time) []byte {
	b = xdr.AppendUint32(b, uint32(t.Unix()))
	return xdr.AppendUint32(b, uint32(t.Nanosecond()))
}

// appendSattr appends s as an sattr3 (nil: nothing set).
func appendSattr(b []byte, s *SetAttr) []byte {
	if s == nil {
		s = &SetAttr{}
	}
	for _, v := range [...]*uint32{s.Mode, s.UID, s.GID} {
		b = xdr.AppendBool(b, v != nil)
		if v != nil {
			b = xdr.AppendUint32(b, *v)
		}
	}
	b = xdr.AppendBool(b, s.Size != nil)
	if s.Size != nil {
		b = xdr.AppendUint64(b, *s.Size)
	}
	for _, tm := range [...]struct {
		t   *time.Time
		now bool
	}{{s.Atime, s.AtimeNow}, {s.Mtime, s.MtimeNow}} {
		switch {
		case tm.t != nil:
			b = xdr.AppendUint32(b, 2) // SET_TO_CLIENT_TIME
			b = appendTime(b, *tm.t)
		case tm.now:
			b = xdr.AppendUint32(b, 1) // SET_TO_SERVER_TIME
		default:
			b = xdr.AppendUint32(b, 0) // DONT_CHANGE
		}
	}
	return b
}

// decodeFattr decodes an fattr3 into a.
func decodeFattr(r *xdr.Reader, a *Attr) error {
	b, err := r.FixedOpaque(fattr3Size)
	if err != nil {
		return err
	}
	u32 := func(i int) uint32 { return uint32(b[i])<<24 | uint32(b[i+1])<<16 | uint32(b[i+2])<<8 | uint32(b[i+3]) }
	u64 := func(i int) uint64 { return uint64(u32(i))<<32 | uint64(u32(i+4)) }
	tm := func(i int) time.Time { return time.Unix(int64(u32(i)), int64(u32(i+4))) }
	*a = Attr{
		Type: FileType(u32(0)), Mode: u32(4), Nlink: u32(8), UID: u32(12), GID: u32(16),
		Size: u64(20), Used: u64(28), RdevMajor: u32(36), RdevMinor: u32(40), FSID: u64(44), FileID: u64(52),
		Atime: tm(60), Mtime: tm(68), Ctime: tm(76),
	}
	return nil
}

// decodePostOpAttr decodes a post_op_attr: into a when present (a may be
// nil to skip it), and reports whether it was.
func decodePostOpAttr(r *xdr.Reader, a *Attr) (bool, error) {
	follows, err := r.Bool()
	if err != nil || !follows {
		return false, err
	}
	if a == nil {
		return true, r.Skip(fattr3Size)
	}
	return true, decodeFattr(r, a)
}

// postOpAttr decodes a post_op_attr into a new Attr, nil when absent.
func postOpAttr(r *xdr.Reader) (*Attr, error) {
	var a Attr
	ok, err := decodePostOpAttr(r, &a)
	if err != nil || !ok {
		return nil, err
	}
	return &a, nil
}

// decodeWcc decodes a wcc_data (RFC 1813 §2.6).
func decodeWcc(r *xdr.Reader) (WccAttr, error) {
	var w WccAttr
	follows, err := r.Bool()
	if err != nil {
		return w, err
	}
	if follows {
		b, err := r.FixedOpaque(24) // wcc_attr: size, mtime, ctime
		if err != nil {
			return w, err
		}
		rd := xdr.NewReader(b)
		size, _ := rd.Uint64()
		ms, _ := rd.Uint32()
		mn, _ := rd.Uint32()
		cs, _ := rd.Uint32()
		cn, _ := rd.Uint32()
		w.Before = &Attr{Size: size, Mtime: time.Unix(int64(ms), int64(mn)), Ctime: time.Unix(int64(cs), int64(cn))}
	}
	w.After, err = postOpAttr(r)
	return w, err
}

// decodePostOpFH decodes a post_op_fh3 (RFC 1813 §3.3.8), nil when absent.
func decodePostOpFH(r *xdr.Reader) (FH, error) {
	follows, err := r.Bool()
	if err != nil || !follows {
		return nil, err
	}
	fh, err := r.Opaque(fhSize3)
	if err != nil {
		return nil, err
	}
	return FH(append([]byte(nil), fh...)), nil
}
