package server_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Hostile arguments (issue 28: "One small call kills it. A REMOVE of about
// 100 bytes whose name length field claims 0x7ffffff0 bytes makes the
// server allocate what the peer claims; four of them end the process").
//
// TestServerHostileArgs sends every NFSv3 procedure, and MOUNT's MNT and
// UMNT, to a DirHandler's export (the configuration of cmd/rdma-nfsd),
// over RPC-over-RDMA (soft provider) as root and over TCP (NFSOverTCP) as
// an ordinary user, with arguments built from a valid encoding (nfs/nfs3's
// encoders):
//
//   - every truncated prefix of it;
//   - every length word (handle, name, path, WRITE data) and every bool or
//     enum discriminant set to 0x7ffffff0, 0x80000000, 0xffffffff and
//     0xfffffffc, the bytes after it kept or removed; each length word
//     lying by 4 bytes either way;
//   - every count that bounds a length (READ, READDIR, READDIRPLUS,
//     WRITE, COMMIT) set to the same values;
//   - in place of each handle: one of 65 bytes, handles of another export
//     and forged ones naming files outside the export, random bytes,
//     zeros, and handles whose embedded lengths, version or kind lie;
//   - in place of each name: "", "/", "a/b", "\x00", 256 bytes, "." and
//     "..";
//   - counts of 0 and 0xffffffff, a WRITE count other than the data's
//     length, offsets and cookies near 2^64, and the like.
//
// Every call must be answered, within a deadline, with what RFC 1813 and
// knfsd answer: GARBAGE_ARGS for what does not decode (knfsd's decoders
// refuse a handle over NFS3_FHSIZE, a name of 0 or over 255 bytes or with
// '/' or NUL, a WRITE whose count is not its data's length), else an
// nfsstat3 error, or NFS3_OK where the call is valid; each result must
// decode with nfs/nfs3 to its last byte. No connection may drop. The
// server's heap must not grow with what a peer claims: the allocations of
// the whole barrage are bounded per call and per class of calls, and the
// heap in use after it returns near where it was. Then a GETATTR and a
// 64 KiB WRITE and READ succeed on a fresh connection.
func TestServerHostileArgs(t *testing.T) {
	env := newHostileEnv(t)
	specs := env.specs(t)
	env.barrage(t, hostileClasses(t, env, specs))

	// Every connection still answers; the valid calls succeed.
	for _, hc := range env.conns {
		hc.mustRun(t, []hostileCase{{class: "after", proc: nfs.ProcNull, want: st(nfs3.OK)}}, &env.xids)
	}
	var valid []hostileCase
	for _, sp := range specs {
		enc, _ := sp.encode(sp.fhs, sp.names)
		valid = append(valid, hostileCase{class: "valid", desc: sp.name, prog: sp.prog, proc: sp.proc,
			args: enc.b, want: sp.valid})
	}
	env.conns[0].mustRun(t, valid, &env.xids)

	// A fresh connection, with the NFS binding: GETATTR, and a 64 KiB
	// WRITE and READ (data in a Read chunk and a Write chunk).
	rc := dialRDMANFS(t, env.srv)
	_, res := call(t, rc, 1, nfs.ProgNFS, 3, nfs.ProcGetattr, xdr.AppendOpaque(nil, env.root))
	var ga nfs3.GetattrRes
	decodeAll(t, res, ga.Decode)
	require.Equal(t, nfs3.OK, ga.Status)
	data := pattern(64<<10, 28)
	w := nfs3.WriteArgs{File: env.a, Count: uint32(len(data)), Stable: nfs3.FileSync, Data: data}
	_, res = call(t, rc, 2, nfs.ProgNFS, 3, nfs.ProcWrite, w.Append(nil))
	var wr nfs3.WriteRes
	decodeAll(t, res, wr.Decode)
	require.Equal(t, nfs3.OK, wr.Status)
	require.EqualValues(t, len(data), wr.Count)
	r := nfs3.ReadArgs{File: env.a, Count: uint32(len(data))}
	_, res = call(t, rc, 3, nfs.ProgNFS, 3, nfs.ProcRead, r.Append(nil))
	var rr nfs3.ReadRes
	decodeAll(t, res, rr.Decode)
	require.Equal(t, nfs3.OK, rr.Status)
	require.True(t, bytes.Equal(data, rr.Data), "READ returned what WRITE wrote")
}

// barrage sends issue 28's calls, then classes, on env's connections, and
// checks the replies and the heap.
func (env *hostileEnv) barrage(t *testing.T, classes []hostileClass) {
	t.Helper()
	// The connections are warmed up (their buffers allocated) before the
	// heap's baseline.
	for _, hc := range env.conns {
		hc.mustRun(t, []hostileCase{{class: "warm-up", proc: nfs.ProcGetattr,
			args: xdr.AppendOpaque(nil, env.root), want: st(nfs3.OK)}}, &env.xids)
	}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	// Issue 28's four calls first, alone: REMOVE, about 100 bytes, the
	// name's length word 0x7ffffff0.
	issue := make([]hostileCase, 4)
	for i := range issue {
		args := xdr.AppendOpaque(nil, env.root)
		args = xdr.AppendUint32(args, 0x7ffffff0)
		args = append(args, bytes.Repeat([]byte{'n'}, max(0, 60-len(args)))...)
		issue[i] = hostileCase{class: "issue 28", desc: "REMOVE name length 0x7ffffff0", proc: nfs.ProcRemove,
			args: args, want: garbage()}
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	env.conns[0].mustRun(t, issue, &env.xids)
	runtime.ReadMemStats(&m1)
	issueAlloc := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("issue 28: 4 REMOVEs claiming 0x7ffffff0-byte names allocated %d bytes", issueAlloc)
	require.Less(t, issueAlloc, uint64(hostileIssueBound), "issue 28's REMOVEs allocate by the name length they claim")

	calls := len(issue)
	var worst struct {
		class string
		alloc uint64
		lat   time.Duration
	}
	start := time.Now()
	for _, cl := range classes {
		runtime.ReadMemStats(&m0)
		var wg sync.WaitGroup
		results := make([]hostileResult, len(env.conns))
		for i, hc := range env.conns {
			cases := cl.cases
			if hc.tcp {
				cases = append(cases[:len(cases):len(cases)], cl.tcpOnly...)
			}
			calls += len(cases)
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = hc.run(cases, &env.xids)
			}()
		}
		wg.Wait()
		runtime.ReadMemStats(&m1)
		alloc := m1.TotalAlloc - m0.TotalAlloc
		for i, res := range results {
			require.NoError(t, res.err, "%s over %s: the connection failed", cl.name, env.conns[i].name)
			for _, f := range res.fails[:min(len(res.fails), 20)] {
				t.Errorf("%s over %s: %s", cl.name, env.conns[i].name, f)
			}
			if len(res.fails) > 20 {
				t.Errorf("%s over %s: %d more", cl.name, env.conns[i].name, len(res.fails)-20)
			}
			worst.lat = max(worst.lat, res.maxLat)
		}
		if alloc > worst.alloc {
			worst.class, worst.alloc = cl.name, alloc
		}
		require.LessOrEqual(t, alloc, uint64(hostileClassBound), "class %s allocated %d bytes", cl.name, alloc)
	}
	elapsed := time.Since(start)

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	total := after.TotalAlloc - before.TotalAlloc
	perCall := total / uint64(calls)
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d calls in %d classes in %v (slowest reply %v); allocated %d bytes, %d a call; largest class %s, %d bytes; heap in use %d -> %d (%+d)",
		calls, len(classes), elapsed.Round(time.Millisecond), worst.lat.Round(time.Microsecond), total, perCall,
		worst.class, worst.alloc, before.HeapInuse, after.HeapInuse, growth)
	require.LessOrEqual(t, perCall, uint64(hostilePerCallBound), "allocations a call")
	require.LessOrEqual(t, growth, int64(hostileHeapBound), "heap in use after the barrage")
	require.Less(t, worst.lat, hostileDeadline, "slowest reply")
}

