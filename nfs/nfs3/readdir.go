package nfs3

import "github.com/go-rpcrdma/rpcrdma/xdr"

// ReaddirArgs are READDIR3args (RFC 1813 §3.3.16). After Decode, Dir
// aliases the input.
type ReaddirArgs struct {
	Dir    []byte
	Cookie uint64
	Verf   [8]byte // cookieverf
	Count  uint32
}

// Append appends the READDIR3args.
func (x *ReaddirArgs) Append(b []byte) []byte {
	b = xdr.AppendOpaque(b, x.Dir)
	b = xdr.AppendUint64(b, x.Cookie)
	b = append(b, x.Verf[:]...)
	return xdr.AppendUint32(b, x.Count)
}

// Decode decodes READDIR3args.
func (x *ReaddirArgs) Decode(r *xdr.Reader) error {
	*x = ReaddirArgs{}
	var err error
	if x.Dir, err = decodeFH(r); err != nil {
		return err
	}
	if x.Cookie, err = r.Uint64(); err != nil {
		return err
	}
	if err = decodeVerf(r, &x.Verf); err != nil {
		return err
	}
	x.Count, err = r.Uint32()
	return err
}

// ReaddirTailSize is the size of the end of a READDIR or READDIRPLUS
// result's entry list, as AppendReaddirTail appends it.
const ReaddirTailSize = 8

// AppendReaddirTail appends the end of the entry list of a READDIR3resok or
// READDIRPLUS3resok (RFC 1813 §3.3.16, §3.3.17): the value_follows FALSE
// that ends the list, then eof.
//
// A server that builds a result within a byte budget appends the head
// (ReaddirRes.AppendHead or ReaddirplusRes.AppendHead, with Entries left
// empty), then each entry with Entry.Append or EntryPlus.Append for as long
// as Size says it fits with ReaddirTailSize bytes to spare, then the tail.
// The result is the same as Append with those entries.
func AppendReaddirTail(b []byte, eof bool) []byte {
	return xdr.AppendBool(xdr.AppendBool(b, false), eof)
}

// Entry is an entry3 (RFC 1813 §3.3.16), one name of a READDIR result.
type Entry struct {
	FileID uint64
	Name   string
	Cookie uint64
}

// Append appends the entry as an element of the entry list: value_follows
// TRUE, then the fileid, name and cookie. It adds e.Size() bytes.
func (e *Entry) Append(b []byte) []byte {
	b = xdr.AppendBool(b, true)
	b = xdr.AppendUint64(b, e.FileID)
	b = xdr.AppendString(b, e.Name)
	return xdr.AppendUint64(b, e.Cookie)
}

// Size returns the number of bytes Append adds, the leading value_follows
// included.
func (e *Entry) Size() int { return 4 + 8 + 4 + xdr.RoundUp(len(e.Name)) + 8 }

// decode decodes an entry3 after its value_follows.
func (e *Entry) decode(r *xdr.Reader) error {
	var err error
	if e.FileID, err = r.Uint64(); err != nil {
		return err
	}
	if e.Name, err = decodeString(r, NameMax); err != nil {
		return err
	}
	e.Cookie, err = r.Uint64()
	return err
}

// ReaddirRes is READDIR3res (RFC 1813 §3.3.16): the directory's attributes,
// and on OK the cookie verifier, the entries and whether they end the
// directory.
type ReaddirRes struct {
	Status  Status
	DirAttr PostOpAttr
	Verf    [8]byte // cookieverf, when OK
	Entries []Entry // when OK
	EOF     bool    // when OK
}

// AppendHead appends the READDIR3res up to the entries: the status, the
// directory's attributes and, if OK, the cookie verifier. If Status is not
// OK, that is the whole result. See AppendReaddirTail.
func (x *ReaddirRes) AppendHead(b []byte) []byte {
	b = x.DirAttr.Append(xdr.AppendUint32(b, uint32(x.Status)))
	if x.Status == OK {
		b = append(b, x.Verf[:]...)
	}
	return b
}

// Append appends the READDIR3res: AppendHead, then if OK each entry and
// AppendReaddirTail.
func (x *ReaddirRes) Append(b []byte) []byte {
	b = x.AppendHead(b)
	if x.Status != OK {
		return b
	}
	for i := range x.Entries {
		b = x.Entries[i].Append(b)
	}
	return AppendReaddirTail(b, x.EOF)
}

// Decode decodes READDIR3res; a name longer than NameMax fails with
// xdr.ErrTooLong. Entries is allocated as entries are decoded.
func (x *ReaddirRes) Decode(r *xdr.Reader) error {
	*x = ReaddirRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.DirAttr.Decode(r); err != nil || x.Status != OK {
		return err
	}
	if err = decodeVerf(r, &x.Verf); err != nil {
		return err
	}
	for {
		more, err := r.Bool()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		var e Entry
		if err := e.decode(r); err != nil {
			return err
		}
		x.Entries = append(x.Entries, e)
	}
	x.EOF, err = r.Bool()
	return err
}

