package nfs3

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// boundCase is a variable-length field of a type: the valid encoding that
// precedes it, and its bound.
type boundCase struct {
	name   string
	v      codec
	prefix []byte
	// max is the field's bound in bytes, or in items for auth_flavors;
	// -1 for data that only the bytes present bound.
	max int
	// allocs is the number of allocations decoding the prefix takes (its
	// strings).
	allocs int
}

// u32 returns b followed by the words v, in a new slice.
func u32(b []byte, v ...uint32) []byte {
	b = cat(b)
	for _, x := range v {
		b = xdr.AppendUint32(b, x)
	}
	return b
}

// cat returns the concatenation of parts in a new slice.
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func boundCases() []boundCase {
	fhEnc := xdr.AppendOpaque(nil, fh)
	dirop := (&DirOpArgs{Dir: fh, Name: "name"}).Append(nil)
	sattrNone := (&Sattr{}).Append(nil)
	okHead := u32(nil, uint32(OK), 0)                        // status OK, no attributes
	dirHead := u32(cat(u32(nil, uint32(OK), 0), verf[:]), 1) // + verf, value_follows
	var c []boundCase
	for _, v := range []codec{&GetattrArgs{}, &SetattrArgs{}, &AccessArgs{}, &ReadlinkArgs{}, &ReadArgs{},
		&WriteArgs{}, &CommitArgs{}, &ReaddirArgs{}, &ReaddirplusArgs{}, &FsstatArgs{}, &FsinfoArgs{},
		&PathconfArgs{}, &LinkArgs{}, &LookupArgs{}, &CreateArgs{}, &MkdirArgs{}, &SymlinkArgs{},
		&MknodArgs{}, &RemoveArgs{}, &RenameArgs{}, &DirOpArgs{}} {
		c = append(c, boundCase{"handle", v, nil, FHSize, 0})
	}
	for _, v := range []codec{&LookupArgs{}, &CreateArgs{}, &MkdirArgs{}, &SymlinkArgs{}, &MknodArgs{},
		&RemoveArgs{}, &RenameArgs{}, &DirOpArgs{}} {
		c = append(c, boundCase{"name", v, fhEnc, NameMax, 0})
	}
	c = append(c, []boundCase{
		{"to.handle", &RenameArgs{}, dirop, FHSize, 1},
		{"to.name", &RenameArgs{}, cat(dirop, fhEnc), NameMax, 1},
		{"link.handle", &LinkArgs{}, fhEnc, FHSize, 0},
		{"link.name", &LinkArgs{}, cat(fhEnc, fhEnc), NameMax, 0},
		{"path", &SymlinkArgs{}, cat(dirop, sattrNone), PathMax, 1},
		{"data", &WriteArgs{}, cat(fhEnc, u32(nil, 0, 0, 7, uint32(FileSync))), -1, 0},
		{"object", &LookupRes{}, u32(nil, uint32(OK)), FHSize, 0},
		{"path", &ReadlinkRes{}, okHead, PathMax, 0},
		{"data", &ReadRes{}, u32(okHead, 5, 1), -1, 0},
		{"obj", &CreateRes{}, u32(nil, uint32(OK), 1), FHSize, 0},
		{"obj", &PostOpFH{}, u32(nil, 1), FHSize, 0},
		{"entry.name", &ReaddirRes{}, u32(dirHead, 0, 9), NameMax, 0},
		{"entry.name", &ReaddirplusRes{}, u32(dirHead, 0, 9), NameMax, 0},
		{"entry.handle", &ReaddirplusRes{}, cat(u32(dirHead, 0, 9), xdr.AppendString(nil, "name"), u32(nil, 0, 1, 0, 1)), FHSize, 1},
		{"path", &MntArgs{}, nil, MntPathLen, 0},
		{"path", &UmntArgs{}, nil, MntPathLen, 0},
		{"fhandle", &MntRes{}, u32(nil, uint32(MntOK)), FHSize, 0},
		{"auth_flavors", &MntRes{}, cat(u32(nil, uint32(MntOK)), fhEnc), MaxAuthFlavors, 0},
		{"hostname", &DumpRes{}, u32(nil, 1), MntNameLen, 0},
		{"directory", &DumpRes{}, cat(u32(nil, 1), xdr.AppendString(nil, "host")), MntPathLen, 1},
		{"dir", &ExportRes{}, u32(nil, 1), MntPathLen, 0},
		{"group", &ExportRes{}, cat(u32(nil, 1), xdr.AppendString(nil, "/export"), u32(nil, 1)), MntNameLen, 1},
	}...)
	return c
}