// Bounds of the barrage.
const (
	// hostileIssueBound: issue 28's four REMOVEs claimed 4 × 2 GiB. What
	// they may allocate is what any four small calls do: the messages,
	// the replies, the DRC's entries.
	hostileIssueBound = 256 << 10
	// hostilePerCallBound: a call of this barrage is at most a few KiB
	// (a 4 KiB name or path, a 4 KiB READ), and both ends of the
	// connection run in this process: the call's and the reply's buffers
	// on each side, the DRC entry, the decoded arguments. 32 KiB a call
	// on average is 65536 times less than one claimed length.
	hostilePerCallBound = 32 << 10
	// hostileClassBound: one class (one procedure's truncations, length
	// words, handles, names or special values, over both connections):
	// at most a few hundred calls.
	hostileClassBound = 4 << 20
	// hostileHeapBound: what the server keeps after the barrage: the
	// DRC's replies (4096 at most), the mount list (1024 entries at
	// most), the handle index's inodes known to be gone (65536 at most),
	// the connections' buffers.
	hostileHeapBound = 16 << 20
	// hostileDeadline bounds the time to any one reply.
	hostileDeadline = 10 * time.Second
	// hostileWindow is the number of calls in flight on a connection,
	// within the requester's credits (128).
	hostileWindow = 32
)

// hostileWant is what a hostile call must be answered with: GARBAGE_ARGS
// when garbage, SUCCESS with one of status, or with any error when
// anyErr.
type hostileWant struct {
	garbage bool
	status  []nfs3.Status
	anyErr  bool
}

func garbage() hostileWant            { return hostileWant{garbage: true} }
func st(s ...nfs3.Status) hostileWant { return hostileWant{status: s} }
func anyErr() hostileWant             { return hostileWant{anyErr: true} }
func (w hostileWant) or(o hostileWant) hostileWant {
	return hostileWant{garbage: w.garbage || o.garbage, status: append(w.status[:len(w.status):len(w.status)], o.status...),
		anyErr: w.anyErr || o.anyErr}
}

func (w hostileWant) String() string {
	var s []string
	if w.garbage {
		s = append(s, "GARBAGE_ARGS")
	}
	for _, v := range w.status {
		s = append(s, v.String())
	}
	if w.anyErr {
		s = append(s, "any error")
	}
	return strings.Join(s, " or ")
}

func (w hostileWant) admits(s nfs3.Status) bool {
	if w.anyErr && s != nfs3.OK {
		return true
	}
	for _, v := range w.status {
		if v == s {
			return true
		}
	}
	return false
}

// wordKind says what a word of an argument encoding is.
type wordKind uint8

const (
	wordLen   wordKind = iota // the length of an item that follows (handle, name, path, data)
	wordCount                 // a count that bounds a length, valid at any value
	wordDisc                  // a bool or enum discriminant
)

// argWord is a word of an argument encoding that the barrage changes.
type argWord struct {
	off  int
	kind wordKind
	name string
}

// argEnc encodes arguments item by item, recording where each length,
// count and discriminant word is; it must agree with nfs/nfs3's encoder.
type argEnc struct {
	b     []byte
	words []argWord
}

func (e *argEnc) mark(k wordKind, name string) {
	e.words = append(e.words, argWord{off: len(e.b), kind: k, name: name})
}

func (e *argEnc) fh(name string, h []byte) {
	e.mark(wordLen, name+" handle")
	e.b = xdr.AppendOpaque(e.b, h)
}

func (e *argEnc) str(name, s string) {
	e.mark(wordLen, name)
	e.b = xdr.AppendString(e.b, s)
}

func (e *argEnc) opaque(name string, p []byte) {
	e.mark(wordLen, name)
	e.b = xdr.AppendOpaque(e.b, p)
}

func (e *argEnc) u32(v uint32) { e.b = xdr.AppendUint32(e.b, v) }
func (e *argEnc) u64(v uint64) { e.b = xdr.AppendUint64(e.b, v) }

func (e *argEnc) count(name string, v uint32) {
	e.mark(wordCount, name)
	e.u32(v)
}

func (e *argEnc) disc(name string, v uint32) {
	e.mark(wordDisc, name)
	e.u32(v)
}

func (e *argEnc) bool(name string, v bool) {
	var u uint32
	if v {
		u = 1
	}
	e.disc(name, u)
}

func (e *argEnc) dirop(name string, d nfs3.DirOpArgs) {
	e.fh(name, d.Dir)
	e.str(name+" name", d.Name)
}

func (e *argEnc) sattr(s nfs3.Sattr) {
	opt := func(name string, set bool, v uint32) {
		e.bool(name, set)
		if set {
			e.u32(v)
		}
	}
	opt("set_mode", s.SetMode, s.Mode)
	opt("set_uid", s.SetUID, s.UID)
	opt("set_gid", s.SetGID, s.GID)
	e.bool("set_size", s.SetSize)
	if s.SetSize {
		e.u64(s.Size)
	}
	for _, tm := range []struct {
		name string
		t    nfs3.SetTime
	}{{"set_atime", s.Atime}, {"set_mtime", s.Mtime}} {
		e.disc(tm.name, uint32(tm.t.How))
		if tm.t.How == nfs3.SetToClientTime {
			e.u32(tm.t.Time.Sec)
			e.u32(tm.t.Time.Nsec)
		}
	}
}

// appender is an nfs/nfs3 argument type.
type appender interface{ Append([]byte) []byte }

// hostileSpec is one procedure of the barrage.
type hostileSpec struct {
	name       string
	prog, proc uint32
	// fhs and names are the valid arguments' handles and names, in the
	// order of the encoding; encode encodes the arguments with others.
	fhs    [][]byte
	names  []string
	encode func(fhs [][]byte, names []string) (*argEnc, appender)
	// valid is what the valid call gets (after the barrage).
	valid hostileWant
	// count is what a count word set to v gets, the rest kept.
	count func(word string, v uint32) hostileWant
	// badName is what a name of "", "/", "a/b", "\x00" or 256 bytes
	// gets, dots what "." and ".." get.
	badName, dots hostileWant
}

// nativeBadName: knfsd's svcxdr_decode_filename3 refuses a name of 0 or
// more than NFS3_MAXNAMLEN (255) bytes, or with a '/' or NUL, as garbage.
var nativeBadName = garbage()

