package nfs3

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Bounds of the variable-length items of NFS version 3 (RFC 1813 §2.4,
// §2.5).
const (
	// FHSize is NFS3_FHSIZE, the longest nfs_fh3 (RFC 1813 §2.4).
	FHSize = 64
	// NameMax is the longest filename3 decoded. RFC 1813 §2.5 leaves
	// filename3 unbounded; this is Linux's NFS3_MAXNAMLEN (255).
	NameMax = 255
	// PathMax is the longest nfspath3 decoded. RFC 1813 §2.5 leaves
	// nfspath3 unbounded; this is Linux's NFS3_MAXPATHLEN, PATH_MAX
	// (4096).
	PathMax = 4096
)

// ErrBadEnum is returned by Decode for an enumeration value outside the
// range RFC 1813 defines: an ftype3 other than 1 to 7, or a stable_how,
// createmode3 or time_how other than 0 to 2.
var ErrBadEnum = errors.New("nfs3: enumeration value out of range")

// Encoded sizes of fixed-size items (RFC 1813 §2.6).
const (
	// fattrSize is fattr3: type, mode, nlink, uid, gid (5 words), size,
	// used, rdev (specdata3), fsid, fileid (5 hypers), atime, mtime, ctime
	// (3 nfstime3).
	fattrSize = 5*4 + 5*8 + 3*8
	// wccAttrSize is wcc_attr: size, mtime, ctime.
	wccAttrSize = 8 + 8 + 8
	// verfSize is cookieverf3, createverf3 and writeverf3
	// (NFS3_COOKIEVERFSIZE, NFS3_CREATEVERFSIZE, NFS3_WRITEVERFSIZE).
	verfSize = 8
)

var be = binary.BigEndian

// FileType is an ftype3 (RFC 1813 §2.6).
type FileType uint32

// File types (RFC 1813 §2.6, ftype3).
const (
	TypeReg  FileType = 1 // NF3REG
	TypeDir  FileType = 2 // NF3DIR
	TypeBlk  FileType = 3 // NF3BLK
	TypeChr  FileType = 4 // NF3CHR
	TypeLnk  FileType = 5 // NF3LNK
	TypeSock FileType = 6 // NF3SOCK
	TypeFIFO FileType = 7 // NF3FIFO
)

func (t FileType) valid() bool { return t >= TypeReg && t <= TypeFIFO }

// decodeFileType decodes an ftype3, failing with ErrBadEnum outside 1..7.
func decodeFileType(r *xdr.Reader) (FileType, error) {
	if r.Len() < 4 {
		return 0, xdr.ErrShortBuffer
	}
	t := FileType(be.Uint32(r.Rest()))
	if !t.valid() {
		return 0, ErrBadEnum
	}
	return t, r.Skip(4)
}

// decodeEnum3 decodes an enum whose values are 0, 1 and 2 (stable_how,
// createmode3, time_how), failing with ErrBadEnum for any other.
func decodeEnum3(r *xdr.Reader) (uint32, error) {
	if r.Len() < 4 {
		return 0, xdr.ErrShortBuffer
	}
	v := be.Uint32(r.Rest())
	if v > 2 {
		return 0, ErrBadEnum
	}
	return v, r.Skip(4)
}

// Time is an nfstime3 (RFC 1813 §2.6): seconds and nanoseconds since
// 1970-01-01 00:00 UTC. Seconds are unsigned, as Linux encodes them.
type Time struct {
	Sec, Nsec uint32
}

// TimeOf returns t as an nfstime3; the seconds are truncated to 32 bits.
func TimeOf(t time.Time) Time {
	return Time{Sec: uint32(t.Unix()), Nsec: uint32(t.Nanosecond())}
}

// Time returns t as a time.Time.
func (t Time) Time() time.Time { return time.Unix(int64(t.Sec), int64(t.Nsec)) }

// Append appends the nfstime3.
func (t *Time) Append(b []byte) []byte {
	return xdr.AppendUint32(xdr.AppendUint32(b, t.Sec), t.Nsec)
}

// Decode decodes an nfstime3.
func (t *Time) Decode(r *xdr.Reader) error {
	if r.Len() < 8 {
		return xdr.ErrShortBuffer
	}
	p := r.Rest()
	*t = Time{Sec: be.Uint32(p), Nsec: be.Uint32(p[4:])}
	return r.Skip(8)
}

// SpecData is a specdata3 (RFC 1813 §2.6), a device's major and minor
// numbers.
type SpecData struct {
	Major, Minor uint32
}

// Append appends the specdata3.
func (s *SpecData) Append(b []byte) []byte {
	return xdr.AppendUint32(xdr.AppendUint32(b, s.Major), s.Minor)
}

// Decode decodes a specdata3.
func (s *SpecData) Decode(r *xdr.Reader) error {
	if r.Len() < 8 {
		return xdr.ErrShortBuffer
	}
	p := r.Rest()
	*s = SpecData{Major: be.Uint32(p), Minor: be.Uint32(p[4:])}
	return r.Skip(8)
}

// Fattr is an fattr3 (RFC 1813 §2.6), a file's attributes.
type Fattr struct {
	Type                FileType
	Mode                uint32 // permission bits, setuid, setgid, sticky
	Nlink, UID, GID     uint32
	Size, Used          uint64
	Rdev                SpecData
	FSID, FileID        uint64
	Atime, Mtime, Ctime Time
}

// Append appends the fattr3.
func (a *Fattr) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(a.Type))
	b = xdr.AppendUint32(b, a.Mode)
	b = xdr.AppendUint32(b, a.Nlink)
	b = xdr.AppendUint32(b, a.UID)
	b = xdr.AppendUint32(b, a.GID)
	b = xdr.AppendUint64(b, a.Size)
	b = xdr.AppendUint64(b, a.Used)
	b = a.Rdev.Append(b)
	b = xdr.AppendUint64(b, a.FSID)
	b = xdr.AppendUint64(b, a.FileID)
	b = a.Atime.Append(b)
	b = a.Mtime.Append(b)
	return a.Ctime.Append(b)
}

