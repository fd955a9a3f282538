package nfs3

import "github.com/go-rpcrdma/rpcrdma/xdr"

// LookupArgs are LOOKUP3args (RFC 1813 §3.3.3). After Decode, What.Dir
// aliases the input.
type LookupArgs struct {
	What DirOpArgs
}

// Append appends the LOOKUP3args.
func (x *LookupArgs) Append(b []byte) []byte { return x.What.Append(b) }

// Decode decodes LOOKUP3args: a handle longer than FHSize or a name longer
// than NameMax fails with xdr.ErrTooLong.
func (x *LookupArgs) Decode(r *xdr.Reader) error { return x.What.Decode(r) }

// LookupRes is LOOKUP3res (RFC 1813 §3.3.3): on OK the object's handle, its
// attributes and the directory's; on failure only the directory's
// attributes. After Decode, Object aliases the input.
type LookupRes struct {
	Status  Status
	Object  []byte     // when OK
	ObjAttr PostOpAttr // when OK
	DirAttr PostOpAttr
}

// Append appends the LOOKUP3res.
func (x *LookupRes) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(x.Status))
	if x.Status == OK {
		b = xdr.AppendOpaque(b, x.Object)
		b = x.ObjAttr.Append(b)
	}
	return x.DirAttr.Append(b)
}

// Decode decodes LOOKUP3res; a handle longer than FHSize fails with
// xdr.ErrTooLong.
func (x *LookupRes) Decode(r *xdr.Reader) error {
	*x = LookupRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if x.Status == OK {
		if x.Object, err = decodeFH(r); err != nil {
			return err
		}
		if err = x.ObjAttr.Decode(r); err != nil {
			return err
		}
	}
	return x.DirAttr.Decode(r)
}

// ACCESS3 permission bits (RFC 1813 §3.3.4).
const (
	AccessRead    = 0x01 // ACCESS3_READ
	AccessLookup  = 0x02 // ACCESS3_LOOKUP
	AccessModify  = 0x04 // ACCESS3_MODIFY
	AccessExtend  = 0x08 // ACCESS3_EXTEND
	AccessDelete  = 0x10 // ACCESS3_DELETE
	AccessExecute = 0x20 // ACCESS3_EXECUTE
)

// AccessArgs are ACCESS3args (RFC 1813 §3.3.4): the ACCESS3 bits to check.
// After Decode, Object aliases the input.
type AccessArgs struct {
	Object []byte
	Access uint32
}

// Append appends the ACCESS3args.
func (x *AccessArgs) Append(b []byte) []byte {
	return xdr.AppendUint32(xdr.AppendOpaque(b, x.Object), x.Access)
}

// Decode decodes ACCESS3args.
func (x *AccessArgs) Decode(r *xdr.Reader) error {
	*x = AccessArgs{}
	var err error
	if x.Object, err = decodeFH(r); err != nil {
		return err
	}
	x.Access, err = r.Uint32()
	return err
}

// AccessRes is ACCESS3res (RFC 1813 §3.3.4): the object's attributes, and
// on OK the ACCESS3 bits granted.
type AccessRes struct {
	Status  Status
	ObjAttr PostOpAttr
	Access  uint32 // when OK
}

// Append appends the ACCESS3res.
func (x *AccessRes) Append(b []byte) []byte {
	b = x.ObjAttr.Append(xdr.AppendUint32(b, uint32(x.Status)))
	if x.Status == OK {
		b = xdr.AppendUint32(b, x.Access)
	}
	return b
}

// Decode decodes ACCESS3res.
func (x *AccessRes) Decode(r *xdr.Reader) error {
	*x = AccessRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.ObjAttr.Decode(r); err != nil || x.Status != OK {
		return err
	}
	x.Access, err = r.Uint32()
	return err
}

// ReadlinkArgs are READLINK3args (RFC 1813 §3.3.5). After Decode, Symlink
// aliases the input.
type ReadlinkArgs struct {
	Symlink []byte
}

// Append appends the READLINK3args.
func (x *ReadlinkArgs) Append(b []byte) []byte { return xdr.AppendOpaque(b, x.Symlink) }

// Decode decodes READLINK3args.
func (x *ReadlinkArgs) Decode(r *xdr.Reader) error {
	var err error
	x.Symlink, err = decodeFH(r)
	return err
}

// ReadlinkRes is READLINK3res (RFC 1813 §3.3.5): the link's attributes,
// and on OK its target.
type ReadlinkRes struct {
	Status      Status
	SymlinkAttr PostOpAttr
	Path        string // data, when OK
}

// Append appends the READLINK3res.
func (x *ReadlinkRes) Append(b []byte) []byte {
	b = x.SymlinkAttr.Append(xdr.AppendUint32(b, uint32(x.Status)))
	if x.Status == OK {
		b = xdr.AppendString(b, x.Path)
	}
	return b
}

// Decode decodes READLINK3res; a path longer than PathMax fails with
// xdr.ErrTooLong.
func (x *ReadlinkRes) Decode(r *xdr.Reader) error {
	*x = ReadlinkRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.SymlinkAttr.Decode(r); err != nil || x.Status != OK {
		return err
	}
	x.Path, err = decodeString(r, PathMax)
	return err
}