// TestBounds puts a length one past each field's bound, and the hostile
// lengths 0x7ffffff0 and 0xffffffff, in every variable-length field, with
// bytes behind it: each must be rejected, with xdr.ErrTooLong when the
// bytes are there, and without allocating.
func TestBounds(t *testing.T) {
	tail := make([]byte, 256)
	for _, c := range boundCases() {
		name := typeName(c.v) + "." + c.name
		var inputs [][]byte
		if c.max >= 0 {
			over := u32(c.prefix, uint32(c.max+1))
			n := xdr.RoundUp(c.max + 1)
			if c.name == "auth_flavors" {
				n = 4 * (c.max + 1)
			}
			over = append(over, make([]byte, n+len(tail))...)
			inputs = append(inputs, over)
		}
		for _, l := range []uint32{0x7ffffff0, 0xffffffff} {
			inputs = append(inputs, cat(u32(c.prefix, l), tail))
		}
		for i, in := range inputs {
			x := fresh(c.v)
			r := xdr.NewReader(in)
			err := x.Decode(&r)
			if i == 0 && c.max >= 0 {
				if err != xdr.ErrTooLong {
					t.Errorf("%s: length %d: %v, want %v", name, c.max+1, err, xdr.ErrTooLong)
				}
			} else if err != xdr.ErrTooLong && err != xdr.ErrShortBuffer {
				t.Errorf("%s: input %d: %v", name, i, err)
			}
			// The reader is outside the measured function: a call
			// through the codec interface makes it escape.
			var rr xdr.Reader
			allocs := testing.AllocsPerRun(20, func() {
				rr.Reset(in)
				_ = x.Decode(&rr)
			})
			if int(allocs) > c.allocs {
				t.Errorf("%s: input %d: %v allocations, want at most %d", name, i, allocs, c.allocs)
			}
		}
		// The prefix itself must be valid up to the field: the same
		// prefix with an empty field must get past it.
		r := xdr.NewReader(cat(u32(c.prefix, 0), tail))
		if err := fresh(c.v).Decode(&r); r.Offset() < len(c.prefix)+4 && err != nil {
			t.Errorf("%s: prefix with an empty field: %v at offset %d", name, err, r.Offset())
		}
	}
}

// TestBadEnums checks that enumerations outside their range fail with
// ErrBadEnum, and bad booleans with xdr.ErrBadBool.
func TestBadEnums(t *testing.T) {
	fhEnc := xdr.AppendOpaque(nil, fh)
	dirop := (&DirOpArgs{Dir: fh, Name: "n"}).Append(nil)
	for _, c := range []struct {
		name string
		v    codec
		in   []byte
		want error
	}{
		{"ftype3 0", &Fattr{}, u32(make([]byte, 0, 84), 0), ErrBadEnum},
		{"ftype3 8", &Fattr{}, u32(nil, 8), ErrBadEnum},
		{"ftype3 mknod", &MknodArgs{}, u32(dirop, 0), ErrBadEnum},
		{"ftype3 mknod 8", &MknodArgs{}, u32(dirop, 8), ErrBadEnum},
		{"stable_how", &WriteArgs{}, u32(fhEnc, 0, 0, 0, 3), ErrBadEnum},
		{"committed", &WriteRes{}, u32(nil, 0, 0, 0, 7, 3), ErrBadEnum},
		{"createmode3", &CreateArgs{}, u32(dirop, 3), ErrBadEnum},
		{"time_how", &SetTime{}, u32(nil, 3), ErrBadEnum},
		{"time_how max", &SetTime{}, u32(nil, 0xffffffff), ErrBadEnum},
		{"sattr mtime", &Sattr{}, u32(nil, 0, 0, 0, 0, 0, 3), ErrBadEnum},
		{"post_op_attr", &PostOpAttr{}, u32(nil, 2), xdr.ErrBadBool},
		{"pre_op_attr", &PreOpAttr{}, u32(nil, 2), xdr.ErrBadBool},
		{"post_op_fh3", &PostOpFH{}, u32(nil, 0xffffffff), xdr.ErrBadBool},
		{"set_mode3", &Sattr{}, u32(nil, 2), xdr.ErrBadBool},
		{"sattrguard3", &SetattrArgs{}, u32(cat(fhEnc, make([]byte, 24)), 2), xdr.ErrBadBool},
		{"eof", &ReadRes{}, u32(nil, 0, 0, 5, 2), xdr.ErrBadBool},
		{"value_follows", &ReaddirRes{}, u32(cat(u32(nil, 0, 0), verf[:]), 2), xdr.ErrBadBool},
		{"pathconf", &PathconfRes{}, u32(nil, 0, 0, 1, 2, 1, 1, 1, 3), xdr.ErrBadBool},
		{"mountlist", &DumpRes{}, u32(nil, 2), xdr.ErrBadBool},
		{"groups", &ExportRes{}, u32(xdr.AppendString(u32(nil, 1), "/e"), 5), xdr.ErrBadBool},
	} {
		in := cat(c.in, make([]byte, 128))
		r := xdr.NewReader(in)
		if err := c.v.Decode(&r); err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// Unknown statuses decode, as failures.
	r := xdr.NewReader(u32(nil, 12345, 0))
	var res AccessRes
	if err := res.Decode(&r); err != nil || res.Status != 12345 || r.Len() != 0 {
		t.Errorf("unknown status: %v, %v, %d left", err, res.Status, r.Len())
	}
	r = xdr.NewReader(u32(nil, 77))
	var mnt MntRes
	if err := mnt.Decode(&r); err != nil || mnt.Status != 77 {
		t.Errorf("unknown mountstat3: %v, %v", err, mnt.Status)
	}
}

// TestMknodNoBody checks that MKNOD of a type without a body decodes
// without reading further.
func TestMknodNoBody(t *testing.T) {
	for _, typ := range []FileType{TypeReg, TypeDir, TypeLnk} {
		b := u32((&DirOpArgs{Dir: fh, Name: "n"}).Append(nil), uint32(typ))
		r := xdr.NewReader(b)
		var x MknodArgs
		if err := x.Decode(&r); err != nil || r.Len() != 0 || x.Type != typ {
			t.Errorf("%v: %v, %d left, %+v", typ, err, r.Len(), x)
		}
	}
}