// hostileEnv is the export under attack and the connections to it.
type hostileEnv struct {
	srv   *server.Server
	conns []*hostileConn
	xids  atomic.Uint32

	root, a, s, d, l, x1, e1, r1 []byte // handles of the export
	// foreign are handles of another export; forged are those with this
	// export's id naming files of the other (outside this export).
	foreign, forged map[string][]byte
}

// newHostileEnv exports base/one (a DirHandler) with NFS over TCP, and
// base/two from a second server for its handles.
func newHostileEnv(t *testing.T) *hostileEnv {
	base := t.TempDir()
	one, two := filepath.Join(base, "one"), filepath.Join(base, "two")
	for _, d := range []string{one, two, filepath.Join(one, "d"), filepath.Join(one, "e1")} {
		require.NoError(t, os.Mkdir(d, 0o777))
		require.NoError(t, os.Chmod(d, 0o777))
	}
	files := map[string][]byte{
		"one/a": pattern(4096, 1), "one/s": []byte("settable"), "one/d/b": []byte("b"),
		"one/x1": nil, "one/r1": nil, "two/a2": []byte("elsewhere"),
	}
	for name, data := range files {
		p := filepath.Join(base, name)
		require.NoError(t, os.WriteFile(p, data, 0o666))
		require.NoError(t, os.Chmod(p, 0o666))
	}
	require.NoError(t, os.Symlink("a", filepath.Join(one, "l")))

	serve := func(dir string) *server.Server {
		d, err := server.DirFS(dir)
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		h, err := server.NewDirHandler(d, server.DirHandlerOptions{})
		require.NoError(t, err)
		return startServer(t, server.Config{Handler: h, NFSOverTCP: true})
	}
	env := &hostileEnv{srv: serve(one), foreign: map[string][]byte{}}
	other := serve(two)

	env.root = mountRoot(t, env.srv).Data
	sc := dialRDMA(t, env.srv)
	for _, f := range []struct {
		fh   *[]byte
		name string
	}{{&env.a, "a"}, {&env.s, "s"}, {&env.d, "d"}, {&env.l, "l"}, {&env.x1, "x1"}, {&env.e1, "e1"}, {&env.r1, "r1"}} {
		*f.fh = lookup(t, sc, 1, fhOf(env.root), f.name).Data
	}
	oroot := mountRoot(t, other).Data
	oa := lookup(t, dialRDMA(t, other), 1, fhOf(oroot), "a2").Data
	env.foreign["foreign root"] = oroot
	env.foreign["foreign file"] = oa
	// A handle is: version, kind, the export id in bytes 2 to 10, ...,
	// and a MAC over the rest in its last 12 bytes (handles.go). The
	// other export's handles with this export's id name files outside
	// this export: their MAC no longer matches, they must not resolve.
	env.forged = map[string][]byte{}
	for name, h := range map[string][]byte{"forged outside root": oroot, "forged outside file": oa} {
		f := bytes.Clone(h)
		copy(f[2:10], env.root[2:10])
		env.forged[name] = f
	}

	env.conns = hostileConns(t, env.srv)
	return env
}

// hostileConns are the connections the barrage is sent on: RDMA as root,
// TCP (NFS and MOUNT) as uid 1000.
func hostileConns(t *testing.T, srv *server.Server) []*hostileConn {
	sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("hostile")}
	user := xdr.AuthSys{Stamp: 2, MachineName: []byte("hostile"), UID: 1000, GID: 1000, GIDs: []uint32{1000}}
	rc := dialRDMA(t, srv)
	tc := dialTCP(t, srv.TCPAddr()).(recordConn)
	return []*hostileConn{
		{name: "RDMA as root", c: rc, cred: sys.OpaqueAuth(nil), deadline: rc.SetDeadline},
		{name: "TCP as uid 1000", c: tc, cred: user.OpaqueAuth(nil), deadline: tc.SetDeadline, tcp: true},
	}
}

func fhOf(b []byte) nfsv3.NfsFh3 { return nfsv3.NfsFh3{Data: b} }

