package nfs3

import "github.com/go-rpcrdma/rpcrdma/xdr"

// FsstatArgs are FSSTAT3args (RFC 1813 §3.3.18). After Decode, FSRoot
// aliases the input.
type FsstatArgs struct {
	FSRoot []byte
}

// Append appends the FSSTAT3args.
func (x *FsstatArgs) Append(b []byte) []byte { return xdr.AppendOpaque(b, x.FSRoot) }

// Decode decodes FSSTAT3args.
func (x *FsstatArgs) Decode(r *xdr.Reader) error {
	var err error
	x.FSRoot, err = decodeFH(r)
	return err
}

// FsstatRes is FSSTAT3res (RFC 1813 §3.3.18): the object's attributes, and
// on OK the file system's sizes in bytes and files (total, free, available
// to the caller) and how long they will not change (invarsec).
type FsstatRes struct {
	Status                 Status
	ObjAttr                PostOpAttr
	Tbytes, Fbytes, Abytes uint64 // when OK
	Tfiles, Ffiles, Afiles uint64 // when OK
	Invarsec               uint32 // when OK
}

const fsstatOKSize = 6*8 + 4

// Append appends the FSSTAT3res.
func (x *FsstatRes) Append(b []byte) []byte {
	b = x.ObjAttr.Append(xdr.AppendUint32(b, uint32(x.Status)))
	if x.Status == OK {
		b = xdr.AppendUint64(b, x.Tbytes)
		b = xdr.AppendUint64(b, x.Fbytes)
		b = xdr.AppendUint64(b, x.Abytes)
		b = xdr.AppendUint64(b, x.Tfiles)
		b = xdr.AppendUint64(b, x.Ffiles)
		b = xdr.AppendUint64(b, x.Afiles)
		b = xdr.AppendUint32(b, x.Invarsec)
	}
	return b
}

// Decode decodes FSSTAT3res.
func (x *FsstatRes) Decode(r *xdr.Reader) error {
	*x = FsstatRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.ObjAttr.Decode(r); err != nil || x.Status != OK {
		return err
	}
	p := r.Rest()
	if len(p) < fsstatOKSize {
		return xdr.ErrShortBuffer
	}
	x.Tbytes = be.Uint64(p)
	x.Fbytes = be.Uint64(p[8:])
	x.Abytes = be.Uint64(p[16:])
	x.Tfiles = be.Uint64(p[24:])
	x.Ffiles = be.Uint64(p[32:])
	x.Afiles = be.Uint64(p[40:])
	x.Invarsec = be.Uint32(p[48:])
	return r.Skip(fsstatOKSize)
}

// FSINFO3 properties bits (RFC 1813 §3.3.19).
const (
	FSFLink        = 0x0001 // FSF3_LINK
	FSFSymlink     = 0x0002 // FSF3_SYMLINK
	FSFHomogeneous = 0x0008 // FSF3_HOMOGENEOUS
	FSFCanSetTime  = 0x0010 // FSF3_CANSETTIME
)

// FsinfoArgs are FSINFO3args (RFC 1813 §3.3.19). After Decode, FSRoot
// aliases the input.
type FsinfoArgs struct {
	FSRoot []byte
}

// Append appends the FSINFO3args.
func (x *FsinfoArgs) Append(b []byte) []byte { return xdr.AppendOpaque(b, x.FSRoot) }

// Decode decodes FSINFO3args.
func (x *FsinfoArgs) Decode(r *xdr.Reader) error {
	var err error
	x.FSRoot, err = decodeFH(r)
	return err
}

// FsinfoRes is FSINFO3res (RFC 1813 §3.3.19): the object's attributes, and
// on OK the server's transfer sizes, limits and FSF3 properties bits.
type FsinfoRes struct {
	Status                Status
	ObjAttr               PostOpAttr
	Rtmax, Rtpref, Rtmult uint32 // when OK
	Wtmax, Wtpref, Wtmult uint32 // when OK
	Dtpref                uint32 // when OK
	MaxFileSize           uint64 // when OK
	TimeDelta             Time   // when OK
	Properties            uint32 // when OK
}

const fsinfoOKSize = 7*4 + 8 + 8 + 4

