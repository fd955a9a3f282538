package nfs_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/mount"
	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// procCase is one procedure: its arguments, its largest results, and what
// the binding must say about it.
type procCase struct {
	name       string
	prog, proc uint32
	args       io.WriterTo
	// largest is the largest results RFC 1813 allows for these
	// arguments; nil when the size is unknown (MaxReply 0).
	largest io.WriterTo
	// slack is how much larger than the largest reply the bound may be:
	// the mismatch_info of PROG_MISMATCH for void results.
	slack int
	// arg is the DDP-eligible argument (nil: none).
	arg []byte
	// replyData is the largest DDP-eligible result.
	replyData int
}

func dirop(name string) nfsv3.Diropargs3 { return nfsv3.Diropargs3{Dir: smallFH, Name: name} }

func dirpath(p string) io.WriterTo {
	return writerFunc(func(w io.Writer) (int64, error) { return mount.WriteDirpath(w, p) })
}

func procCases(t testing.TB) []procCase {
	longPath := strings.Repeat("p", nfs.MaxPathLen)
	created := func() (nfsv3.PostOpFh3, nfsv3.PostOpAttr, nfsv3.WccData) {
		return &nfsv3.PostOpFh3_TRUE{Handle: bigFH}, attrs(), wcc()
	}
	obj, oattr, dwcc := created()
	flavors := make([]int32, 12)
	setaclRes := append(xdr.AppendUint32(nil, 0), encode(t, attrs())...)
	aclArgs := append(xdr.AppendOpaque(nil, smallFH.Data), 0, 0, 0, 0xf)
	nfs3 := uint32(nfs.ProgNFS)
	return []procCase{
		{name: "GETATTR", prog: nfs3, proc: nfs.ProcGetattr, args: &nfsv3.Getattr3args{Object: smallFH},
			largest: &nfsv3.Getattr3res_NFS3_OK{Resok: nfsv3.Getattr3resok{ObjAttributes: fattr(1)}}},
		{name: "SETATTR", prog: nfs3, proc: nfs.ProcSetattr,
			args:    &nfsv3.Setattr3args{Object: smallFH, NewAttributes: sattrAll(), Guard: &nfsv3.Sattrguard3_TRUE{}},
			largest: &nfsv3.Setattr3res_NFS3_OK{Resok: nfsv3.Setattr3resok{ObjWcc: wcc()}}},
		{name: "LOOKUP", prog: nfs3, proc: nfs.ProcLookup, args: &nfsv3.Lookup3args{What: dirop("name")},
			largest: &nfsv3.Lookup3res_NFS3_OK{Resok: nfsv3.Lookup3resok{Object: bigFH, ObjAttributes: attrs(), DirAttributes: attrs()}}},
		{name: "ACCESS", prog: nfs3, proc: nfs.ProcAccess, args: &nfsv3.Access3args{Object: smallFH, Access: 0x3f},
			largest: &nfsv3.Access3res_NFS3_OK{Resok: nfsv3.Access3resok{ObjAttributes: attrs(), Access: 0x3f}}},
		{name: "READLINK", prog: nfs3, proc: nfs.ProcReadlink, args: &nfsv3.Readlink3args{Symlink: smallFH},
			largest: readlinkOK(longPath, true), replyData: nfs.MaxPathLen},
		{name: "READ", prog: nfs3, proc: nfs.ProcRead, args: &nfsv3.Read3args{File: smallFH, Offset: 4096, Count: 65537},
			largest: readOK(make([]byte, 65537), true), replyData: 65537},
		{name: "READ of 0 bytes", prog: nfs3, proc: nfs.ProcRead, args: &nfsv3.Read3args{File: smallFH},
			largest: readOK(nil, true)},
		{name: "WRITE", prog: nfs3, proc: nfs.ProcWrite,
			args:    &nfsv3.Write3args{File: smallFH, Offset: 1, Count: 5, Stable: nfsv3.FILE_SYNC, Data: []byte("hello")},
			largest: &nfsv3.Write3res_NFS3_OK{Resok: nfsv3.Write3resok{FileWcc: wcc(), Count: 5, Committed: nfsv3.FILE_SYNC, Verf: verf}},
			arg:     []byte("hello")},
		{name: "WRITE of 0 bytes", prog: nfs3, proc: nfs.ProcWrite,
			args:    &nfsv3.Write3args{File: bigFH, Stable: nfsv3.UNSTABLE, Data: []byte{}},
			largest: &nfsv3.Write3res_NFS3_OK{Resok: nfsv3.Write3resok{FileWcc: wcc(), Verf: verf}}, arg: []byte{}},
		{name: "CREATE", prog: nfs3, proc: nfs.ProcCreate,
			args:    &nfsv3.Create3args{Where: dirop("new"), How: &nfsv3.Createhow3_GUARDED{ObjAttributes: sattrAll()}},
			largest: &nfsv3.Create3res_NFS3_OK{Resok: nfsv3.Create3resok{Obj: obj, ObjAttributes: oattr, DirWcc: dwcc}}},
		{name: "MKDIR", prog: nfs3, proc: nfs.ProcMkdir, args: &nfsv3.Mkdir3args{Where: dirop("d"), Attributes: sattrNone()},
			largest: &nfsv3.Mkdir3res_NFS3_OK{Resok: nfsv3.Mkdir3resok{Obj: obj, ObjAttributes: oattr, DirWcc: dwcc}}},
		{name: "SYMLINK", prog: nfs3, proc: nfs.ProcSymlink,
			args: &nfsv3.Symlink3args{Where: dirop("link"),
				Symlink: nfsv3.Symlinkdata3{SymlinkAttributes: sattrAll(), SymlinkData: "../target/x"}},
			largest: &nfsv3.Symlink3res_NFS3_OK{Resok: nfsv3.Symlink3resok{Obj: obj, ObjAttributes: oattr, DirWcc: dwcc}},
			arg:     []byte("../target/x")},
		{name: "SYMLINK without attributes", prog: nfs3, proc: nfs.ProcSymlink,
			args: &nfsv3.Symlink3args{Where: dirop("l"),
				Symlink: nfsv3.Symlinkdata3{SymlinkAttributes: sattrNone(), SymlinkData: longPath}},
			largest: &nfsv3.Symlink3res_NFS3_OK{Resok: nfsv3.Symlink3resok{Obj: obj, ObjAttributes: oattr, DirWcc: dwcc}},
			arg:     []byte(longPath)},
		{name: "MKNOD", prog: nfs3, proc: nfs.ProcMknod,
			args: &nfsv3.Mknod3args{Where: dirop("dev"),
				What: &nfsv3.Mknoddata3_NF3CHR{Device: nfsv3.Devicedata3{DevAttributes: sattrAll(), Spec: nfsv3.Specdata3{Specdata1: 1}}}},
			largest: &nfsv3.Mknod3res_NFS3_OK{Resok: nfsv3.Mknod3resok{Obj: obj, ObjAttributes: oattr, DirWcc: dwcc}}},
		{name: "REMOVE", prog: nfs3, proc: nfs.ProcRemove, args: &nfsv3.Remove3args{Object: dirop("f")},
			largest: &nfsv3.Remove3res_NFS3_OK{Resok: nfsv3.Remove3resok{DirWcc: wcc()}}},
		{name: "RMDIR", prog: nfs3, proc: nfs.ProcRmdir, args: &nfsv3.Rmdir3args{Object: dirop("d")},
			largest: &nfsv3.Rmdir3res_NFS3_OK{Resok: nfsv3.Rmdir3resok{DirWcc: wcc()}}},
		{name: "RENAME", prog: nfs3, proc: nfs.ProcRename, args: &nfsv3.Rename3args{From: dirop("a"), To: dirop("b")},
			largest: &nfsv3.Rename3res_NFS3_OK{Resok: nfsv3.Rename3resok{FromdirWcc: wcc(), TodirWcc: wcc()}}},
		{name: "LINK", prog: nfs3, proc: nfs.ProcLink, args: &nfsv3.Link3args{File: smallFH, Link: dirop("l")},
			largest: &nfsv3.Link3res_NFS3_OK{Resok: nfsv3.Link3resok{FileAttributes: attrs(), LinkdirWcc: wcc()}}},
		{name: "READDIR", prog: nfs3, proc: nfs.ProcReaddir,
			args: &nfsv3.Readdir3args{Dir: smallFH, Cookie: 9, Cookieverf: verf, Count: 4096},
			largest: &nfsv3.Readdir3res_NFS3_OK{Resok: nfsv3.Readdir3resok{DirAttributes: attrs(), Cookieverf: verf,
				Reply: nfsv3.Dirlist3{Entries: dirEntries(4096), Eof: true}}}},
		{name: "READDIRPLUS", prog: nfs3, proc: nfs.ProcReaddirplus,
			args: &nfsv3.Readdirplus3args{Dir: smallFH, Cookieverf: verf, Dircount: 1024, Maxcount: 8192},
			largest: &nfsv3.Readdirplus3res_NFS3_OK{Resok: nfsv3.Readdirplus3resok{DirAttributes: attrs(), Cookieverf: verf,
				Reply: nfsv3.Dirlistplus3{Entries: dirEntriesPlus(8192), Eof: true}}}},
		{name: "FSSTAT", prog: nfs3, proc: nfs.ProcFsstat, args: &nfsv3.Fsstat3args{Fsroot: smallFH},
			largest: &nfsv3.Fsstat3res_NFS3_OK{Resok: nfsv3.Fsstat3resok{ObjAttributes: attrs(), Tbytes: 1}}},
		{name: "FSINFO", prog: nfs3, proc: nfs.ProcFsinfo, args: &nfsv3.Fsinfo3args{Fsroot: smallFH},
			largest: &nfsv3.Fsinfo3res_NFS3_OK{Resok: nfsv3.Fsinfo3resok{ObjAttributes: attrs(), Rtmax: 1 << 20}}},
		{name: "PATHCONF", prog: nfs3, proc: nfs.ProcPathconf, args: &nfsv3.Pathconf3args{Object: smallFH},
			largest: &nfsv3.Pathconf3res_NFS3_OK{Resok: nfsv3.Pathconf3resok{ObjAttributes: attrs(), NameMax: 255}}},
		{name: "COMMIT", prog: nfs3, proc: nfs.ProcCommit, args: &nfsv3.Commit3args{File: smallFH, Count: 100},
			largest: &nfsv3.Commit3res_NFS3_OK{Resok: nfsv3.Commit3resok{FileWcc: wcc(), Verf: verf}}},

		{name: "MOUNT MNT", prog: nfs.ProgMount, proc: nfs.MountProcMnt, args: dirpath("/export"),
			largest: &mount.Mountres3_MNT3_OK{Mountinfo: mount.Mountres3Ok{Fhandle: bigFH.Data, AuthFlavors: flavors}}},
		{name: "MOUNT DUMP", prog: nfs.ProgMount, proc: nfs.MountProcDump},
		{name: "MOUNT UMNT", prog: nfs.ProgMount, proc: nfs.MountProcUmnt, args: dirpath("/export"), largest: raw{}, slack: 8},
		{name: "MOUNT UMNTALL", prog: nfs.ProgMount, proc: nfs.MountProcUmntall, largest: raw{}, slack: 8},
		{name: "MOUNT EXPORT", prog: nfs.ProgMount, proc: nfs.MountProcExport},
		{name: "NFSACL GETACL", prog: nfs.ProgNFSACL, proc: 1, args: raw(aclArgs)},
		{name: "NFSACL SETACL", prog: nfs.ProgNFSACL, proc: 2, args: raw(aclArgs), largest: raw(setaclRes)},
	}
}