// specs are the 22 NFSv3 procedures and MOUNT's MNT and UMNT, each with
// a valid encoding.
func (env *hostileEnv) specs(t *testing.T) []hostileSpec {
	root, a := env.root, env.a
	ok := st(nfs3.OK)
	fhOnly := func(name string, proc uint32, fh []byte, enc func(fh []byte) appender) hostileSpec {
		return hostileSpec{name: name, prog: nfs.ProgNFS, proc: proc, fhs: [][]byte{fh}, valid: ok,
			encode: func(fhs [][]byte, _ []string) (*argEnc, appender) {
				e := new(argEnc)
				e.fh("object", fhs[0])
				return e, enc(fhs[0])
			}}
	}
	data := []byte("12345678")
	specs := []hostileSpec{
		{name: "NULL", prog: nfs.ProgNFS, proc: nfs.ProcNull, valid: ok,
			encode: func([][]byte, []string) (*argEnc, appender) { return new(argEnc), rawArgs(nil) }},
		fhOnly("GETATTR", nfs.ProcGetattr, root, func(fh []byte) appender { return &nfs3.GetattrArgs{Object: fh} }),
		{name: "SETATTR", prog: nfs.ProgNFS, proc: nfs.ProcSetattr, fhs: [][]byte{env.s}, valid: ok,
			encode: func(fhs [][]byte, _ []string) (*argEnc, appender) {
				x := &nfs3.SetattrArgs{Object: fhs[0], NewAttr: nfs3.Sattr{SetMode: true, Mode: 0o666,
					Mtime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: nfs3.Time{Sec: 1, Nsec: 2}}}}
				e := new(argEnc)
				e.fh("object", x.Object)
				e.sattr(x.NewAttr)
				e.bool("check", x.Check)
				return e, x
			}},
		{name: "LOOKUP", prog: nfs.ProgNFS, proc: nfs.ProcLookup, fhs: [][]byte{root}, names: []string{"a"}, valid: ok,
			badName: nativeBadName, dots: ok,
			encode: func(fhs [][]byte, names []string) (*argEnc, appender) {
				x := &nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: fhs[0], Name: names[0]}}
				e := new(argEnc)
				e.dirop("what", x.What)
				return e, x
			}},
		{name: "ACCESS", prog: nfs.ProgNFS, proc: nfs.ProcAccess, fhs: [][]byte{root}, valid: ok,
			encode: func(fhs [][]byte, _ []string) (*argEnc, appender) {
				x := &nfs3.AccessArgs{Object: fhs[0], Access: 0x3f}
				e := new(argEnc)
				e.fh("object", x.Object)
				e.u32(x.Access)
				return e, x
			}},
		fhOnly("READLINK", nfs.ProcReadlink, env.l, func(fh []byte) appender { return &nfs3.ReadlinkArgs{Symlink: fh} }),
		{name: "READ", prog: nfs.ProgNFS, proc: nfs.ProcRead, fhs: [][]byte{a}, valid: ok,
			count: func(string, uint32) hostileWant { return ok },
			encode: func(fhs [][]byte, _ []string) (*argEnc, appender) {
				x := &nfs3.ReadArgs{File: fhs[0], Offset: 100, Count: 4096}
				e := new(argEnc)
				e.fh("file", x.File)
				e.u64(x.Offset)
				e.count("count", x.Count)
				return e, x
			}},
		{name: "WRITE", prog: nfs.ProgNFS, proc: nfs.ProcWrite, fhs: [][]byte{a}, valid: ok,
			// knfsd's nfs3svc_decode_writeargs: count != len is garbage.
			count: func(string, uint32) hostileWant { return garbage() },
			encode: func(fhs [][]byte, _ []string) (*argEnc, appender) {
				x := &nfs3.WriteArgs{File: fhs[0], Offset: 8, Count: uint32(len(data)), Stable: nfs3.FileSync, Data: data}
				e := new(argEnc)
				e.fh("file", x.File)
				e.u64(x.Offset)
				e.count("count", x.Count)
				e.disc("stable", uint32(x.Stable))
				e.opaque("data", x.Data)
				return e, x
			}},
		{name: "CREATE", prog: nfs.ProgNFS, proc: nfs.ProcCreate, fhs: [][]byte{root}, names: []string{"c1"}, valid: ok,
			badName: nativeBadName, dots: st(nfs3.ErrExist),
			encode: func(fhs [][]byte, names []string) (*argEnc, appender) {
				x := &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: fhs[0], Name: names[0]}, Mode: nfs3.Unchecked,
					Attr: nfs3.Sattr{SetMode: true, Mode: 0o644}}
				e := new(argEnc)
				e.dirop("where", x.Where)
				e.disc("createmode", uint32(x.Mode))
				e.sattr(x.Attr)
				return e, x
			}},
		{name: "MKDIR", prog: nfs.ProgNFS, proc: nfs.ProcMkdir, fhs: [][]byte{root}, names: []string{"m1"}, valid: ok,
			badName: nativeBadName, dots: st(nfs3.ErrExist),
			encode: func(fhs [][]byte, names []string) (*argEnc, appender) {
				x := &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: fhs[0], Name: names[0]}, Attr: nfs3.Sattr{SetMode: true, Mode: 0o755}}
				e := new(argEnc)
				e.dirop("where", x.Where)
				e.sattr(x.Attr)
				return e, x
			}},
		{name: "SYMLINK", prog: nfs.ProgNFS, proc: nfs.ProcSymlink, fhs: [][]byte{root}, names: []string{"y1"}, valid: ok,
			badName: nativeBadName, dots: st(nfs3.ErrExist),
			encode: func(fhs [][]byte, names []string) (*argEnc, appender) {
				x := &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: fhs[0], Name: names[0]}, Path: "a"}
				e := new(argEnc)
				e.dirop("where", x.Where)
				e.sattr(x.Attr)
				e.str("symlink_data", x.Path)
				return e, x
			}},
		{name: "MKNOD", prog: nfs.ProgNFS, proc: nfs.ProcMknod, fhs: [][]byte{root}, names: []string{"f1"}, valid: ok,
			badName: nativeBadName, dots: st(nfs3.ErrExist),
			encode: func(fhs [][]byte, names []string) (*argEnc, appender) {
				x := &nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: fhs[0], Name: names[0]}, Type: nfs3.TypeFIFO,
					Attr: nfs3.Sattr{SetMode: true, Mode: 0o644}}
				e := new(argEnc)
				e.dirop("where", x.Where)
				e.disc("type", uint32(x.Type))
				e.sattr(x.Attr)
				return e, x
			}},
		{name: "REMOVE", prog: nfs.ProgNFS, proc: nfs.ProcRemove, fhs: [][]byte{root}, names: []string{"x1"}, valid: ok,
			badName: nativeBadName, dots: st(nfs3.ErrAcces),
			encode: func(fhs [][]byte, names []string) (*argEnc, appender) {
				x := &nfs3.RemoveArgs{Object: nfs3.DirOpArgs{Dir: fhs[0], Name: names[0]}}
				e := new(argEnc)
				e.dirop("object", x.Object)
				return e, x
			}},
		{name: "RMDIR", prog: nfs.ProgNFS, proc: nfs.ProcRmdir, fhs: [][]byte{root}, names: []string{"e1"}, valid: ok,
			badName: nativeBadName, dots: st(nfs3.ErrAcces),
			encode: func(fhs [][]byte, names []string) (*argEnc, appender) {
				x := &nfs3.RmdirArgs{Object: nfs3.DirOpArgs{Dir: fhs[0], Name: names[0]}}
				e := new(argEnc)
				e.dirop("object", x.Object)
				return e, x
			}},
		{name: "RENAME", prog: nfs.ProgNFS, proc: nfs.ProcRename, fhs: [][]byte{root, env.d}, names: []string{"r1", "r2"}, valid: ok,
			badName: nativeBadName, dots: st(nfs3.ErrPerm),
			encode: func(fhs [][]byte, names []string) (*argEnc, appender) {
				x := &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: fhs[0], Name: names[0]}, To: nfs3.DirOpArgs{Dir: fhs[1], Name: names[1]}}
				e := new(argEnc)
				e.dirop("from", x.From)
				e.dirop("to", x.To)
				return e, x
			}},
		{name: "LINK", prog: nfs.ProgNFS, proc: nfs.ProcLink, fhs: [][]byte{a, env.d}, names: []string{"k1"}, valid: ok,
			badName: nativeBadName, dots: st(nfs3.ErrExist),
			encode: func(fhs [][]byte, names []string) (*argEnc, appender) {
				x := &nfs3.LinkArgs{File: fhs[0], Link: nfs3.DirOpArgs{Dir: fhs[1], Name: names[0]}}
				e := new(argEnc)
				e.fh("file", x.File)
				e.dirop("link", x.Link)
				return e, x
			}},
		{name: "READDIR", prog: nfs.ProgNFS, proc: nfs.ProcReaddir, fhs: [][]byte{root}, valid: ok,
			count: func(string, uint32) hostileWant { return ok },
			encode: func(fhs [][]byte, _ []string) (*argEnc, appender) {
				x := &nfs3.ReaddirArgs{Dir: fhs[0], Count: 4096}
				e := new(argEnc)
				e.fh("dir", x.Dir)
				e.u64(x.Cookie)
				e.b = append(e.b, x.Verf[:]...)
				e.count("count", x.Count)
				return e, x
			}},
		{name: "READDIRPLUS", prog: nfs.ProgNFS, proc: nfs.ProcReaddirplus, fhs: [][]byte{root}, valid: ok,
			count: func(string, uint32) hostileWant { return ok },
			encode: func(fhs [][]byte, _ []string) (*argEnc, appender) {
				x := &nfs3.ReaddirplusArgs{Dir: fhs[0], DirCount: 1024, MaxCount: 8192}
				e := new(argEnc)
				e.fh("dir", x.Dir)
				e.u64(x.Cookie)
				e.b = append(e.b, x.Verf[:]...)
				e.count("dircount", x.DirCount)
				e.count("maxcount", x.MaxCount)
				return e, x
			}},
		fhOnly("FSSTAT", nfs.ProcFsstat, root, func(fh []byte) appender { return &nfs3.FsstatArgs{FSRoot: fh} }),
		fhOnly("FSINFO", nfs.ProcFsinfo, root, func(fh []byte) appender { return &nfs3.FsinfoArgs{FSRoot: fh} }),
		fhOnly("PATHCONF", nfs.ProcPathconf, root, func(fh []byte) appender { return &nfs3.PathconfArgs{Object: fh} }),
		{name: "COMMIT", prog: nfs.ProgNFS, proc: nfs.ProcCommit, fhs: [][]byte{a}, valid: ok,
			// The range is a hint: the whole file is synced (knfsd
			// clamps it to the file system's largest file).
			count: func(string, uint32) hostileWant { return ok },
			encode: func(fhs [][]byte, _ []string) (*argEnc, appender) {
				x := &nfs3.CommitArgs{File: fhs[0], Offset: 4, Count: 100}
				e := new(argEnc)
				e.fh("file", x.File)
				e.u64(x.Offset)
				e.count("count", x.Count)
				return e, x
			}},
		{name: "MOUNT MNT", prog: nfs.ProgMount, proc: nfs.MountProcMnt, valid: ok,
			encode: func([][]byte, []string) (*argEnc, appender) {
				x := &nfs3.MntArgs{Path: "/"}
				e := new(argEnc)
				e.str("dirpath", x.Path)
				return e, x
			}},
		{name: "MOUNT UMNT", prog: nfs.ProgMount, proc: nfs.MountProcUmnt, valid: ok,
			encode: func([][]byte, []string) (*argEnc, appender) {
				x := &nfs3.UmntArgs{Path: "/"}
				e := new(argEnc)
				e.str("dirpath", x.Path)
				return e, x
			}},
	}
	nfsProcs := 0
	for _, sp := range specs {
		enc, x := sp.encode(sp.fhs, sp.names)
		require.Equal(t, x.Append(nil), enc.b, "%s: the test's encoding differs from nfs/nfs3's", sp.name)
		if sp.prog == nfs.ProgNFS {
			nfsProcs++
		}
	}
	require.Equal(t, 22, nfsProcs)
	return specs
}

