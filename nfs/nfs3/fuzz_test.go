package nfs3

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// fuzzProc fuzzes the decoders of one procedure: the first byte of the
// input selects the arguments (even) or the results (odd), the rest is
// decoded. newRes is nil for a procedure with arguments only, or newArgs
// for one with results only. The corpus is seeded with the encodings of
// the samples of both types.
func fuzzProc(f *testing.F, newArgs, newRes func() codec) {
	if newRes == nil {
		newRes = newArgs
	}
	for _, s := range samples() {
		for sel, newV := range []func() codec{newArgs, newRes} {
			if reflect.TypeOf(s.v) == reflect.TypeOf(newV()) {
				f.Add(append([]byte{byte(sel)}, s.v.Append(nil)...))
			}
		}
	}
	f.Add([]byte{0})
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		newV := newArgs
		if in[0]&1 == 1 {
			newV = newRes
		}
		checkDecode(t, newV, in[1:])
	})
}

// checkDecode is the oracle of the fuzz targets: decoding fails with one of
// the documented errors, or succeeds, and then the value encodes into the
// bytes consumed (but for padding, which the decoder skips unchecked),
// decodes again into an equal value, and encodes again into the same bytes.
func checkDecode(t *testing.T, newV func() codec, b []byte) {
	r := xdr.NewReader(b)
	v := newV()
	if err := v.Decode(&r); err != nil {
		switch err {
		case xdr.ErrShortBuffer, xdr.ErrTooLong, xdr.ErrBadBool, ErrBadEnum:
		default:
			t.Fatalf("Decode: unexpected error %v", err)
		}
		return
	}
	consumed := b[:r.Offset()]
	enc := v.Append(nil)
	if len(enc) != len(consumed) {
		t.Fatalf("decoded %d bytes, encoded %d\n%x\n%x", len(consumed), len(enc), consumed, enc)
	}
	for i := range enc {
		// Only padding may differ, which Append writes as zeros.
		if enc[i] != consumed[i] && enc[i] != 0 {
			t.Fatalf("byte %d: encoded %#x, decoded from %#x\n%x\n%x", i, enc[i], consumed[i], consumed, enc)
		}
	}
	r2 := xdr.NewReader(enc)
	v2 := newV()
	if err := v2.Decode(&r2); err != nil {
		t.Fatalf("decoding the re-encoding: %v\n%x", err, enc)
	}
	if r2.Offset() != len(enc) {
		t.Fatalf("decoding the re-encoding consumed %d of %d bytes", r2.Offset(), len(enc))
	}
	if !equal(v, v2) {
		t.Fatalf("decoded\n%+v\nthen\n%+v", v, v2)
	}
	if enc2 := v2.Append(nil); !bytes.Equal(enc2, enc) {
		t.Fatalf("re-encoded\n%x\nthen\n%x", enc, enc2)
	}
}

func FuzzGetattr(f *testing.F) {
	fuzzProc(f, func() codec { return new(GetattrArgs) }, func() codec { return new(GetattrRes) })
}

func FuzzSetattr(f *testing.F) {
	fuzzProc(f, func() codec { return new(SetattrArgs) }, func() codec { return new(SetattrRes) })
}

func FuzzLookup(f *testing.F) {
	fuzzProc(f, func() codec { return new(LookupArgs) }, func() codec { return new(LookupRes) })
}

func FuzzAccess(f *testing.F) {
	fuzzProc(f, func() codec { return new(AccessArgs) }, func() codec { return new(AccessRes) })
}

func FuzzReadlink(f *testing.F) {
	fuzzProc(f, func() codec { return new(ReadlinkArgs) }, func() codec { return new(ReadlinkRes) })
}

func FuzzRead(f *testing.F) {
	fuzzProc(f, func() codec { return new(ReadArgs) }, func() codec { return new(ReadRes) })
}

func FuzzWrite(f *testing.F) {
	fuzzProc(f, func() codec { return new(WriteArgs) }, func() codec { return new(WriteRes) })
}

func FuzzCreate(f *testing.F) {
	fuzzProc(f, func() codec { return new(CreateArgs) }, func() codec { return new(CreateRes) })
}

func FuzzMkdir(f *testing.F) {
	fuzzProc(f, func() codec { return new(MkdirArgs) }, func() codec { return new(MkdirRes) })
}

func FuzzSymlink(f *testing.F) {
	fuzzProc(f, func() codec { return new(SymlinkArgs) }, func() codec { return new(SymlinkRes) })
}

func FuzzMknod(f *testing.F) {
	fuzzProc(f, func() codec { return new(MknodArgs) }, func() codec { return new(MknodRes) })
}

func FuzzRemove(f *testing.F) {
	fuzzProc(f, func() codec { return new(RemoveArgs) }, func() codec { return new(RemoveRes) })
}

func FuzzRmdir(f *testing.F) {
	fuzzProc(f, func() codec { return new(RmdirArgs) }, func() codec { return new(RmdirRes) })
}

func FuzzRename(f *testing.F) {
	fuzzProc(f, func() codec { return new(RenameArgs) }, func() codec { return new(RenameRes) })
}

func FuzzLink(f *testing.F) {
	fuzzProc(f, func() codec { return new(LinkArgs) }, func() codec { return new(LinkRes) })
}

func FuzzReaddir(f *testing.F) {
	fuzzProc(f, func() codec { return new(ReaddirArgs) }, func() codec { return new(ReaddirRes) })
}

func FuzzReaddirplus(f *testing.F) {
	fuzzProc(f, func() codec { return new(ReaddirplusArgs) }, func() codec { return new(ReaddirplusRes) })
}

func FuzzFsstat(f *testing.F) {
	fuzzProc(f, func() codec { return new(FsstatArgs) }, func() codec { return new(FsstatRes) })
}

func FuzzFsinfo(f *testing.F) {
	fuzzProc(f, func() codec { return new(FsinfoArgs) }, func() codec { return new(FsinfoRes) })
}

func FuzzPathconf(f *testing.F) {
	fuzzProc(f, func() codec { return new(PathconfArgs) }, func() codec { return new(PathconfRes) })
}

func FuzzCommit(f *testing.F) {
	fuzzProc(f, func() codec { return new(CommitArgs) }, func() codec { return new(CommitRes) })
}

func FuzzMountMnt(f *testing.F) {
	fuzzProc(f, func() codec { return new(MntArgs) }, func() codec { return new(MntRes) })
}

// FuzzMountUmnt fuzzes UMNT's argument; UMNT has no results.
func FuzzMountUmnt(f *testing.F) {
	fuzzProc(f, func() codec { return new(UmntArgs) }, nil)
}

// FuzzMountDump fuzzes DUMP's results; DUMP has no arguments.
func FuzzMountDump(f *testing.F) {
	fuzzProc(f, func() codec { return new(DumpRes) }, nil)
}

// FuzzMountExport fuzzes EXPORT's results; EXPORT has no arguments.
func FuzzMountExport(f *testing.F) {
	fuzzProc(f, func() codec { return new(ExportRes) }, nil)
}