// TestBindingCall: for every procedure, the DDP-eligible argument, the
// largest DDP-eligible result, and a reply bound that a real reply of the
// largest size reaches exactly (with the largest verifier).
func TestBindingCall(t *testing.T) {
	for _, flavor := range []xdr.AuthFlavor{xdr.FlavorSys, xdr.FlavorNone, 6 /* RPCSEC_GSS */} {
		// An AUTH_NONE verifier is planned for AUTH_SYS and AUTH_NONE
		// calls, as Linux does; the largest for any other flavor.
		header := minHeader
		if flavor == 6 {
			header = maxHeader
		}
		t.Run(fmt.Sprintf("flavor%d", flavor), func(t *testing.T) { testBindingCall(t, flavor, header) })
	}
}

func testBindingCall(t *testing.T, flavor xdr.AuthFlavor, header int) {
	b := nfs.Binding{}
	for _, c := range procCases(t) {
		t.Run(c.name, func(t *testing.T) {
			msg, args := encodeCall(t, c.prog, 3, c.proc, c.args)
			info := b.Call(&xdr.CallHeader{Prog: c.prog, Vers: 3, Proc: c.proc, Cred: xdr.OpaqueAuth{Flavor: flavor}}, msg, args)
			require.Equal(t, c.replyData, info.ReplyData)
			if c.arg == nil {
				require.False(t, info.Arg.Present)
			} else {
				a := info.Arg
				require.True(t, a.Present)
				require.Equal(t, c.arg, msg[a.Off:a.Off+a.N])
				require.EqualValues(t, len(c.arg), binary.BigEndian.Uint32(msg[a.Off-4:]), "length word before the item")
				require.Zero(t, a.Off&3)
				require.LessOrEqual(t, a.Off+xdr.RoundUp(a.N), len(msg), "item and pad inside the call")
			}
			if c.largest == nil {
				require.Zero(t, info.MaxReply, "unknown size")
				return
			}
			largest := header + len(encode(t, c.largest))
			require.GreaterOrEqual(t, info.MaxReply, largest, "the largest reply fits the bound")
			require.LessOrEqual(t, info.MaxReply, largest+c.slack, "the bound is tight")
		})
	}
}

