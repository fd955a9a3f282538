package nfs3

import "github.com/go-rpcrdma/rpcrdma/xdr"

// GetattrArgs are GETATTR3args (RFC 1813 §3.3.1). After Decode, Object
// aliases the input.
type GetattrArgs struct {
	Object []byte
}

// Append appends the GETATTR3args.
func (x *GetattrArgs) Append(b []byte) []byte { return xdr.AppendOpaque(b, x.Object) }

// Decode decodes GETATTR3args; a handle longer than FHSize fails with
// xdr.ErrTooLong.
func (x *GetattrArgs) Decode(r *xdr.Reader) error {
	var err error
	x.Object, err = decodeFH(r)
	return err
}

// GetattrRes is GETATTR3res (RFC 1813 §3.3.1): on OK the object's
// attributes; on failure nothing but the status.
type GetattrRes struct {
	Status Status
	Attr   Fattr // obj_attributes, when OK
}

// Append appends the GETATTR3res.
func (x *GetattrRes) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(x.Status))
	if x.Status == OK {
		b = x.Attr.Append(b)
	}
	return b
}

// Decode decodes GETATTR3res.
func (x *GetattrRes) Decode(r *xdr.Reader) error {
	*x = GetattrRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil || x.Status != OK {
		return err
	}
	return x.Attr.Decode(r)
}

// SetattrArgs are SETATTR3args (RFC 1813 §3.3.2). With Check set (the
// sattrguard3), the server changes nothing unless the object's ctime equals
// CtimeGuard. After Decode, Object aliases the input.
type SetattrArgs struct {
	Object     []byte
	NewAttr    Sattr
	Check      bool
	CtimeGuard Time // obj_ctime, when Check
}

// Append appends the SETATTR3args.
func (x *SetattrArgs) Append(b []byte) []byte {
	b = xdr.AppendOpaque(b, x.Object)
	b = x.NewAttr.Append(b)
	b = xdr.AppendBool(b, x.Check)
	if x.Check {
		b = x.CtimeGuard.Append(b)
	}
	return b
}

// Decode decodes SETATTR3args.
func (x *SetattrArgs) Decode(r *xdr.Reader) error {
	*x = SetattrArgs{}
	var err error
	if x.Object, err = decodeFH(r); err != nil {
		return err
	}
	if err = x.NewAttr.Decode(r); err != nil {
		return err
	}
	if x.Check, err = r.Bool(); err != nil || !x.Check {
		return err
	}
	return x.CtimeGuard.Decode(r)
}

// SetattrRes is SETATTR3res (RFC 1813 §3.3.2): the object's wcc_data on
// success and on failure.
type SetattrRes struct {
	Status Status
	Wcc    WccData // obj_wcc
}

// Append appends the SETATTR3res.
func (x *SetattrRes) Append(b []byte) []byte {
	return x.Wcc.Append(xdr.AppendUint32(b, uint32(x.Status)))
}

// Decode decodes SETATTR3res.
func (x *SetattrRes) Decode(r *xdr.Reader) error {
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	return x.Wcc.Decode(r)
}
