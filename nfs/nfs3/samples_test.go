package nfs3

import (
	"reflect"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// codec is what every argument and result type implements.
type codec interface {
	Append(b []byte) []byte
	Decode(r *xdr.Reader) error
}

// sample is a named representative value.
type sample struct {
	name string
	v    codec
}

// fresh returns a new zero value of v's type.
func fresh(v codec) codec {
	return reflect.New(reflect.TypeOf(v).Elem()).Interface().(codec)
}

// equal reports whether a and b are deeply equal, a nil slice being equal
// to an empty one.
func equal(a, b any) bool { return eqValue(reflect.ValueOf(a), reflect.ValueOf(b)) }

func eqValue(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return eqValue(a.Elem(), b.Elem())
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !eqValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !eqValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return a.Uint() == b.Uint()
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		return a.Int() == b.Int()
	}
	panic("equal: unexpected kind " + a.Kind().String())
}

// seq returns n bytes counting from start.
func seq(start byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

var (
	fh     = seq(0x10, 28)
	fhOdd  = seq(0x40, 5)
	fhMax  = seq(0x80, FHSize)
	name   = "file.txt"
	nameMx = strings.Repeat("n", NameMax)
	verf   = [8]byte{1, 2, 3, 4, 5, 6, 7, 8}

	fattr = Fattr{
		Type: TypeReg, Mode: 0o4755, Nlink: 2, UID: 1000, GID: 100,
		Size: 1<<40 + 3, Used: 1 << 41, Rdev: SpecData{Major: 8, Minor: 17},
		FSID: 0x1122334455667788, FileID: 0x99aabbccddeeff00,
		Atime: Time{Sec: 1700000000, Nsec: 1}, Mtime: Time{Sec: 1700000001, Nsec: 999999999},
		Ctime: Time{Sec: 0xfffffffe, Nsec: 3},
	}
	fattrDir = Fattr{Type: TypeDir, Mode: 0o755, Nlink: 3, FileID: 2, Size: 4096}
	postOp   = PostOpAttr{Set: true, Attr: fattr}
	postDir  = PostOpAttr{Set: true, Attr: fattrDir}
	wccAttr  = WccAttr{Size: 12345, Mtime: Time{Sec: 5, Nsec: 6}, Ctime: Time{Sec: 7, Nsec: 8}}
	wcc      = WccData{Before: PreOpAttr{Set: true, Attr: wccAttr}, After: postDir}
	wccAfter = WccData{After: postOp}

	sattrAll = Sattr{
		SetMode: true, Mode: 0o640, SetUID: true, UID: 7, SetGID: true, GID: 8,
		SetSize: true, Size: 1 << 33,
		Atime: SetTime{How: SetToClientTime, Time: Time{Sec: 11, Nsec: 12}},
		Mtime: SetTime{How: SetToServerTime},
	}
	sattrMode = Sattr{SetMode: true, Mode: 0o700, Mtime: SetTime{How: SetToClientTime, Time: Time{Sec: 1}}}

	entries = []Entry{
		{FileID: 1, Name: ".", Cookie: 1},
		{FileID: 2, Name: "..", Cookie: 2},
		{FileID: 77, Name: nameMx, Cookie: 1 << 62},
	}
	entriesPlus = []EntryPlus{
		{FileID: 1, Name: ".", Cookie: 1, Attr: postDir, FH: PostOpFH{Set: true, FH: fh}},
		{FileID: 9, Name: "no-attr", Cookie: 2},
		{FileID: 10, Name: "x", Cookie: 3, FH: PostOpFH{Set: true, FH: fhOdd}},
		{FileID: 11, Name: "yz", Cookie: 4, Attr: postOp},
	}
)

// samples returns representative values of every type: every arm of every
// union, empty and non-empty lists, items at their bounds.
func samples() []sample {
	s := []sample{
		// Shared types.
		{"Time", &Time{Sec: 1, Nsec: 2}},
		{"SpecData", &SpecData{Major: 3, Minor: 4}},
		{"Fattr", &fattr},
		{"PostOpAttr/unset", &PostOpAttr{}},
		{"PostOpAttr/set", &postOp},
		{"WccAttr", &wccAttr},
		{"PreOpAttr/unset", &PreOpAttr{}},
		{"PreOpAttr/set", &PreOpAttr{Set: true, Attr: wccAttr}},
		{"WccData/none", &WccData{}},
		{"WccData/both", &wcc},
		{"PostOpFH/unset", &PostOpFH{}},
		{"PostOpFH/set", &PostOpFH{Set: true, FH: fhOdd}},
		{"PostOpFH/max", &PostOpFH{Set: true, FH: fhMax}},
		{"SetTime/dont", &SetTime{}},
		{"SetTime/server", &SetTime{How: SetToServerTime}},
		{"SetTime/client", &SetTime{How: SetToClientTime, Time: Time{Sec: 9, Nsec: 10}}},
		{"Sattr/none", &Sattr{}},
		{"Sattr/all", &sattrAll},
		{"DirOpArgs", &DirOpArgs{Dir: fh, Name: name}},
		{"DirOpArgs/max", &DirOpArgs{Dir: fhMax, Name: nameMx}},

		// GETATTR, SETATTR.
		{"GetattrArgs", &GetattrArgs{Object: fh}},
		{"GetattrArgs/empty", &GetattrArgs{Object: []byte{}}},
		{"GetattrRes/ok", &GetattrRes{Attr: fattr}},
		{"GetattrRes/fail", &GetattrRes{Status: ErrStale}},
		{"SetattrArgs", &SetattrArgs{Object: fh, NewAttr: sattrAll}},
		{"SetattrArgs/guard", &SetattrArgs{Object: fhOdd, NewAttr: sattrMode, Check: true, CtimeGuard: Time{Sec: 99, Nsec: 98}}},
		{"SetattrRes/ok", &SetattrRes{Wcc: wcc}},
		{"SetattrRes/fail", &SetattrRes{Status: ErrNotSync, Wcc: wccAfter}},

		// LOOKUP, ACCESS, READLINK.
		{"LookupArgs", &LookupArgs{What: DirOpArgs{Dir: fh, Name: name}}},
		{"LookupArgs/max", &LookupArgs{What: DirOpArgs{Dir: fhMax, Name: nameMx}}},
		{"LookupRes/ok", &LookupRes{Object: fhOdd, ObjAttr: postOp, DirAttr: postDir}},
		{"LookupRes/ok-noattr", &LookupRes{Object: fhMax}},
		{"LookupRes/fail", &LookupRes{Status: ErrNoEnt, DirAttr: postDir}},
		{"AccessArgs", &AccessArgs{Object: fh, Access: AccessRead | AccessLookup | AccessExecute}},
		{"AccessRes/ok", &AccessRes{ObjAttr: postOp, Access: AccessRead | AccessModify | AccessExtend | AccessDelete}},
		{"AccessRes/fail", &AccessRes{Status: ErrAcces}},
		{"ReadlinkArgs", &ReadlinkArgs{Symlink: fh}},
		{"ReadlinkRes/ok", &ReadlinkRes{SymlinkAttr: postOp, Path: "../target"}},
		{"ReadlinkRes/max", &ReadlinkRes{Path: strings.Repeat("p", PathMax)}},
		{"ReadlinkRes/fail", &ReadlinkRes{Status: ErrInval, SymlinkAttr: postOp}},

		// READ, WRITE, COMMIT.
		{"ReadArgs", &ReadArgs{File: fh, Offset: 1 << 50, Count: 1 << 20}},
		{"ReadRes/ok", &ReadRes{FileAttr: postOp, Count: 5, EOF: true, Data: []byte("hello")}},
		{"ReadRes/empty", &ReadRes{Count: 0, EOF: true, Data: []byte{}}},
		{"ReadRes/fail", &ReadRes{Status: ErrIO, FileAttr: postOp}},
		{"WriteArgs/unstable", &WriteArgs{File: fh, Offset: 4096, Count: 7, Stable: Unstable, Data: []byte("payload")}},
		{"WriteArgs/datasync", &WriteArgs{File: fhOdd, Count: 8, Stable: DataSync, Data: []byte("12345678")}},
		{"WriteArgs/filesync", &WriteArgs{File: fhMax, Stable: FileSync, Data: []byte{}}},
		{"WriteRes/ok", &WriteRes{Wcc: wcc, Count: 7, Committed: FileSync, Verf: verf}},
		{"WriteRes/fail", &WriteRes{Status: ErrNoSpc, Wcc: wccAfter}},
		{"CommitArgs", &CommitArgs{File: fh, Offset: 1, Count: 0}},
		{"CommitRes/ok", &CommitRes{Wcc: wcc, Verf: verf}},
		{"CommitRes/fail", &CommitRes{Status: ErrIO}},

		// CREATE, MKDIR, SYMLINK, MKNOD.
		{"CreateArgs/unchecked", &CreateArgs{Where: DirOpArgs{Dir: fh, Name: name}, Mode: Unchecked, Attr: sattrAll}},
		{"CreateArgs/guarded", &CreateArgs{Where: DirOpArgs{Dir: fh, Name: "g"}, Mode: Guarded, Attr: sattrMode}},
		{"CreateArgs/exclusive", &CreateArgs{Where: DirOpArgs{Dir: fhOdd, Name: nameMx}, Mode: Exclusive, Verf: verf}},
		{"CreateRes/ok", &CreateRes{Obj: PostOpFH{Set: true, FH: fh}, ObjAttr: postOp, DirWcc: wcc}},
		{"CreateRes/ok-bare", &CreateRes{}},
		{"CreateRes/fail", &CreateRes{Status: ErrExist, DirWcc: wcc}},
		{"MkdirArgs", &MkdirArgs{Where: DirOpArgs{Dir: fh, Name: "dir"}, Attr: sattrMode}},
		{"SymlinkArgs", &SymlinkArgs{Where: DirOpArgs{Dir: fh, Name: "ln"}, Attr: Sattr{}, Path: "/a/b/c"}},
		{"SymlinkArgs/max", &SymlinkArgs{Where: DirOpArgs{Dir: fhMax, Name: nameMx}, Attr: sattrAll, Path: strings.Repeat("q", PathMax)}},
	}
	for t := TypeReg; t <= TypeFIFO; t++ {
		x := &MknodArgs{Where: DirOpArgs{Dir: fh, Name: "node"}, Type: t}
		switch t {
		case TypeChr, TypeBlk:
			x.Attr, x.Spec = sattrMode, SpecData{Major: 1, Minor: 3}
		case TypeSock, TypeFIFO:
			x.Attr = sattrAll
		}
		s = append(s, sample{"MknodArgs/" + t.name(), x})
	}
	s = append(s, []sample{
		// REMOVE, RMDIR, RENAME, LINK.
		{"RemoveArgs", &RemoveArgs{Object: DirOpArgs{Dir: fh, Name: name}}},
		{"RemoveRes/ok", &RemoveRes{DirWcc: wcc}},
		{"RemoveRes/fail", &RemoveRes{Status: ErrNotEmpty, DirWcc: wccAfter}},
		{"RenameArgs", &RenameArgs{From: DirOpArgs{Dir: fh, Name: "a"}, To: DirOpArgs{Dir: fhOdd, Name: "bcd"}}},
		{"RenameRes/ok", &RenameRes{FromDirWcc: wcc, ToDirWcc: wccAfter}},
		{"RenameRes/fail", &RenameRes{Status: ErrXDev}},
		{"LinkArgs", &LinkArgs{File: fh, Link: DirOpArgs{Dir: fhOdd, Name: "hard"}}},
		{"LinkRes/ok", &LinkRes{FileAttr: postOp, LinkDirWcc: wcc}},
		{"LinkRes/fail", &LinkRes{Status: ErrMLink, LinkDirWcc: wccAfter}},

		// READDIR, READDIRPLUS.
		{"ReaddirArgs", &ReaddirArgs{Dir: fh, Cookie: 3, Verf: verf, Count: 8192}},
		{"ReaddirRes/ok-empty", &ReaddirRes{DirAttr: postDir, Verf: verf, EOF: true}},
		{"ReaddirRes/ok", &ReaddirRes{DirAttr: postDir, Verf: verf, Entries: entries}},
		{"ReaddirRes/fail", &ReaddirRes{Status: ErrBadCookie, DirAttr: postDir}},
		{"ReaddirplusArgs", &ReaddirplusArgs{Dir: fh, Cookie: 4, Verf: verf, DirCount: 4096, MaxCount: 32768}},
		{"ReaddirplusRes/ok-empty", &ReaddirplusRes{Verf: verf, EOF: true}},
		{"ReaddirplusRes/ok", &ReaddirplusRes{DirAttr: postDir, Verf: verf, Entries: entriesPlus, EOF: true}},
		{"ReaddirplusRes/fail", &ReaddirplusRes{Status: ErrNotDir}},

		// FSSTAT, FSINFO, PATHCONF.
		{"FsstatArgs", &FsstatArgs{FSRoot: fh}},
		{"FsstatRes/ok", &FsstatRes{ObjAttr: postDir, Tbytes: 1 << 40, Fbytes: 1 << 39, Abytes: 1 << 38, Tfiles: 1000, Ffiles: 900, Afiles: 800, Invarsec: 0}},
		{"FsstatRes/fail", &FsstatRes{Status: ErrStale, ObjAttr: postDir}},
		{"FsinfoArgs", &FsinfoArgs{FSRoot: fh}},
		{"FsinfoRes/ok", &FsinfoRes{ObjAttr: postDir, Rtmax: 1 << 20, Rtpref: 1 << 19, Rtmult: 4096, Wtmax: 1 << 21, Wtpref: 1 << 18, Wtmult: 512, Dtpref: 8192, MaxFileSize: 1<<63 - 1, TimeDelta: Time{Nsec: 1}, Properties: FSFLink | FSFSymlink | FSFHomogeneous | FSFCanSetTime}},
		{"FsinfoRes/fail", &FsinfoRes{Status: ErrServerFault}},
		{"PathconfArgs", &PathconfArgs{Object: fh}},
		{"PathconfRes/ok", &PathconfRes{ObjAttr: postOp, Linkmax: 32000, NameMax: 255, NoTrunc: true, ChownRestricted: true, CasePreserving: true}},
		{"PathconfRes/ok2", &PathconfRes{CaseInsensitive: true}},
		{"PathconfRes/fail", &PathconfRes{Status: ErrBadHandle, ObjAttr: postOp}},

		// MOUNT.
		{"MntArgs", &MntArgs{Path: "/export/home"}},
		{"MntArgs/max", &MntArgs{Path: strings.Repeat("/", MntPathLen)}},
		{"MntRes/ok", &MntRes{FH: fh, AuthFlavors: []uint32{1, 390003}}},
		{"MntRes/ok-none", &MntRes{FH: fhMax}},
		{"MntRes/ok-max", &MntRes{FH: fhOdd, AuthFlavors: []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}},
		{"MntRes/fail", &MntRes{Status: MntErrAcces}},
		{"UmntArgs", &UmntArgs{Path: "/export"}},
		{"DumpRes/empty", &DumpRes{}},
		{"DumpRes", &DumpRes{Mounts: []MountEntry{{Hostname: "client1", Directory: "/export"}, {Hostname: strings.Repeat("h", MntNameLen), Directory: strings.Repeat("d", MntPathLen)}}}},
		{"ExportRes/empty", &ExportRes{}},
		{"ExportRes", &ExportRes{Exports: []ExportNode{{Dir: "/export"}, {Dir: "/srv", Groups: []string{"*", "@netgroup", strings.Repeat("g", MntNameLen)}}}}},
	}...)
	return s
}

func (t FileType) name() string {
	return [...]string{"", "reg", "dir", "blk", "chr", "lnk", "sock", "fifo"}[t]
}

// typeName returns the name of v's type.
func typeName(v codec) string { return reflect.TypeOf(v).Elem().Name() }