// TestBindingCallNull: NULL of any program, and every program, version and
// procedure the binding does not know, are what transport.NullBinding says.
func TestBindingCallNull(t *testing.T) {
	msg, args := encodeCall(t, nfs.ProgNFS, 3, 0, nil)
	for _, h := range []xdr.CallHeader{
		{Prog: nfs.ProgNFS, Vers: 3}, {Prog: nfs.ProgMount, Vers: 3}, {Prog: nfs.ProgNFSACL, Vers: 3},
		{Prog: nfs.ProgNLM, Vers: 4}, {Prog: 1, Vers: 1},
		{Prog: nfs.ProgNFS, Vers: 3, Proc: 22}, {Prog: nfs.ProgNFS, Vers: 2, Proc: nfs.ProcRead},
		{Prog: nfs.ProgNFS, Vers: 4, Proc: 1}, {Prog: nfs.ProgNLM, Vers: 4, Proc: 7},
		{Prog: nfs.ProgMount, Vers: 3, Proc: 6}, {Prog: nfs.ProgMount, Vers: 1, Proc: 1},
		{Prog: nfs.ProgNFSACL, Vers: 3, Proc: 3}, {Prog: nfs.ProgNFSACL, Vers: 2, Proc: 2},
	} {
		want := transport.NullBinding{}.Call(&h, msg, args)
		assert.Equal(t, want, nfs.Binding{}.Call(&h, msg, args), "%s", nfs.ProcName(h.Prog, h.Vers, h.Proc))
	}
	assert.Equal(t, transport.CallInfo{MaxReply: maxHeader}, nfs.Binding{}.Call(&xdr.CallHeader{Prog: nfs.ProgNFS, Vers: 3}, msg, args))
	assert.Zero(t, nfs.Binding{}.Call(nil, msg, args))
}