// rawArgs are arguments given as bytes.
type rawArgs []byte

func (r rawArgs) Append(b []byte) []byte { return append(b, r...) }

// hostileClass is a group of calls whose allocations are measured
// together: one procedure's cases of one kind.
type hostileClass struct {
	name  string
	cases []hostileCase
	// tcpOnly are sent over TCP alone (MOUNT).
	tcpOnly []hostileCase
}

// hostileCase is one call of the barrage.
type hostileCase struct {
	class, desc string
	prog, proc  uint32
	args        []byte
	want        hostileWant
}

// hostileLengths are the values every length, count and discriminant word
// takes.
var hostileLengths = []uint32{0x7ffffff0, 0x80000000, 0xffffffff, 0xfffffffc}

// hostileNames replace every name.
var hostileNames = []string{"", "/", "a/b", "\x00", strings.Repeat("n", 256), ".", ".."}

// hostileHandles are what replace every handle, and what each gets.
func (env *hostileEnv) hostileHandles() []struct {
	name string
	fh   []byte
	want hostileWant
} {
	type hh = struct {
		name string
		fh   []byte
		want hostileWant
	}
	bad := st(nfs3.ErrBadHandle, nfs3.ErrStale)
	hs := []hh{
		// knfsd's svcxdr_decode_nfs_fh3: over NFS3_FHSIZE is garbage.
		{"65 bytes", bytes.Repeat([]byte{1}, 65), garbage()},
		{"empty", nil, bad},
		{"zero 32", make([]byte, 32), bad},
		{"zero 64", make([]byte, 64), bad},
	}
	for name, fh := range env.foreign {
		hs = append(hs, hh{name, fh, st(nfs3.ErrStale)})
	}
	for name, fh := range env.forged {
		hs = append(hs, hh{name, fh, st(nfs3.ErrBadHandle)})
	}
	rng := rand.New(rand.NewPCG(28, 28))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for _, n := range []int{1, 4, 8, 16, 31, 32, 40, 60, 64} {
		hs = append(hs, hh{fmt.Sprintf("random %d", n), random(n), bad})
	}
	// Random files of this export: the version, kind and export id
	// right, the rest random, the MAC too (each refused by its MAC, with
	// no walk of the export).
	for i := range 3 {
		h := append(bytes.Clone(env.root[:10]), random(20)...) // inode, parent, generation
		h[1] = 2
		h = append(h, 0, 0)
		h = append(h, random(12)...)
		hs = append(hs, hh{fmt.Sprintf("random inode %d", i), h, st(nfs3.ErrBadHandle)})
		k := append(bytes.Clone(env.root[:10]), random(20)...)
		k[1] = 1 // kernel handle
		k = append(k, 8)
		k = append(k, random(8)...)
		k = append(k, 0)
		k = append(k, random(12)...)
		hs = append(hs, hh{fmt.Sprintf("random kernel handle %d", i), k, st(nfs3.ErrBadHandle)})
	}
	// Handles whose fields lie, from real ones.
	lie := func(name string, from []byte, f func(h []byte) []byte) {
		hs = append(hs, hh{name, f(bytes.Clone(from)), bad})
	}
	for _, real := range []struct {
		name string
		fh   []byte
	}{{"root", env.root}, {"file", env.a}} {
		h := real.fh
		lie(real.name+" version 0", h, func(h []byte) []byte { h[0] = 0; return h })
		lie(real.name+" version 1", h, func(h []byte) []byte { h[0] = 1; return h })
		lie(real.name+" version 3", h, func(h []byte) []byte { h[0] = 3; return h })
		lie(real.name+" kind 0", h, func(h []byte) []byte { h[1] = 0; return h })
		lie(real.name+" kind 3", h, func(h []byte) []byte { h[1] = 3; return h })
		lie(real.name+" kind swapped", h, func(h []byte) []byte { h[1] ^= 3; return h })
		lie(real.name+" 4 bytes short", h, func(h []byte) []byte { return h[:len(h)-4] })
		lie(real.name+" 4 zero bytes long", h, func(h []byte) []byte { return append(h, 0, 0, 0, 0) })
		lie(real.name+" padded to 64", h, func(h []byte) []byte { return append(h, make([]byte, 64-len(h))...) })
		if h[1] == 1 && len(h) > 31 { // a kernel handle: its length at [30]
			n := int(h[30])
			lie(real.name+" kernel length 0", h, func(h []byte) []byte { h[30] = 0; return h })
			lie(real.name+" kernel length 255", h, func(h []byte) []byte { h[30] = 255; return h })
			lie(real.name+" kernel length +4", h, func(h []byte) []byte { h[30] = byte(n + 4); return h })
			lie(real.name+" kernel length 33", h, func(h []byte) []byte { h[30] = 33; return h })
			lie(real.name+" kernel length -1", h, func(h []byte) []byte { h[30] = byte(n - 1); return h })
			if 31+n < len(h)-12 {
				lie(real.name+" nonzero padding", h, func(h []byte) []byte { h[len(h)-13] = 0xff; return h })
			}
		} else {
			lie(real.name+" nonzero padding", h, func(h []byte) []byte { return append(h, 0, 0, 0, 1) })
		}
	}
	return hs
}