// Decode decodes an fattr3. A type outside 1..7 fails with ErrBadEnum.
func (a *Fattr) Decode(r *xdr.Reader) error {
	p := r.Rest()
	if len(p) < fattrSize {
		return xdr.ErrShortBuffer
	}
	t := FileType(be.Uint32(p))
	if !t.valid() {
		return ErrBadEnum
	}
	*a = Fattr{
		Type:   t,
		Mode:   be.Uint32(p[4:]),
		Nlink:  be.Uint32(p[8:]),
		UID:    be.Uint32(p[12:]),
		GID:    be.Uint32(p[16:]),
		Size:   be.Uint64(p[20:]),
		Used:   be.Uint64(p[28:]),
		Rdev:   SpecData{Major: be.Uint32(p[36:]), Minor: be.Uint32(p[40:])},
		FSID:   be.Uint64(p[44:]),
		FileID: be.Uint64(p[52:]),
		Atime:  Time{Sec: be.Uint32(p[60:]), Nsec: be.Uint32(p[64:])},
		Mtime:  Time{Sec: be.Uint32(p[68:]), Nsec: be.Uint32(p[72:])},
		Ctime:  Time{Sec: be.Uint32(p[76:]), Nsec: be.Uint32(p[80:])},
	}
	return r.Skip(fattrSize)
}

// PostOpAttr is a post_op_attr (RFC 1813 §2.6): attributes that a server
// may return or not. Attr is meaningful only when Set.
type PostOpAttr struct {
	Set  bool
	Attr Fattr
}

// Append appends the post_op_attr: attributes_follow, then Attr if Set.
func (p *PostOpAttr) Append(b []byte) []byte {
	b = xdr.AppendBool(b, p.Set)
	if p.Set {
		b = p.Attr.Append(b)
	}
	return b
}

// Decode decodes a post_op_attr.
func (p *PostOpAttr) Decode(r *xdr.Reader) error {
	set, err := r.Bool()
	if err != nil {
		return err
	}
	*p = PostOpAttr{Set: set}
	if set {
		return p.Attr.Decode(r)
	}
	return nil
}

// size returns the number of bytes Append adds.
func (p *PostOpAttr) size() int {
	if p.Set {
		return 4 + fattrSize
	}
	return 4
}

