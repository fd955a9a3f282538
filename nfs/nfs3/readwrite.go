package nfs3

import "github.com/go-rpcrdma/rpcrdma/xdr"

// ReadArgs are READ3args (RFC 1813 §3.3.6). After Decode, File aliases the
// input.
type ReadArgs struct {
	File   []byte
	Offset uint64
	Count  uint32
}

// Append appends the READ3args.
func (x *ReadArgs) Append(b []byte) []byte {
	b = xdr.AppendOpaque(b, x.File)
	b = xdr.AppendUint64(b, x.Offset)
	return xdr.AppendUint32(b, x.Count)
}

// Decode decodes READ3args.
func (x *ReadArgs) Decode(r *xdr.Reader) error {
	*x = ReadArgs{}
	var err error
	if x.File, err = decodeFH(r); err != nil {
		return err
	}
	if x.Offset, err = r.Uint64(); err != nil {
		return err
	}
	x.Count, err = r.Uint32()
	return err
}

// ReadRes is READ3res (RFC 1813 §3.3.6): the file's attributes, and on OK
// the count of bytes read, whether they end the file, and the bytes. Count
// and len(Data) are encoded as they are, and decoded without comparing
// them; RFC 1813 has them equal. After Decode, Data aliases the input.
type ReadRes struct {
	Status   Status
	FileAttr PostOpAttr
	Count    uint32 // when OK
	EOF      bool   // when OK
	Data     []byte // when OK
}

// AppendHead appends the READ3res up to and including the length word of
// the data, len(x.Data), without the data's bytes: a server that places the
// data itself (as in an RPC-over-RDMA Write chunk, or with vectored I/O)
// sets Data to the bytes that will follow, or any slice of their length,
// and sends them with their padding to a multiple of four (xdr.Padding).
// Append is AppendHead, then Data, then that padding. If Status is not OK,
// AppendHead appends the whole result.
func (x *ReadRes) AppendHead(b []byte) []byte {
	b = x.FileAttr.Append(xdr.AppendUint32(b, uint32(x.Status)))
	if x.Status == OK {
		b = xdr.AppendUint32(b, x.Count)
		b = xdr.AppendBool(b, x.EOF)
		b = xdr.AppendUint32(b, uint32(len(x.Data)))
	}
	return b
}

// Append appends the READ3res.
func (x *ReadRes) Append(b []byte) []byte {
	b = x.AppendHead(b)
	if x.Status == OK {
		b = xdr.AppendFixedOpaque(b, x.Data)
	}
	return b
}

// Decode decodes READ3res. The data's length is bounded only by the bytes
// present.
func (x *ReadRes) Decode(r *xdr.Reader) error {
	*x = ReadRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.FileAttr.Decode(r); err != nil || x.Status != OK {
		return err
	}
	if x.Count, err = r.Uint32(); err != nil {
		return err
	}
	if x.EOF, err = r.Bool(); err != nil {
		return err
	}
	x.Data, err = r.Opaque(r.Len())
	return err
}

// StableHow is a stable_how (RFC 1813 §3.3.7): how far WRITE commits the
// data before replying.
type StableHow uint32

// Values of StableHow (RFC 1813 §3.3.7, stable_how).
const (
	Unstable StableHow = 0 // UNSTABLE
	DataSync StableHow = 1 // DATA_SYNC
	FileSync StableHow = 2 // FILE_SYNC
)

// WriteArgs are WRITE3args (RFC 1813 §3.3.7). Count and len(Data) are
// encoded as they are, and decoded without comparing them; RFC 1813 has
// them equal (knfsd answers GARBAGE_ARGS when they are not). After Decode,
// File and Data alias the input.
type WriteArgs struct {
	File   []byte
	Offset uint64
	Count  uint32
	Stable StableHow
	Data   []byte
}

// AppendHead appends the WRITE3args up to and including the length word of
// the data, len(x.Data), without the data's bytes, for a client that sends
// the data itself (as in an RPC-over-RDMA Read chunk). Append is
// AppendHead, then Data, then its padding to a multiple of four.
func (x *WriteArgs) AppendHead(b []byte) []byte {
	b = xdr.AppendOpaque(b, x.File)
	b = xdr.AppendUint64(b, x.Offset)
	b = xdr.AppendUint32(b, x.Count)
	b = xdr.AppendUint32(b, uint32(x.Stable))
	return xdr.AppendUint32(b, uint32(len(x.Data)))
}