// TestBindingCallMalformed: arguments the binding cannot decode give no
// item, and an unknown size when the bound depends on them.
func TestBindingCallMalformed(t *testing.T) {
	b := nfs.Binding{}
	h := func(proc uint32) *xdr.CallHeader { return &xdr.CallHeader{Prog: nfs.ProgNFS, Vers: 3, Proc: proc} }
	// A handle longer than NFS3_FHSIZE (buildbarn refuses to encode it).
	long := xdr.AppendOpaque(nil, make([]byte, 65))
	long = xdr.AppendUint64(long, 0)
	long = append(long, make([]byte, 64)...)
	for _, proc := range []uint32{nfs.ProcRead, nfs.ProcReaddir, nfs.ProcReaddirplus} {
		msg, args := encodeCall(t, nfs.ProgNFS, 3, proc, raw(long))
		assert.Zero(t, b.Call(h(proc), msg, args), nfs.ProcName(nfs.ProgNFS, 3, proc))
	}
	msg, args := encodeCall(t, nfs.ProgNFS, 3, nfs.ProcWrite, raw(long))
	info := b.Call(h(nfs.ProcWrite), msg, args)
	assert.False(t, info.Arg.Present)
	assert.NotZero(t, info.MaxReply, "WRITE's bound does not depend on its arguments")

	// A time_how outside its enum in SYMLINK's sattr3.
	good, args := encodeCall(t, nfs.ProgNFS, 3, nfs.ProcSymlink, &nfsv3.Symlink3args{Where: dirop("l"),
		Symlink: nfsv3.Symlinkdata3{SymlinkAttributes: sattrNone(), SymlinkData: "t"}})
	require.True(t, b.Call(h(nfs.ProcSymlink), good, args).Arg.Present)
	bad := bytes.Clone(good)
	// sattr3 without attributes: 4 bools, atime, mtime, then the path.
	binary.BigEndian.PutUint32(bad[len(bad)-8-4-4:], 3) // atime's time_how
	assert.False(t, b.Call(h(nfs.ProcSymlink), bad, args).Arg.Present, "time_how 3")
	binary.BigEndian.PutUint32(bad[len(bad)-8-4-4:], 0)
	binary.BigEndian.PutUint32(bad[len(bad)-8-4-8:], 2) // set_size3 bool
	assert.False(t, b.Call(h(nfs.ProcSymlink), bad, args).Arg.Present, "bool 2")

	// Arguments outside the message, or not on a word boundary.
	for _, off := range []int{-1, len(good) + 1, args + 1} {
		assert.Zero(t, b.Call(h(nfs.ProcSymlink), good, off), "args at %d", off)
		assert.Zero(t, b.Call(h(nfs.ProcRead), good, off), "args at %d", off)
	}
}

