package nfs3

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestDecodeAllocs checks that decoding the arguments of the procedures on
// a server's hot path allocates nothing (LOOKUP only its name).
func TestDecodeAllocs(t *testing.T) {
	getattr := (&GetattrArgs{Object: fh}).Append(nil)
	read := (&ReadArgs{File: fh, Offset: 1, Count: 2}).Append(nil)
	write := (&WriteArgs{File: fh, Offset: 1, Count: 5, Stable: FileSync, Data: []byte("hello")}).Append(nil)
	commit := (&CommitArgs{File: fh, Offset: 1, Count: 2}).Append(nil)
	lookup := (&LookupArgs{What: DirOpArgs{Dir: fh, Name: "name"}}).Append(nil)
	var (
		r  xdr.Reader
		ga GetattrArgs
		ra ReadArgs
		wa WriteArgs
		ca CommitArgs
		la LookupArgs
	)
	for _, c := range []struct {
		name string
		want float64
		f    func() error
	}{
		{"GetattrArgs", 0, func() error { r.Reset(getattr); return ga.Decode(&r) }},
		{"ReadArgs", 0, func() error { r.Reset(read); return ra.Decode(&r) }},
		{"WriteArgs", 0, func() error { r.Reset(write); return wa.Decode(&r) }},
		{"CommitArgs", 0, func() error { r.Reset(commit); return ca.Decode(&r) }},
		{"LookupArgs", 1, func() error { r.Reset(lookup); return la.Decode(&r) }},
	} {
		if err := c.f(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = c.f() }); n != c.want {
			t.Errorf("%s: Decode made %v allocations, want %v", c.name, n, c.want)
		}
	}
}

// TestAppendAllocs checks that appending the results of the hot path to a
// buffer with room allocates nothing.
func TestAppendAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	getattr := &GetattrRes{Attr: fattr}
	read := &ReadRes{FileAttr: postOp, Count: 5, EOF: true, Data: []byte("hello")}
	write := &WriteRes{Wcc: wcc, Count: 5, Committed: FileSync, Verf: verf}
	for _, c := range []struct {
		name string
		f    func() []byte
	}{
		{"GetattrRes", func() []byte { return getattr.Append(buf[:0]) }},
		{"ReadRes.AppendHead", func() []byte { return read.AppendHead(buf[:0]) }},
		{"ReadRes", func() []byte { return read.Append(buf[:0]) }},
		{"WriteRes", func() []byte { return write.Append(buf[:0]) }},
		{"Entry", func() []byte { return entries[0].Append(buf[:0]) }},
		{"EntryPlus", func() []byte { return entriesPlus[0].Append(buf[:0]) }},
	} {
		if len(c.f()) == 0 {
			t.Fatalf("%s: appended nothing", c.name)
		}
		if n := testing.AllocsPerRun(100, func() { _ = c.f() }); n != 0 {
			t.Errorf("%s: Append made %v allocations", c.name, n)
		}
	}
}

// TestReadResHead checks that Append is AppendHead, the data and its
// padding, and that the head ends with the data's length.
func TestReadResHead(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, 5, 8} {
		x := &ReadRes{FileAttr: postOp, Count: uint32(n), Data: seq(1, n)}
		head := x.AppendHead(nil)
		want := append(append(append([]byte(nil), head...), x.Data...), make([]byte, xdr.Padding(n))...)
		if got := x.Append(nil); string(got) != string(want) {
			t.Errorf("%d bytes: Append\n%x\nwant\n%x", n, got, want)
		}
		if l := be.Uint32(head[len(head)-4:]); l != uint32(n) {
			t.Errorf("%d bytes: length word %d", n, l)
		}
	}
	fail := &ReadRes{Status: ErrIO, FileAttr: postOp, Data: []byte("x")}
	if string(fail.AppendHead(nil)) != string(fail.Append(nil)) {
		t.Error("failure: AppendHead and Append differ")
	}
	w := &WriteArgs{File: fh, Count: 3, Data: []byte("abc")}
	if got, want := w.Append(nil), cat(w.AppendHead(nil), []byte("abc\x00")); string(got) != string(want) {
		t.Errorf("WriteArgs: Append\n%x\nwant AppendHead, data, padding\n%x", got, want)
	}
}

// TestReaddirIncremental builds READDIR and READDIRPLUS results as a server
// does, within a byte budget, and checks Size and that the result equals
// Append's.
func TestReaddirIncremental(t *testing.T) {
	for _, budget := range []int{0, 100, 150, 200, 400, 1 << 20} {
		res := &ReaddirRes{DirAttr: postDir, Verf: verf}
		b := res.AppendHead(nil)
		for i := range entries {
			e := &entries[i]
			if len(b)+e.Size()+ReaddirTailSize > budget {
				break
			}
			n := len(b)
			b = e.Append(b)
			if len(b)-n != e.Size() {
				t.Errorf("Entry %q: Size %d, appended %d", e.Name, e.Size(), len(b)-n)
			}
			res.Entries = append(res.Entries, *e)
		}
		res.EOF = len(res.Entries) == len(entries)
		n := len(b)
		b = AppendReaddirTail(b, res.EOF)
		if len(b)-n != ReaddirTailSize {
			t.Errorf("tail of %d bytes", len(b)-n)
		}
		if string(b) != string(res.Append(nil)) {
			t.Errorf("budget %d: incremental READDIR differs from Append", budget)
		}

		plus := &ReaddirplusRes{DirAttr: postDir, Verf: verf}
		b = plus.AppendHead(nil)
		for i := range entriesPlus {
			e := &entriesPlus[i]
			if len(b)+e.Size()+ReaddirTailSize > budget {
				break
			}
			n := len(b)
			b = e.Append(b)
			if len(b)-n != e.Size() {
				t.Errorf("EntryPlus %q: Size %d, appended %d", e.Name, e.Size(), len(b)-n)
			}
			plus.Entries = append(plus.Entries, *e)
		}
		b = AppendReaddirTail(b, plus.EOF)
		if string(b) != string(plus.Append(nil)) {
			t.Errorf("budget %d: incremental READDIRPLUS differs from Append", budget)
		}
		if len(b) > budget && len(plus.Entries) > 0 {
			t.Errorf("budget %d: %d bytes", budget, len(b))
		}
	}
}