// hostileClasses builds the barrage.
func hostileClasses(t *testing.T, env *hostileEnv, specs []hostileSpec) []hostileClass {
	var classes []hostileClass
	add := func(sp *hostileSpec, kind string, cases []hostileCase) {
		for i := range cases {
			cases[i].class, cases[i].prog, cases[i].proc = sp.name+" "+kind, sp.prog, sp.proc
		}
		c := hostileClass{name: sp.name + " " + kind}
		if sp.prog == nfs.ProgMount {
			c.tcpOnly = cases
		} else {
			c.cases = cases
		}
		classes = append(classes, c)
	}
	handles := env.hostileHandles()
	for i := range specs {
		sp := &specs[i]
		enc, _ := sp.encode(sp.fhs, sp.names)
		valid := enc.b

		// (a) Every truncated prefix.
		var cases []hostileCase
		for n := range len(valid) {
			cases = append(cases, hostileCase{desc: fmt.Sprintf("%d of %d bytes", n, len(valid)), args: valid[:n], want: garbage()})
		}
		if sp.proc == nfs.ProcNull {
			// NULL's arguments are void: bytes after them are ignored.
			cases = append(cases, hostileCase{desc: "8 bytes of junk", args: []byte("junkjunk"), want: st(nfs3.OK)})
		}
		if len(cases) > 0 {
			add(sp, "truncated", cases)
		}

		// (b) Every length, count and discriminant word.
		cases = nil
		for _, w := range enc.words {
			for _, v := range hostileLengths {
				for _, cut := range []bool{false, true} {
					if cut && w.off+4 == len(valid) {
						continue // nothing after it
					}
					args := bytes.Clone(valid)
					binary.BigEndian.PutUint32(args[w.off:], v)
					want := garbage()
					if w.kind == wordCount && !cut {
						want = sp.count(w.name, v)
					}
					how := "kept"
					if cut {
						args, how = args[:w.off+4], "cut"
					}
					cases = append(cases, hostileCase{desc: fmt.Sprintf("%s %#x, the rest %s", w.name, v, how), args: args, want: want})
				}
			}
			if w.kind == wordLen {
				// A length that lies by a word: the items after it shift.
				n := binary.BigEndian.Uint32(valid[w.off:])
				for _, lied := range []uint32{n + 4, n - 4} {
					if lied > n+4 {
						continue // below zero
					}
					args := bytes.Clone(valid)
					binary.BigEndian.PutUint32(args[w.off:], lied)
					cases = append(cases, hostileCase{desc: fmt.Sprintf("%s %d instead of %d", w.name, lied, n), args: args,
						want: garbage().or(anyErr())})
				}
			}
		}
		if len(cases) > 0 {
			add(sp, "length words", cases)
		}

		// (c) Every handle replaced.
		cases = nil
		for slot := range sp.fhs {
			for _, h := range handles {
				fhs := append([][]byte(nil), sp.fhs...)
				fhs[slot] = h.fh
				e, _ := sp.encode(fhs, sp.names)
				cases = append(cases, hostileCase{desc: fmt.Sprintf("handle %d: %s", slot, h.name), args: e.b, want: h.want})
			}
		}
		if len(cases) > 0 {
			add(sp, "handles", cases)
		}

		// (d) Every name replaced.
		cases = nil
		for slot := range sp.names {
			for _, name := range hostileNames {
				names := append([]string(nil), sp.names...)
				names[slot] = name
				e, _ := sp.encode(sp.fhs, names)
				want := sp.badName
				if name == "." || name == ".." {
					want = sp.dots
				}
				cases = append(cases, hostileCase{desc: fmt.Sprintf("name %d: %q", slot, name), args: e.b, want: want})
			}
		}
		if len(cases) > 0 {
			add(sp, "names", cases)
		}
	}
	classes = append(classes, env.specialClasses(t)...)
	n := 0
	for _, c := range classes {
		n += len(c.cases) + len(c.tcpOnly)
	}
	t.Logf("%d classes, %d cases (NFS cases over both connections)", len(classes), n)
	return classes
}