// Every prefix of every call: an item is reported only when the prefix
// holds it whole and then where the whole call has it; the bounds are
// those of the whole call or unknown.
func TestBindingCallTruncated(t *testing.T) {
	b := nfs.Binding{}
	for _, c := range procCases(t) {
		msg, args := encodeCall(t, c.prog, 3, c.proc, c.args)
		h := &xdr.CallHeader{Prog: c.prog, Vers: 3, Proc: c.proc}
		want := b.Call(h, msg, args)
		for n := args; n < len(msg); n++ {
			got := b.Call(h, msg[:n], args)
			if got.Arg.Present {
				assert.Equal(t, want.Arg, got.Arg, "%s: prefix of %d bytes", c.name, n)
				assert.LessOrEqual(t, got.Arg.Off+xdr.RoundUp(got.Arg.N), n, "%s: prefix of %d bytes", c.name, n)
			}
			if got.MaxReply != 0 {
				assert.Equal(t, want.MaxReply, got.MaxReply, "%s: prefix of %d bytes", c.name, n)
			}
			if got.ReplyData != 0 {
				assert.Equal(t, want.ReplyData, got.ReplyData, "%s: prefix of %d bytes", c.name, n)
			}
		}
		if c.arg != nil {
			// The item is not found in a call that ends inside it.
			assert.False(t, b.Call(h, msg[:len(msg)-1], args).Arg.Present, c.name)
		}
	}
}