// ReaddirplusArgs are READDIRPLUS3args (RFC 1813 §3.3.17). After Decode,
// Dir aliases the input.
type ReaddirplusArgs struct {
	Dir      []byte
	Cookie   uint64
	Verf     [8]byte // cookieverf
	DirCount uint32
	MaxCount uint32
}

// Append appends the READDIRPLUS3args.
func (x *ReaddirplusArgs) Append(b []byte) []byte {
	b = xdr.AppendOpaque(b, x.Dir)
	b = xdr.AppendUint64(b, x.Cookie)
	b = append(b, x.Verf[:]...)
	b = xdr.AppendUint32(b, x.DirCount)
	return xdr.AppendUint32(b, x.MaxCount)
}

// Decode decodes READDIRPLUS3args.
func (x *ReaddirplusArgs) Decode(r *xdr.Reader) error {
	*x = ReaddirplusArgs{}
	var err error
	if x.Dir, err = decodeFH(r); err != nil {
		return err
	}
	if x.Cookie, err = r.Uint64(); err != nil {
		return err
	}
	if err = decodeVerf(r, &x.Verf); err != nil {
		return err
	}
	if x.DirCount, err = r.Uint32(); err != nil {
		return err
	}
	x.MaxCount, err = r.Uint32()
	return err
}

// EntryPlus is an entryplus3 (RFC 1813 §3.3.17), one name of a
// READDIRPLUS result with its attributes and handle. After Decode, FH.FH
// aliases the input.
type EntryPlus struct {
	FileID uint64
	Name   string
	Cookie uint64
	Attr   PostOpAttr // name_attributes
	FH     PostOpFH   // name_handle
}

// Append appends the entry as an element of the entry list: value_follows
// TRUE, then the fileid, name, cookie, attributes and handle. It adds
// e.Size() bytes.
func (e *EntryPlus) Append(b []byte) []byte {
	b = xdr.AppendBool(b, true)
	b = xdr.AppendUint64(b, e.FileID)
	b = xdr.AppendString(b, e.Name)
	b = xdr.AppendUint64(b, e.Cookie)
	b = e.Attr.Append(b)
	return e.FH.Append(b)
}

// Size returns the number of bytes Append adds, the leading value_follows
// included.
func (e *EntryPlus) Size() int {
	return 4 + 8 + 4 + xdr.RoundUp(len(e.Name)) + 8 + e.Attr.size() + e.FH.size()
}

// decode decodes an entryplus3 after its value_follows.
func (e *EntryPlus) decode(r *xdr.Reader) error {
	var err error
	if e.FileID, err = r.Uint64(); err != nil {
		return err
	}
	if e.Name, err = decodeString(r, NameMax); err != nil {
		return err
	}
	if e.Cookie, err = r.Uint64(); err != nil {
		return err
	}
	if err = e.Attr.Decode(r); err != nil {
		return err
	}
	return e.FH.Decode(r)
}

// ReaddirplusRes is READDIRPLUS3res (RFC 1813 §3.3.17): the directory's
// attributes, and on OK the cookie verifier, the entries and whether they
// end the directory.
type ReaddirplusRes struct {
	Status  Status
	DirAttr PostOpAttr
	Verf    [8]byte     // cookieverf, when OK
	Entries []EntryPlus // when OK
	EOF     bool        // when OK
}

// AppendHead appends the READDIRPLUS3res up to the entries: the status, the
// directory's attributes and, if OK, the cookie verifier. If Status is not
// OK, that is the whole result. See AppendReaddirTail.
func (x *ReaddirplusRes) AppendHead(b []byte) []byte {
	b = x.DirAttr.Append(xdr.AppendUint32(b, uint32(x.Status)))
	if x.Status == OK {
		b = append(b, x.Verf[:]...)
	}
	return b
}

// Append appends the READDIRPLUS3res: AppendHead, then if OK each entry and
// AppendReaddirTail.
func (x *ReaddirplusRes) Append(b []byte) []byte {
	b = x.AppendHead(b)
	if x.Status != OK {
		return b
	}
	for i := range x.Entries {
		b = x.Entries[i].Append(b)
	}
	return AppendReaddirTail(b, x.EOF)
}

// Decode decodes READDIRPLUS3res; a name longer than NameMax or a handle
// longer than FHSize fails with xdr.ErrTooLong. Entries is allocated as
// entries are decoded.
func (x *ReaddirplusRes) Decode(r *xdr.Reader) error {
	*x = ReaddirplusRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.DirAttr.Decode(r); err != nil || x.Status != OK {
		return err
	}
	if err = decodeVerf(r, &x.Verf); err != nil {
		return err
	}
	for {
		more, err := r.Bool()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		var e EntryPlus
		if err := e.decode(r); err != nil {
			return err
		}
		x.Entries = append(x.Entries, e)
	}
	x.EOF, err = r.Bool()
	return err
}