// specialClasses are the values that are not lengths: counts of 0 and
// 0xffffffff, WRITE counts other than the data's length, offsets and
// cookies near 2^64, and values the XDR admits and the procedure does
// not.
func (env *hostileEnv) specialClasses(t *testing.T) []hostileClass {
	ok := st(nfs3.OK)
	nfsCase := func(desc string, proc uint32, x appender, want hostileWant) hostileCase {
		return hostileCase{class: "special", desc: desc, prog: nfs.ProgNFS, proc: proc, args: x.Append(nil), want: want}
	}
	const max64 = math.MaxUint64
	var cases []hostileCase
	for _, c := range []struct {
		off   uint64
		count uint32
	}{{0, 0}, {0, math.MaxUint32}, {math.MaxInt64, 4096}, {math.MaxInt64 + 1, 4096}, {max64 - 4095, 4096}, {max64, math.MaxUint32}} {
		// knfsd clamps the offset to OFFSET_MAX: NFS3_OK, eof, no data.
		cases = append(cases, nfsCase(fmt.Sprintf("READ offset %#x count %#x", c.off, c.count), nfs.ProcRead,
			&nfs3.ReadArgs{File: env.a, Offset: c.off, Count: c.count}, ok))
	}
	cases = append(cases,
		nfsCase("READDIR count 0", nfs.ProcReaddir, &nfs3.ReaddirArgs{Dir: env.root}, st(nfs3.ErrTooSmall)),
		nfsCase("READDIR count 0xffffffff", nfs.ProcReaddir, &nfs3.ReaddirArgs{Dir: env.root, Count: math.MaxUint32}, ok),
		nfsCase("READDIR cookie 2^64-1", nfs.ProcReaddir, &nfs3.ReaddirArgs{Dir: env.root, Cookie: max64, Count: 4096},
			st(nfs3.OK, nfs3.ErrBadCookie)),
		nfsCase("READDIR cookie 2^63", nfs.ProcReaddir, &nfs3.ReaddirArgs{Dir: env.root, Cookie: 1 << 63, Count: 4096},
			st(nfs3.OK, nfs3.ErrBadCookie)),
		nfsCase("READDIRPLUS maxcount 0", nfs.ProcReaddirplus, &nfs3.ReaddirplusArgs{Dir: env.root, DirCount: 4096},
			st(nfs3.ErrTooSmall)),
		nfsCase("READDIRPLUS dircount 0", nfs.ProcReaddirplus, &nfs3.ReaddirplusArgs{Dir: env.root, MaxCount: 4096}, ok),
		nfsCase("READDIRPLUS counts 0xffffffff", nfs.ProcReaddirplus,
			&nfs3.ReaddirplusArgs{Dir: env.root, DirCount: math.MaxUint32, MaxCount: math.MaxUint32}, ok),
		nfsCase("READDIRPLUS cookie 2^64-1", nfs.ProcReaddirplus,
			&nfs3.ReaddirplusArgs{Dir: env.root, Cookie: max64, DirCount: 4096, MaxCount: 4096}, st(nfs3.OK, nfs3.ErrBadCookie)),
		nfsCase("COMMIT offset 2^64-1 count 0xffffffff", nfs.ProcCommit,
			&nfs3.CommitArgs{File: env.a, Offset: max64, Count: math.MaxUint32}, st(nfs3.OK, nfs3.ErrInval)),
		nfsCase("ACCESS every bit", nfs.ProcAccess, &nfs3.AccessArgs{Object: env.root, Access: math.MaxUint32}, ok),
		nfsCase("SETATTR size 2^64-1", nfs.ProcSetattr,
			&nfs3.SetattrArgs{Object: env.s, NewAttr: nfs3.Sattr{SetSize: true, Size: max64}}, st(nfs3.ErrFBig, nfs3.ErrInval)),
		nfsCase("SETATTR guard that does not match", nfs.ProcSetattr,
			&nfs3.SetattrArgs{Object: env.s, Check: true, NewAttr: nfs3.Sattr{SetMode: true, Mode: 0o666}}, st(nfs3.ErrNotSync)),
		nfsCase("SETATTR mtime nsec 2e9", nfs.ProcSetattr, &nfs3.SetattrArgs{Object: env.s,
			NewAttr: nfs3.Sattr{Mtime: nfs3.SetTime{How: nfs3.SetToClientTime, Time: nfs3.Time{Nsec: 2e9}}}}, st(nfs3.ErrInval)),
		nfsCase("CREATE GUARDED over a file", nfs.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: env.root, Name: "a"},
			Mode: nfs3.Guarded}, st(nfs3.ErrExist)),
		nfsCase("SYMLINK empty path", nfs.ProcSymlink, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: env.root, Name: "y2"}},
			st(nfs3.ErrInval)),
		nfsCase("SYMLINK path with NUL", nfs.ProcSymlink, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: env.root, Name: "y2"},
			Path: "a\x00b"}, st(nfs3.ErrInval)),
		nfsCase("SYMLINK path of 4096 bytes", nfs.ProcSymlink, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: env.root, Name: "y2"},
			Path: strings.Repeat("p", 4096)}, st(nfs3.ErrNameTooLong)),
		// nfs3.PathMax (Linux's NFS3_MAXPATHLEN) bounds nfspath3.
		nfsCase("SYMLINK path of 4097 bytes", nfs.ProcSymlink, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: env.root, Name: "y2"},
			Path: strings.Repeat("p", 4097)}, garbage()),
		nfsCase("LOOKUP name of 4096 bytes", nfs.ProcLookup,
			&nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: env.root, Name: strings.Repeat("n", 4096)}}, garbage()),
		nfsCase("LOOKUP name of 4097 bytes", nfs.ProcLookup,
			&nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: env.root, Name: strings.Repeat("n", 4097)}}, garbage()),
		nfsCase("READ of a directory", nfs.ProcRead, &nfs3.ReadArgs{File: env.d, Count: 10}, st(nfs3.ErrIsDir)),
		nfsCase("WRITE to a directory", nfs.ProcWrite, &nfs3.WriteArgs{File: env.d, Count: 1, Data: []byte("x")},
			st(nfs3.ErrIsDir, nfs3.ErrInval)),
		nfsCase("READLINK of a file", nfs.ProcReadlink, &nfs3.ReadlinkArgs{Symlink: env.a}, st(nfs3.ErrInval)),
		nfsCase("READDIR of a file", nfs.ProcReaddir, &nfs3.ReaddirArgs{Dir: env.a, Count: 4096}, st(nfs3.ErrNotDir)),
		// knfsd checks the type first (fh_verify): NFS3ERR_NOTDIR; here
		// the caller's search permission is checked first (permit), and
		// uid 1000 may not search a file of mode 0666.
		nfsCase("LOOKUP in a file", nfs.ProcLookup, &nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: env.a, Name: "x"}},
			st(nfs3.ErrNotDir, nfs3.ErrAcces)),
		nfsCase("LINK of a directory", nfs.ProcLink, &nfs3.LinkArgs{File: env.d, Link: nfs3.DirOpArgs{Dir: env.root, Name: "k2"}},
			st(nfs3.ErrIsDir)),
	)
	for _, typ := range []nfs3.FileType{nfs3.TypeReg, nfs3.TypeDir, nfs3.TypeLnk} {
		// Valid XDR, types MKNOD does not make (knfsd: NFS3ERR_BADTYPE).
		cases = append(cases, nfsCase(fmt.Sprintf("MKNOD type %d", typ), nfs.ProcMknod,
			&nfs3.MknodArgs{Where: nfs3.DirOpArgs{Dir: env.root, Name: "f2"}, Type: typ}, st(nfs3.ErrBadType)))
	}
	// WRITE: knfsd's nfs3svc_decode_writeargs refuses a count other than
	// the data's length as garbage; an offset past OFFSET_MAX, or one the
	// data would take past it, is NFS3ERR_FBIG (nfsd3_proc_write). An
	// offset beyond what the file system holds is the kernel's EFBIG.
	for _, c := range []struct {
		count uint32
		data  int
	}{{9, 8}, {7, 8}, {0, 8}, {8, 0}, {math.MaxUint32, 8}} {
		cases = append(cases, nfsCase(fmt.Sprintf("WRITE count %d, %d bytes", c.count, c.data), nfs.ProcWrite,
			&nfs3.WriteArgs{File: env.a, Count: c.count, Data: make([]byte, c.data)}, garbage()))
	}
	cases = append(cases, nfsCase("WRITE count 0, no data", nfs.ProcWrite, &nfs3.WriteArgs{File: env.a}, ok))
	for _, c := range []struct {
		off  uint64
		data int
	}{{max64, 0}, {max64 - 7, 8}, {1 << 63, 8}, {math.MaxInt64 - 3, 8}, {1 << 62, 8}} {
		for _, stable := range []nfs3.StableHow{nfs3.Unstable, nfs3.FileSync} {
			cases = append(cases, nfsCase(fmt.Sprintf("WRITE offset %#x, %d bytes, stable %d", c.off, c.data, stable), nfs.ProcWrite,
				&nfs3.WriteArgs{File: env.a, Offset: c.off, Count: uint32(c.data), Stable: stable, Data: make([]byte, c.data)},
				st(nfs3.ErrFBig)))
		}
	}
	mount := func(desc string, proc uint32, path string, want hostileWant) hostileCase {
		return hostileCase{class: "special", desc: desc, prog: nfs.ProgMount, proc: proc, args: xdr.AppendString(nil, path), want: want}
	}
	// MNTPATHLEN (RFC 1813 §5.1.4) bounds dirpath.
	mounts := []hostileCase{
		mount("MNT empty path", nfs.MountProcMnt, "", ok),
		mount("MNT path of 1024 bytes", nfs.MountProcMnt, strings.Repeat("/", 1024), ok),
		mount("MNT path of 1025 bytes", nfs.MountProcMnt, strings.Repeat("/", 1025), garbage()),
		mount("UMNT path of 1025 bytes", nfs.MountProcUmnt, strings.Repeat("/", 1025), garbage()),
	}
	require.NotEmpty(t, cases)
	return []hostileClass{{name: "special values", cases: cases}, {name: "MOUNT special values", tcpOnly: mounts}}
}

// hostileConn is a connection the barrage is sent on.
type hostileConn struct {
	name     string
	c        msgConn
	cred     xdr.OpaqueAuth
	deadline func(time.Time) error
	tcp      bool
}

// hostileResult is what a connection saw of a class.
type hostileResult struct {
	fails  []string
	maxLat time.Duration
	err    error
}

// mustRun runs cases and fails the test on any failure.
func (hc *hostileConn) mustRun(t *testing.T, cases []hostileCase, xids *atomic.Uint32) {
	t.Helper()
	res := hc.run(cases, xids)
	require.NoError(t, res.err, hc.name)
	require.Empty(t, res.fails, hc.name)
}