func readCall(proc uint32) *xdr.CallHeader {
	return &xdr.CallHeader{XID: 9, Prog: nfs.ProgNFS, Vers: 3, Proc: proc}
}

func TestBindingReplyData(t *testing.T) {
	const attrsLen = 88 // post_op_attr with attributes
	b := nfs.Binding{}
	for _, c := range []struct {
		name  string
		proc  uint32
		res   io.WriterTo
		data  []byte
		fixed int // bytes before the item, after the results offset
	}{
		{"READ", nfs.ProcRead, readOK([]byte("hello"), true), []byte("hello"), 4 + attrsLen + 4 + 4 + 4},
		{"READ without attributes", nfs.ProcRead, readOK([]byte("abcdefgh"), false), []byte("abcdefgh"), 4 + 4 + 4 + 4 + 4},
		{"READ of 0 bytes", nfs.ProcRead, readOK(nil, true), []byte{}, 4 + attrsLen + 4 + 4 + 4},
		{"READLINK", nfs.ProcReadlink, readlinkOK("../x/y", true), []byte("../x/y"), 4 + attrsLen + 4},
		{"READLINK without attributes", nfs.ProcReadlink, readlinkOK("/", false), []byte("/"), 4 + 4 + 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			reply, res := encodeReply(t, c.res)
			got := b.ReplyData(readCall(c.proc), reply, res)
			require.Equal(t, transport.DataItem{Present: true, Off: res + c.fixed, N: len(c.data)}, got)
			require.Equal(t, c.data, reply[got.Off:got.Off+got.N])
			// A requester asks about the reply whose data went into a
			// Write chunk: the data is gone, its length word is there.
			require.Equal(t, got, b.ReplyData(readCall(c.proc), reply[:got.Off], res))
		})
	}

	read, res := encodeReply(t, readOK([]byte("hello"), true))
	failed, res2 := encodeReply(t, &nfsv3.Read3res_default{Status: nfsv3.NFS3ERR_IO,
		Resfail: nfsv3.Read3resfail{FileAttributes: attrs()}})
	rlFailed, res3 := encodeReply(t, &nfsv3.Readlink3res_default{Status: nfsv3.NFS3ERR_INVAL,
		Resfail: nfsv3.Readlink3resfail{SymlinkAttributes: &nfsv3.PostOpAttr_FALSE{}}})
	for name, c := range map[string]struct {
		h     *xdr.CallHeader
		reply []byte
		res   int
	}{
		"READ error":            {readCall(nfs.ProcRead), failed, res2},
		"READLINK error":        {readCall(nfs.ProcReadlink), rlFailed, res3},
		"GETATTR":               {readCall(nfs.ProcGetattr), read, res},
		"WRITE":                 {readCall(nfs.ProcWrite), read, res},
		"READ of NFS version 2": {&xdr.CallHeader{Prog: nfs.ProgNFS, Vers: 2, Proc: nfs.ProcRead}, read, res},
		"procedure 6 of MOUNT":  {&xdr.CallHeader{Prog: nfs.ProgMount, Vers: 3, Proc: 6}, read, res},
		"results past the end":  {readCall(nfs.ProcRead), read, len(read) + 1},
		"negative results":      {readCall(nfs.ProcRead), read, -1},
		"no header":             {nil, read, res},
	} {
		assert.False(t, b.ReplyData(c.h, c.reply, c.res).Present, name)
	}
}