// WccAttr is a wcc_attr (RFC 1813 §2.6), the attributes of weak cache
// consistency before an operation.
type WccAttr struct {
	Size         uint64
	Mtime, Ctime Time
}

// Append appends the wcc_attr.
func (w *WccAttr) Append(b []byte) []byte {
	b = xdr.AppendUint64(b, w.Size)
	b = w.Mtime.Append(b)
	return w.Ctime.Append(b)
}

// Decode decodes a wcc_attr.
func (w *WccAttr) Decode(r *xdr.Reader) error {
	p := r.Rest()
	if len(p) < wccAttrSize {
		return xdr.ErrShortBuffer
	}
	*w = WccAttr{
		Size:  be.Uint64(p),
		Mtime: Time{Sec: be.Uint32(p[8:]), Nsec: be.Uint32(p[12:])},
		Ctime: Time{Sec: be.Uint32(p[16:]), Nsec: be.Uint32(p[20:])},
	}
	return r.Skip(wccAttrSize)
}

// PreOpAttr is a pre_op_attr (RFC 1813 §2.6). Attr is meaningful only
// when Set.
type PreOpAttr struct {
	Set  bool
	Attr WccAttr
}

// Append appends the pre_op_attr: attributes_follow, then Attr if Set.
func (p *PreOpAttr) Append(b []byte) []byte {
	b = xdr.AppendBool(b, p.Set)
	if p.Set {
		b = p.Attr.Append(b)
	}
	return b
}

// Decode decodes a pre_op_attr.
func (p *PreOpAttr) Decode(r *xdr.Reader) error {
	set, err := r.Bool()
	if err != nil {
		return err
	}
	*p = PreOpAttr{Set: set}
	if set {
		return p.Attr.Decode(r)
	}
	return nil
}

// WccData is a wcc_data (RFC 1813 §2.6): an object's attributes before
// and after an operation.
type WccData struct {
	Before PreOpAttr
	After  PostOpAttr
}

// Append appends the wcc_data.
func (w *WccData) Append(b []byte) []byte {
	return w.After.Append(w.Before.Append(b))
}

// Decode decodes a wcc_data.
func (w *WccData) Decode(r *xdr.Reader) error {
	if err := w.Before.Decode(r); err != nil {
		return err
	}
	return w.After.Decode(r)
}

// PostOpFH is a post_op_fh3 (RFC 1813 §2.6): a file handle that a server
// may return or not. FH is meaningful only when Set; after Decode it
// aliases the input.
type PostOpFH struct {
	Set bool
	FH  []byte
}

// Append appends the post_op_fh3: handle_follows, then FH if Set.
func (p *PostOpFH) Append(b []byte) []byte {
	b = xdr.AppendBool(b, p.Set)
	if p.Set {
		b = xdr.AppendOpaque(b, p.FH)
	}
	return b
}

// Decode decodes a post_op_fh3; a handle longer than FHSize fails with
// xdr.ErrTooLong.
func (p *PostOpFH) Decode(r *xdr.Reader) error {
	set, err := r.Bool()
	if err != nil {
		return err
	}
	*p = PostOpFH{Set: set}
	if set {
		p.FH, err = r.Opaque(FHSize)
	}
	return err
}

// size returns the number of bytes Append adds.
func (p *PostOpFH) size() int {
	if p.Set {
		return 4 + 4 + xdr.RoundUp(len(p.FH))
	}
	return 4
}

// TimeHow is a time_how (RFC 1813 §2.6): how SETATTR and the creating
// procedures set a time.
type TimeHow uint32

// Values of TimeHow (RFC 1813 §2.6, time_how).
const (
	DontChange      TimeHow = 0 // DONT_CHANGE
	SetToServerTime TimeHow = 1 // SET_TO_SERVER_TIME
	SetToClientTime TimeHow = 2 // SET_TO_CLIENT_TIME
)

// SetTime is a set_atime or set_mtime (RFC 1813 §2.6). Time is
// meaningful only when How is SetToClientTime.
type SetTime struct {
	How  TimeHow
	Time Time
}

// Append appends the set_atime or set_mtime.
func (s *SetTime) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(s.How))
	if s.How == SetToClientTime {
		b = s.Time.Append(b)
	}
	return b
}