// run sends cases, hostileWindow at a time, and checks each reply.
func (hc *hostileConn) run(cases []hostileCase, xids *atomic.Uint32) hostileResult {
	var res hostileResult
	if err := hc.deadline(time.Now().Add(hostileDeadline)); err != nil {
		res.err = err
		return res
	}
	type sent struct {
		c  *hostileCase
		at time.Time
	}
	var mu sync.Mutex
	pending := make(map[uint32]sent, len(cases))
	window := make(chan struct{}, hostileWindow)
	stop := make(chan struct{})
	defer close(stop)
	werr := make(chan error, 1)
	go func() {
		for i := range cases {
			select {
			case window <- struct{}{}:
			case <-stop:
				werr <- nil
				return
			}
			c := &cases[i]
			xid := xids.Add(1)
			h := xdr.CallHeader{XID: xid, Prog: c.prog, Vers: 3, Proc: c.proc, Cred: hc.cred}
			if c.prog == 0 {
				h.Prog = nfs.ProgNFS
			}
			msg := append(h.Append(make([]byte, 0, 128+len(c.args))), c.args...)
			mu.Lock()
			pending[xid] = sent{c, time.Now()}
			mu.Unlock()
			if err := hc.c.WriteMsg(msg); err != nil {
				werr <- fmt.Errorf("%s %s: %w", c.class, c.desc, err)
				return
			}
		}
		werr <- nil
	}()
	for range cases {
		rep, err := hc.c.ReadMsg(nil)
		if err != nil {
			mu.Lock()
			for _, p := range pending {
				res.fails = append(res.fails, fmt.Sprintf("%s: no reply", p.c.desc))
			}
			mu.Unlock()
			res.err = err
			return res
		}
		<-window
		if len(rep) < 4 {
			res.fails = append(res.fails, fmt.Sprintf("a reply of %d bytes", len(rep)))
			continue
		}
		xid := binary.BigEndian.Uint32(rep)
		mu.Lock()
		p, found := pending[xid]
		delete(pending, xid)
		mu.Unlock()
		if !found {
			res.fails = append(res.fails, fmt.Sprintf("a reply to no call (xid %d)", xid))
			continue
		}
		res.maxLat = max(res.maxLat, time.Since(p.at))
		if err := checkHostileReply(p.c, rep); err != nil {
			res.fails = append(res.fails, fmt.Sprintf("%s: %v", p.c.desc, err))
		}
	}
	res.err = <-werr
	return res
}

// checkHostileReply checks rep against what c wants.
func checkHostileReply(c *hostileCase, rep []byte) error {
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(rep)
	if err != nil {
		return fmt.Errorf("reply header: %w", err)
	}
	if rh.Stat != xdr.MsgAccepted {
		return fmt.Errorf("%v, want %v", rh.Stat, c.want)
	}
	results := rep[off:]
	switch rh.AcceptStat {
	case xdr.AcceptGarbageArgs:
		if !c.want.garbage {
			return fmt.Errorf("GARBAGE_ARGS, want %v", c.want)
		}
		if len(results) != 0 {
			return fmt.Errorf("GARBAGE_ARGS with %d bytes of results", len(results))
		}
		return nil
	case xdr.AcceptSuccess:
	default:
		return fmt.Errorf("%v, want %v", rh.AcceptStat, c.want)
	}
	prog := c.prog
	if prog == 0 {
		prog = nfs.ProgNFS
	}
	status, err := decodeHostileResults(prog, c.proc, results)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if !c.want.admits(status) {
		return fmt.Errorf("%v, want %v", status, c.want)
	}
	return nil
}

// decodeHostileResults decodes the results of proc with nfs/nfs3, to the
// last byte, and returns their status.
func decodeHostileResults(prog, proc uint32, b []byte) (nfs3.Status, error) {
	r := xdr.NewReader(b)
	var status nfs3.Status
	var err error
	dec := func(d interface{ Decode(*xdr.Reader) error }, s *nfs3.Status) {
		err = d.Decode(&r)
		status = *s
	}
	switch {
	case prog == nfs.ProgMount && proc == nfs.MountProcMnt:
		var x nfs3.MntRes
		err = x.Decode(&r)
		status = nfs3.Status(x.Status)
	case prog == nfs.ProgMount && proc == nfs.MountProcUmnt, proc == nfs.ProcNull:
	default:
		switch proc {
		case nfs.ProcGetattr:
			var x nfs3.GetattrRes
			dec(&x, &x.Status)
		case nfs.ProcSetattr:
			var x nfs3.SetattrRes
			dec(&x, &x.Status)
		case nfs.ProcLookup:
			var x nfs3.LookupRes
			dec(&x, &x.Status)
		case nfs.ProcAccess:
			var x nfs3.AccessRes
			dec(&x, &x.Status)
			if err == nil && x.Access&^0x3f != 0 {
				err = fmt.Errorf("ACCESS granted bits RFC 1813 does not define: %#x", x.Access)
			}
		case nfs.ProcReadlink:
			var x nfs3.ReadlinkRes
			dec(&x, &x.Status)
		case nfs.ProcRead:
			var x nfs3.ReadRes
			dec(&x, &x.Status)
			if err == nil && x.Status == nfs3.OK && int(x.Count) != len(x.Data) {
				err = fmt.Errorf("READ count %d with %d bytes", x.Count, len(x.Data))
			}
		case nfs.ProcWrite:
			var x nfs3.WriteRes
			dec(&x, &x.Status)
		case nfs.ProcCreate, nfs.ProcMkdir, nfs.ProcSymlink, nfs.ProcMknod:
			var x nfs3.CreateRes
			dec(&x, &x.Status)
		case nfs.ProcRemove, nfs.ProcRmdir:
			var x nfs3.RemoveRes
			dec(&x, &x.Status)
		case nfs.ProcRename:
			var x nfs3.RenameRes
			dec(&x, &x.Status)
		case nfs.ProcLink:
			var x nfs3.LinkRes
			dec(&x, &x.Status)
		case nfs.ProcReaddir:
			var x nfs3.ReaddirRes
			dec(&x, &x.Status)
		case nfs.ProcReaddirplus:
			var x nfs3.ReaddirplusRes
			dec(&x, &x.Status)
		case nfs.ProcFsstat:
			var x nfs3.FsstatRes
			dec(&x, &x.Status)
		case nfs.ProcFsinfo:
			var x nfs3.FsinfoRes
			dec(&x, &x.Status)
		case nfs.ProcPathconf:
			var x nfs3.PathconfRes
			dec(&x, &x.Status)
		case nfs.ProcCommit:
			var x nfs3.CommitRes
			dec(&x, &x.Status)
		default:
			return 0, fmt.Errorf("no decoder for procedure %d", proc)
		}
	}
	if err != nil {
		return status, err
	}
	if r.Len() != 0 {
		return status, fmt.Errorf("%d bytes after the results", r.Len())
	}
	return status, nil
}

// decodeAll decodes b with decode, to its last byte.
func decodeAll(t *testing.T, b []byte, decode func(*xdr.Reader) error) {
	t.Helper()
	r := xdr.NewReader(b)
	require.NoError(t, decode(&r))
	require.Zero(t, r.Len(), "bytes after the results")
}