// Append appends the FSINFO3res.
func (x *FsinfoRes) Append(b []byte) []byte {
	b = x.ObjAttr.Append(xdr.AppendUint32(b, uint32(x.Status)))
	if x.Status == OK {
		b = xdr.AppendUint32(b, x.Rtmax)
		b = xdr.AppendUint32(b, x.Rtpref)
		b = xdr.AppendUint32(b, x.Rtmult)
		b = xdr.AppendUint32(b, x.Wtmax)
		b = xdr.AppendUint32(b, x.Wtpref)
		b = xdr.AppendUint32(b, x.Wtmult)
		b = xdr.AppendUint32(b, x.Dtpref)
		b = xdr.AppendUint64(b, x.MaxFileSize)
		b = x.TimeDelta.Append(b)
		b = xdr.AppendUint32(b, x.Properties)
	}
	return b
}

// Decode decodes FSINFO3res.
func (x *FsinfoRes) Decode(r *xdr.Reader) error {
	*x = FsinfoRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.ObjAttr.Decode(r); err != nil || x.Status != OK {
		return err
	}
	p := r.Rest()
	if len(p) < fsinfoOKSize {
		return xdr.ErrShortBuffer
	}
	x.Rtmax = be.Uint32(p)
	x.Rtpref = be.Uint32(p[4:])
	x.Rtmult = be.Uint32(p[8:])
	x.Wtmax = be.Uint32(p[12:])
	x.Wtpref = be.Uint32(p[16:])
	x.Wtmult = be.Uint32(p[20:])
	x.Dtpref = be.Uint32(p[24:])
	x.MaxFileSize = be.Uint64(p[28:])
	x.TimeDelta = Time{Sec: be.Uint32(p[36:]), Nsec: be.Uint32(p[40:])}
	x.Properties = be.Uint32(p[44:])
	return r.Skip(fsinfoOKSize)
}

// PathconfArgs are PATHCONF3args (RFC 1813 §3.3.20). After Decode, Object
// aliases the input.
type PathconfArgs struct {
	Object []byte
}

// Append appends the PATHCONF3args.
func (x *PathconfArgs) Append(b []byte) []byte { return xdr.AppendOpaque(b, x.Object) }

// Decode decodes PATHCONF3args.
func (x *PathconfArgs) Decode(r *xdr.Reader) error {
	var err error
	x.Object, err = decodeFH(r)
	return err
}

// PathconfRes is PATHCONF3res (RFC 1813 §3.3.20): the object's attributes,
// and on OK its POSIX pathconf information.
type PathconfRes struct {
	Status          Status
	ObjAttr         PostOpAttr
	Linkmax         uint32 // when OK
	NameMax         uint32 // name_max, when OK
	NoTrunc         bool   // when OK
	ChownRestricted bool   // when OK
	CaseInsensitive bool   // when OK
	CasePreserving  bool   // when OK
}

// Append appends the PATHCONF3res.
func (x *PathconfRes) Append(b []byte) []byte {
	b = x.ObjAttr.Append(xdr.AppendUint32(b, uint32(x.Status)))
	if x.Status == OK {
		b = xdr.AppendUint32(b, x.Linkmax)
		b = xdr.AppendUint32(b, x.NameMax)
		b = xdr.AppendBool(b, x.NoTrunc)
		b = xdr.AppendBool(b, x.ChownRestricted)
		b = xdr.AppendBool(b, x.CaseInsensitive)
		b = xdr.AppendBool(b, x.CasePreserving)
	}
	return b
}

// Decode decodes PATHCONF3res.
func (x *PathconfRes) Decode(r *xdr.Reader) error {
	*x = PathconfRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.ObjAttr.Decode(r); err != nil || x.Status != OK {
		return err
	}
	if x.Linkmax, err = r.Uint32(); err != nil {
		return err
	}
	if x.NameMax, err = r.Uint32(); err != nil {
		return err
	}
	for _, v := range [...]*bool{&x.NoTrunc, &x.ChownRestricted, &x.CaseInsensitive, &x.CasePreserving} {
		if *v, err = r.Bool(); err != nil {
			return err
		}
	}
	return nil
}