// Append appends the WRITE3args.
func (x *WriteArgs) Append(b []byte) []byte {
	return xdr.AppendFixedOpaque(x.AppendHead(b), x.Data)
}

// Decode decodes WRITE3args: a stable_how other than 0 to 2 fails with
// ErrBadEnum. The data's length is bounded only by the bytes present.
func (x *WriteArgs) Decode(r *xdr.Reader) error {
	*x = WriteArgs{}
	var err error
	if x.File, err = decodeFH(r); err != nil {
		return err
	}
	if x.Offset, err = r.Uint64(); err != nil {
		return err
	}
	if x.Count, err = r.Uint32(); err != nil {
		return err
	}
	stable, err := decodeEnum3(r)
	if err != nil {
		return err
	}
	x.Stable = StableHow(stable)
	x.Data, err = r.Opaque(r.Len())
	return err
}

// WriteRes is WRITE3res (RFC 1813 §3.3.7): the file's wcc_data, and on OK
// the count of bytes written, how they were committed and the server's
// write verifier.
type WriteRes struct {
	Status    Status
	Wcc       WccData   // file_wcc
	Count     uint32    // when OK
	Committed StableHow // when OK
	Verf      [8]byte   // when OK
}

// Append appends the WRITE3res.
func (x *WriteRes) Append(b []byte) []byte {
	b = x.Wcc.Append(xdr.AppendUint32(b, uint32(x.Status)))
	if x.Status == OK {
		b = xdr.AppendUint32(b, x.Count)
		b = xdr.AppendUint32(b, uint32(x.Committed))
		b = append(b, x.Verf[:]...)
	}
	return b
}

// Decode decodes WRITE3res: a stable_how other than 0 to 2 fails with
// ErrBadEnum.
func (x *WriteRes) Decode(r *xdr.Reader) error {
	*x = WriteRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.Wcc.Decode(r); err != nil || x.Status != OK {
		return err
	}
	if x.Count, err = r.Uint32(); err != nil {
		return err
	}
	committed, err := decodeEnum3(r)
	if err != nil {
		return err
	}
	x.Committed = StableHow(committed)
	return decodeVerf(r, &x.Verf)
}

// CommitArgs are COMMIT3args (RFC 1813 §3.3.21): Count 0 means to the end
// of the file. After Decode, File aliases the input.
type CommitArgs struct {
	File   []byte
	Offset uint64
	Count  uint32
}

// Append appends the COMMIT3args.
func (x *CommitArgs) Append(b []byte) []byte {
	b = xdr.AppendOpaque(b, x.File)
	b = xdr.AppendUint64(b, x.Offset)
	return xdr.AppendUint32(b, x.Count)
}

// Decode decodes COMMIT3args.
func (x *CommitArgs) Decode(r *xdr.Reader) error {
	*x = CommitArgs{}
	var err error
	if x.File, err = decodeFH(r); err != nil {
		return err
	}
	if x.Offset, err = r.Uint64(); err != nil {
		return err
	}
	x.Count, err = r.Uint32()
	return err
}

// CommitRes is COMMIT3res (RFC 1813 §3.3.21): the file's wcc_data, and on
// OK the server's write verifier.
type CommitRes struct {
	Status Status
	Wcc    WccData // file_wcc
	Verf   [8]byte // when OK
}

// Append appends the COMMIT3res.
func (x *CommitRes) Append(b []byte) []byte {
	b = x.Wcc.Append(xdr.AppendUint32(b, uint32(x.Status)))
	if x.Status == OK {
		b = append(b, x.Verf[:]...)
	}
	return b
}

// Decode decodes COMMIT3res.
func (x *CommitRes) Decode(r *xdr.Reader) error {
	*x = CommitRes{}
	var err error
	if x.Status, err = decodeStatus(r); err != nil {
		return err
	}
	if err = x.Wcc.Decode(r); err != nil || x.Status != OK {
		return err
	}
	return decodeVerf(r, &x.Verf)
}