// Decode decodes a set_atime or set_mtime; a time_how other than 0 to 2
// fails with ErrBadEnum.
func (s *SetTime) Decode(r *xdr.Reader) error {
	how, err := decodeEnum3(r)
	if err != nil {
		return err
	}
	*s = SetTime{How: TimeHow(how)}
	if s.How == SetToClientTime {
		return s.Time.Decode(r)
	}
	return nil
}

// Sattr is a sattr3 (RFC 1813 §2.6), the attributes to set in SETATTR and
// the creating procedures. Each value is meaningful only when its Set
// field is true.
type Sattr struct {
	SetMode bool
	Mode    uint32
	SetUID  bool
	UID     uint32
	SetGID  bool
	GID     uint32
	SetSize bool
	Size    uint64
	Atime   SetTime
	Mtime   SetTime
}

// Append appends the sattr3.
func (s *Sattr) Append(b []byte) []byte {
	b = appendOptUint32(b, s.SetMode, s.Mode)
	b = appendOptUint32(b, s.SetUID, s.UID)
	b = appendOptUint32(b, s.SetGID, s.GID)
	b = xdr.AppendBool(b, s.SetSize)
	if s.SetSize {
		b = xdr.AppendUint64(b, s.Size)
	}
	b = s.Atime.Append(b)
	return s.Mtime.Append(b)
}

func appendOptUint32(b []byte, set bool, v uint32) []byte {
	b = xdr.AppendBool(b, set)
	if set {
		b = xdr.AppendUint32(b, v)
	}
	return b
}

func decodeOptUint32(r *xdr.Reader) (bool, uint32, error) {
	set, err := r.Bool()
	if err != nil || !set {
		return false, 0, err
	}
	v, err := r.Uint32()
	return true, v, err
}

// Decode decodes a sattr3.
func (s *Sattr) Decode(r *xdr.Reader) error {
	*s = Sattr{}
	var err error
	if s.SetMode, s.Mode, err = decodeOptUint32(r); err != nil {
		return err
	}
	if s.SetUID, s.UID, err = decodeOptUint32(r); err != nil {
		return err
	}
	if s.SetGID, s.GID, err = decodeOptUint32(r); err != nil {
		return err
	}
	if s.SetSize, err = r.Bool(); err != nil {
		return err
	}
	if s.SetSize {
		if s.Size, err = r.Uint64(); err != nil {
			return err
		}
	}
	if err := s.Atime.Decode(r); err != nil {
		return err
	}
	return s.Mtime.Decode(r)
}

// DirOpArgs is a diropargs3 (RFC 1813 §2.6): a name in a directory. After
// Decode, Dir aliases the input.
type DirOpArgs struct {
	Dir  []byte
	Name string
}

// Append appends the diropargs3.
func (d *DirOpArgs) Append(b []byte) []byte {
	return xdr.AppendString(xdr.AppendOpaque(b, d.Dir), d.Name)
}

// Decode decodes a diropargs3: a handle longer than FHSize or a name longer
// than NameMax fails with xdr.ErrTooLong.
func (d *DirOpArgs) Decode(r *xdr.Reader) error {
	*d = DirOpArgs{}
	var err error
	if d.Dir, err = r.Opaque(FHSize); err != nil {
		return err
	}
	d.Name, err = decodeString(r, NameMax)
	return err
}

// decodeFH decodes an nfs_fh3 (RFC 1813 §2.4), aliasing the input.
func decodeFH(r *xdr.Reader) ([]byte, error) { return r.Opaque(FHSize) }

// decodeString decodes a string of at most max bytes and copies it; the
// length is checked before the copy.
func decodeString(r *xdr.Reader, max int) (string, error) {
	p, err := r.String(max)
	if err != nil {
		return "", err
	}
	return string(p), nil
}

// decodeStatus decodes an nfsstat3; every value is accepted.
func decodeStatus(r *xdr.Reader) (Status, error) {
	s, err := r.Uint32()
	return Status(s), err
}

// decodeVerf decodes a cookieverf3, createverf3 or writeverf3.
func decodeVerf(r *xdr.Reader, v *[verfSize]byte) error {
	p, err := r.FixedOpaque(verfSize)
	if err != nil {
		return err
	}
	copy(v[:], p)
	return nil
}
