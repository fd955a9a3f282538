package nfs3

import "github.com/go-rpcrdma/rpcrdma/xdr"

// RemoveArgs are REMOVE3args (RFC 1813 §3.3.12). After Decode,
// Object.Dir aliases the input.
type RemoveArgs struct {
	Object DirOpArgs
}

// RmdirArgs are RMDIR3args (RFC 1813 §3.3.13), the same as REMOVE3args.
type RmdirArgs = RemoveArgs

// Append appends the REMOVE3args (or RMDIR3args).
func (x *RemoveArgs) Append(b []byte) []byte { return x.Object.Append(b) }

// Decode decodes REMOVE3args (or RMDIR3args).
func (x *RemoveArgs) Decode(r *xdr.Reader) error { return x.Object.Decode(r) }

// RemoveRes is REMOVE3res (RFC 1813 §3.3.12): the directory's wcc_data on
// success and on failure.
type RemoveRes struct {
	Status Status
	DirWcc WccData
}

// RmdirRes is RMDIR3res (RFC 1813 §3.3.13), the same as REMOVE3res.
type RmdirRes = RemoveRes

// Append appends the REMOVE3res (or RMDIR3res).
func (x *RemoveRes) Append(b []byte) []byte {
	return x.DirWcc.Append(xdr.AppendUint32(b, uint32(x.Status)))
}

// Decode decodes REMOVE3res (or RMDIR3res).
func (x *RemoveRes) Decode(r *xdr.Reader) error {
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	return x.DirWcc.Decode(r)
}

// RenameArgs are RENAME3args (RFC 1813 §3.3.14). After Decode, From.Dir
// and To.Dir alias the input.
type RenameArgs struct {
	From, To DirOpArgs
}

// Append appends the RENAME3args.
func (x *RenameArgs) Append(b []byte) []byte { return x.To.Append(x.From.Append(b)) }

// Decode decodes RENAME3args.
func (x *RenameArgs) Decode(r *xdr.Reader) error {
	x.To = DirOpArgs{}
	if err := x.From.Decode(r); err != nil {
		return err
	}
	return x.To.Decode(r)
}

// RenameRes is RENAME3res (RFC 1813 §3.3.14): both directories' wcc_data
// on success and on failure.
type RenameRes struct {
	Status     Status
	FromDirWcc WccData
	ToDirWcc   WccData
}

// Append appends the RENAME3res.
func (x *RenameRes) Append(b []byte) []byte {
	b = x.FromDirWcc.Append(xdr.AppendUint32(b, uint32(x.Status)))
	return x.ToDirWcc.Append(b)
}

// Decode decodes RENAME3res.
func (x *RenameRes) Decode(r *xdr.Reader) error {
	*x = RenameRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.FromDirWcc.Decode(r); err != nil {
		return err
	}
	return x.ToDirWcc.Decode(r)
}

// LinkArgs are LINK3args (RFC 1813 §3.3.15): the file to link, and the
// new name. After Decode, File and Link.Dir alias the input.
type LinkArgs struct {
	File []byte
	Link DirOpArgs
}

// Append appends the LINK3args.
func (x *LinkArgs) Append(b []byte) []byte {
	return x.Link.Append(xdr.AppendOpaque(b, x.File))
}

// Decode decodes LINK3args.
func (x *LinkArgs) Decode(r *xdr.Reader) error {
	*x = LinkArgs{}
	var err error
	if x.File, err = decodeFH(r); err != nil {
		return err
	}
	return x.Link.Decode(r)
}

// LinkRes is LINK3res (RFC 1813 §3.3.15): the file's attributes and the
// directory's wcc_data on success and on failure.
type LinkRes struct {
	Status     Status
	FileAttr   PostOpAttr
	LinkDirWcc WccData
}

// Append appends the LINK3res.
func (x *LinkRes) Append(b []byte) []byte {
	b = x.FileAttr.Append(xdr.AppendUint32(b, uint32(x.Status)))
	return x.LinkDirWcc.Append(b)
}

// Decode decodes LINK3res.
func (x *LinkRes) Decode(r *xdr.Reader) error {
	*x = LinkRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.FileAttr.Decode(r); err != nil {
		return err
	}
	return x.LinkDirWcc.Decode(r)
}
