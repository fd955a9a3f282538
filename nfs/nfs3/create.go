package nfs3

import "github.com/go-rpcrdma/rpcrdma/xdr"

// CreateMode is a createmode3 (RFC 1813 §3.3.8).
type CreateMode uint32

// Values of CreateMode (RFC 1813 §3.3.8, createmode3).
const (
	Unchecked CreateMode = 0 // UNCHECKED
	Guarded   CreateMode = 1 // GUARDED
	Exclusive CreateMode = 2 // EXCLUSIVE
)

// CreateArgs are CREATE3args (RFC 1813 §3.3.8): the name to create and the
// createhow3, whose arm Mode selects: Attr for Unchecked and Guarded, Verf
// for Exclusive. After Decode, Where.Dir aliases the input.
type CreateArgs struct {
	Where DirOpArgs
	Mode  CreateMode
	Attr  Sattr   // obj_attributes, when Unchecked or Guarded
	Verf  [8]byte // when Exclusive
}

// Append appends the CREATE3args.
func (x *CreateArgs) Append(b []byte) []byte {
	b = xdr.AppendUint32(x.Where.Append(b), uint32(x.Mode))
	if x.Mode == Exclusive {
		return append(b, x.Verf[:]...)
	}
	return x.Attr.Append(b)
}

// Decode decodes CREATE3args: a createmode3 other than 0 to 2 fails with
// ErrBadEnum.
func (x *CreateArgs) Decode(r *xdr.Reader) error {
	*x = CreateArgs{}
	if err := x.Where.Decode(r); err != nil {
		return err
	}
	mode, err := decodeEnum3(r)
	if err != nil {
		return err
	}
	x.Mode = CreateMode(mode)
	if x.Mode == Exclusive {
		return decodeVerf(r, &x.Verf)
	}
	return x.Attr.Decode(r)
}

// CreateRes is CREATE3res (RFC 1813 §3.3.8), and the results of MKDIR,
// SYMLINK and MKNOD, which have the same shape (MKDIR3res, SYMLINK3res,
// MKNOD3res, RFC 1813 §3.3.9-§3.3.11): on OK the new object's handle and
// attributes, if the server returns them, and the directory's wcc_data; on
// failure only the directory's wcc_data. After Decode, Obj.FH aliases the
// input.
type CreateRes struct {
	Status  Status
	Obj     PostOpFH   // when OK
	ObjAttr PostOpAttr // when OK
	DirWcc  WccData
}

// MkdirRes is MKDIR3res (RFC 1813 §3.3.9), the same as CREATE3res.
type MkdirRes = CreateRes

// SymlinkRes is SYMLINK3res (RFC 1813 §3.3.10), the same as CREATE3res.
type SymlinkRes = CreateRes

// MknodRes is MKNOD3res (RFC 1813 §3.3.11), the same as CREATE3res.
type MknodRes = CreateRes

// Append appends the CREATE3res (or MKDIR3res, SYMLINK3res, MKNOD3res).
func (x *CreateRes) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(x.Status))
	if x.Status == OK {
		b = x.Obj.Append(b)
		b = x.ObjAttr.Append(b)
	}
	return x.DirWcc.Append(b)
}

// Decode decodes CREATE3res (or MKDIR3res, SYMLINK3res, MKNOD3res); a
// handle longer than FHSize fails with xdr.ErrTooLong.
func (x *CreateRes) Decode(r *xdr.Reader) error {
	*x = CreateRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if x.Status == OK {
		if err = x.Obj.Decode(r); err != nil {
			return err
		}
		if err = x.ObjAttr.Decode(r); err != nil {
			return err
		}
	}
	return x.DirWcc.Decode(r)
}

// MkdirArgs are MKDIR3args (RFC 1813 §3.3.9). After Decode, Where.Dir
// aliases the input.
type MkdirArgs struct {
	Where DirOpArgs
	Attr  Sattr
}

// Append appends the MKDIR3args.
func (x *MkdirArgs) Append(b []byte) []byte { return x.Attr.Append(x.Where.Append(b)) }

// Decode decodes MKDIR3args.
func (x *MkdirArgs) Decode(r *xdr.Reader) error {
	if err := x.Where.Decode(r); err != nil {
		return err
	}
	return x.Attr.Decode(r)
}

// SymlinkArgs are SYMLINK3args (RFC 1813 §3.3.10): the name to create, and
// the symlinkdata3, the link's attributes and its target. After Decode,
// Where.Dir aliases the input.
type SymlinkArgs struct {
	Where DirOpArgs
	Attr  Sattr  // symlink_attributes
	Path  string // symlink_data
}

// Append appends the SYMLINK3args.
func (x *SymlinkArgs) Append(b []byte) []byte {
	return xdr.AppendString(x.Attr.Append(x.Where.Append(b)), x.Path)
}

// Decode decodes SYMLINK3args; a target longer than PathMax fails with
// xdr.ErrTooLong.
func (x *SymlinkArgs) Decode(r *xdr.Reader) error {
	*x = SymlinkArgs{}
	if err := x.Where.Decode(r); err != nil {
		return err
	}
	if err := x.Attr.Decode(r); err != nil {
		return err
	}
	var err error
	x.Path, err = decodeString(r, PathMax)
	return err
}

// MknodArgs are MKNOD3args (RFC 1813 §3.3.11): the name to create, and the
// mknoddata3, whose arm Type selects: Attr and Spec (devicedata3) for
// TypeChr and TypeBlk, Attr alone for TypeSock and TypeFIFO, nothing for
// the other types (which a server answers with NFS3ERR_BADTYPE). After
// Decode, Where.Dir aliases the input.
type MknodArgs struct {
	Where DirOpArgs
	Type  FileType
	Attr  Sattr    // dev_attributes or pipe_attributes
	Spec  SpecData // when TypeChr or TypeBlk
}

// Append appends the MKNOD3args.
func (x *MknodArgs) Append(b []byte) []byte {
	b = xdr.AppendUint32(x.Where.Append(b), uint32(x.Type))
	switch x.Type {
	case TypeChr, TypeBlk:
		b = x.Spec.Append(x.Attr.Append(b))
	case TypeSock, TypeFIFO:
		b = x.Attr.Append(b)
	}
	return b
}

// Decode decodes MKNOD3args: a type outside 1..7 fails with ErrBadEnum;
// TypeReg, TypeDir and TypeLnk decode with no body.
func (x *MknodArgs) Decode(r *xdr.Reader) error {
	*x = MknodArgs{}
	if err := x.Where.Decode(r); err != nil {
		return err
	}
	var err error
	if x.Type, err = decodeFileType(r); err != nil {
		return err
	}
	switch x.Type {
	case TypeChr, TypeBlk:
		if err := x.Attr.Decode(r); err != nil {
			return err
		}
		return x.Spec.Decode(r)
	case TypeSock, TypeFIFO:
		return x.Attr.Decode(r)
	}
	return nil
}