// Every prefix of a READ and a READLINK reply: the item is found exactly
// when the prefix holds its length word, always at the same place.
func TestBindingReplyDataTruncated(t *testing.T) {
	for _, c := range []struct {
		proc uint32
		res  io.WriterTo
	}{{nfs.ProcRead, readOK([]byte("abcdefg"), true)}, {nfs.ProcReadlink, readlinkOK("abcdefg", true)}} {
		msg, res := encodeReply(t, c.res)
		want := nfs.Binding{}.ReplyData(readCall(c.proc), msg, res)
		require.True(t, want.Present)
		for n := range len(msg) {
			got := nfs.Binding{}.ReplyData(readCall(c.proc), msg[:n], min(res, n))
			if n < want.Off {
				assert.False(t, got.Present, "prefix of %d bytes", n)
			} else {
				assert.Equal(t, want, got, "prefix of %d bytes", n)
			}
		}
	}
}

// A bad boolean in post_op_attr or eof is no item.
func TestBindingReplyDataBadBool(t *testing.T) {
	msg, res := encodeReply(t, readOK([]byte("abc"), false))
	for _, at := range []int{res + 4, res + 12} { // attributes_follow, eof
		bad := bytes.Clone(msg)
		binary.BigEndian.PutUint32(bad[at:], 2)
		assert.False(t, nfs.Binding{}.ReplyData(readCall(nfs.ProcRead), bad, res).Present, "bool at %d", at-res)
	}
}

func TestBindingNoAllocs(t *testing.T) {
	reply, res := encodeReply(t, readOK(make([]byte, 4096), true))
	var calls [][]byte
	var offs []int
	var hs []*xdr.CallHeader
	for _, c := range procCases(t) {
		msg, args := encodeCall(t, c.prog, 3, c.proc, c.args)
		calls, offs = append(calls, msg), append(offs, args)
		hs = append(hs, &xdr.CallHeader{Prog: c.prog, Vers: 3, Proc: c.proc})
	}
	rh := readCall(nfs.ProcRead)
	var b transport.Binding = nfs.Binding{}
	allocs := testing.AllocsPerRun(50, func() {
		if !b.ReplyData(rh, reply, res).Present {
			panic("no item")
		}
		for i := range calls {
			b.Call(hs[i], calls[i], offs[i])
		}
	})
	require.Zero(t, allocs)
}

func BenchmarkBindingReplyData(b *testing.B) {
	reply, res := encodeReply(b, readOK(make([]byte, 4096), true))
	h := readCall(nfs.ProcRead)
	var bd transport.Binding = nfs.Binding{}
	b.ReportAllocs()
	for b.Loop() {
		if !bd.ReplyData(h, reply, res).Present {
			b.Fatal("no item")
		}
	}
}

func BenchmarkBindingCall(b *testing.B) {
	for _, c := range []struct {
		name string
		proc uint32
		args io.WriterTo
	}{
		{"WRITE", nfs.ProcWrite, &nfsv3.Write3args{File: smallFH, Count: 4096, Stable: nfsv3.FILE_SYNC, Data: make([]byte, 4096)}},
		{"SYMLINK", nfs.ProcSymlink, &nfsv3.Symlink3args{Where: dirop("l"),
			Symlink: nfsv3.Symlinkdata3{SymlinkAttributes: sattrAll(), SymlinkData: "target"}}},
		{"READ", nfs.ProcRead, &nfsv3.Read3args{File: smallFH, Count: 1 << 20}},
		{"GETATTR", nfs.ProcGetattr, &nfsv3.Getattr3args{Object: smallFH}},
	} {
		b.Run(c.name, func(b *testing.B) {
			call, args := encodeCall(b, nfs.ProgNFS, 3, c.proc, c.args)
			h := readCall(c.proc)
			var bd transport.Binding = nfs.Binding{}
			b.ReportAllocs()
			for b.Loop() {
				if bd.Call(h, call, args).MaxReply == 0 {
					b.Fatal("no bound")
				}
			}
		})
	}
}
