package server_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestInlineCalls: over RDMA, NULL and a GETATTR or READ of a file in the
// open-file cache run on the goroutine that polled them (the transport's
// serveInline, seen in OnCall's stack); a GETATTR of a file not cached
// yet (which opens it) and every other call (ACCESS here) run elsewhere;
// with Config.NoInlineCalls, every call does. A READ whose data is not
// in the page cache is answered all the same.
func TestInlineCalls(t *testing.T) {
	for _, off := range []bool{false, true} {
		var mu sync.Mutex
		inline, calls := map[string]int{}, map[string]int{}
		env := startClientEnv(t, func(sc *server.Config, _ *client.MountOptions) {
			sc.NoInlineCalls = off
			sc.OnCall = func(network string, h *xdr.CallHeader) {
				buf := make([]byte, 16<<10)
				in := strings.Contains(string(buf[:runtime.Stack(buf, false)]), "serveInline")
				mu.Lock()
				defer mu.Unlock()
				name := nfs.ProcName(h.Prog, h.Vers, h.Proc)
				calls[name]++
				if in {
					inline[name]++
				} else {
					inline[name] += 0
				}
			}
		})
		want, fh := env.patternFile(t, "f", 4096, 1)
		c, ctx := env.exp.Client, callCtx(t)
		count := func(name string) int {
			mu.Lock()
			defer mu.Unlock()
			return inline[name]
		}
		require.NoError(t, c.Null(ctx))
		_, err := c.Getattr(ctx, fh) // opens and caches the file, on a worker
		require.NoError(t, err)
		getattrs := count("NFS3 GETATTR")
		_, err = c.Getattr(ctx, fh)
		require.NoError(t, err)
		buf := make([]byte, 1024)
		_, _, err = c.Read(ctx, fh, 0, buf)
		require.NoError(t, err)
		require.Equal(t, want[:1024], buf)
		// Its pages dropped (a file system with a page cache), a READ
		// would wait on the disk: begun inline, it is executed again on a
		// goroutine of its own, OnCall not called twice.
		dropPages(t, env.path("f"))
		_, _, err = c.Read(ctx, fh, 1024, buf)
		require.NoError(t, err)
		require.Equal(t, want[1024:2048], buf)
		_, err = c.Access(ctx, fh, 1)
		require.NoError(t, err)
		if off {
			require.Zero(t, count("NFS3 NULL"), "NoInlineCalls: NULL")
			require.Zero(t, count("NFS3 GETATTR"), "NoInlineCalls: GETATTR")
			require.Zero(t, count("NFS3 READ"), "NoInlineCalls: READ")
		} else {
			require.Equal(t, 1, count("NFS3 NULL"), "NULL")
			require.Equal(t, getattrs+1, count("NFS3 GETATTR"), "the GETATTR of a cached file")
			require.Equal(t, 2, count("NFS3 READ"), "the READs of a cached file, OnCall once each")
		}
		require.Zero(t, count("NFS3 ACCESS"), "ACCESS")
		mu.Lock()
		reads := calls["NFS3 READ"]
		mu.Unlock()
		require.Equal(t, 2, reads, "OnCall of the READs")
	}
}

// dropPages has the kernel drop the page cache of the file name, written
// and synced: posix_fadvise(POSIX_FADV_DONTNEED).
func dropPages(t *testing.T, name string) {
	t.Helper()
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Sync())
	require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
}

// TestInlineReadNeedsIdentity: a READ the mode bits do not grant its
// caller needs the kernel's check as the caller, on an identity thread;
// begun on the polling goroutine, it is executed again off it rather than
// have the poll loop wait for that thread, and is refused all the same. A
// READ the mode bits grant stays on the poll loop with no identity thread.
func TestInlineReadNeedsIdentity(t *testing.T) {
	var mu sync.Mutex
	var begunInline, identityInline, identityOff int
	onLoop := func() bool {
		buf := make([]byte, 16<<10)
		return strings.Contains(string(buf[:runtime.Stack(buf, false)]), "serveInline")
	}
	server.SetIdentityHook(func() {
		in := onLoop()
		mu.Lock()
		defer mu.Unlock()
		if in {
			identityInline++
		} else {
			identityOff++
		}
	})
	t.Cleanup(func() { server.SetIdentityHook(nil) })
	env := startClientEnv(t, func(sc *server.Config, _ *client.MountOptions) {
		sc.OnCall = func(_ string, h *xdr.CallHeader) {
			if h.Proc == nfs.ProcRead && onLoop() {
				mu.Lock()
				begunInline++
				mu.Unlock()
			}
		}
	})
	_, private := env.patternFile(t, "private", 4096, 1)
	_, world := env.patternFile(t, "world", 4096, 2)
	require.NoError(t, os.Chown(env.path("private"), 4321, 4321))
	require.NoError(t, os.Chmod(env.path("private"), 0o600))
	require.NoError(t, os.Chown(env.path("world"), 4321, 4321))
	require.NoError(t, os.Chmod(env.path("world"), 0o644))
	conn, ctx := env.exp.Client.Conn(), callCtx(t)
	cred := (&xdr.AuthSys{UID: 1234, GID: 1234, GIDs: []uint32{1234}}).OpaqueAuth(nil)
	xid := uint32(100)
	read := func(fh []byte) uint32 {
		t.Helper()
		xid++
		h := xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcRead, Cred: cred}
		reply, err := conn.Call(ctx, (&nfs3.ReadArgs{File: fh, Count: 512}).Append(h.Append(nil)), nil)
		require.NoError(t, err)
		var rh xdr.ReplyHeader
		off, err := rh.Unmarshal(reply)
		require.NoError(t, err)
		require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
		require.GreaterOrEqual(t, len(reply), off+4)
		return binary.BigEndian.Uint32(reply[off:])
	}
	for _, fh := range [][]byte{private, world} { // into the open-file cache
		_, err := env.exp.Client.Getattr(ctx, fh)
		require.NoError(t, err)
	}
	require.Equal(t, uint32(nfs3.ErrAcces), read(private), "READ of another's 0600 file")
	require.Equal(t, uint32(nfs3.OK), read(world), "READ of another's 0644 file")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, begunInline, "READs begun on the poll loop")
	require.Zero(t, identityInline, "identity hand-offs waited for on the poll loop")
	require.Equal(t, 1, identityOff, "identity hand-offs: the refused READ's, off the poll loop")
}

// TestInlineLookup: a LOOKUP in a directory of the open-file cache is
// answered by the goroutine that polled it when the kernel's dentry cache
// has the name (a file the test made, ".", a name looked up before and not
// there); one the dentry cache does not have (unless the export is in
// memory, as tmpfs), and "..", are handed off. Both kinds of export.
// Every answer is the one a worker gives: the same handles, attributes and
// errors.
func TestInlineLookup(t *testing.T) {
	for _, inMemory := range []bool{false, true} {
		t.Run(fmt.Sprintf("in memory %v", inMemory), func(t *testing.T) { testInlineLookup(t, inMemory) })
	}
}

// testInlineLookup is TestInlineLookup with the export taken as in memory
// (tmpfs: entries taken by name, not opened) or not.
func testInlineLookup(t *testing.T, inMemory bool) {
	env := startClientEnv(t, nil)
	server.SetInMemory(env.srv, inMemory)
	require.NoError(t, os.Mkdir(env.path("d"), 0o755))
	_, fileFH := env.patternFile(t, "d/f", 100, 1)
	c, ctx := env.exp.Client, callCtx(t)
	rootFH, _, err := env.exp.Lookup(ctx, ".", false)
	require.NoError(t, err)
	dirFH, _, err := env.exp.Lookup(ctx, "d", false)
	require.NoError(t, err)
	_, err = c.Getattr(ctx, dirFH) // the directory into the open-file cache
	require.NoError(t, err)

	step := func(what string, answered, handedOff uint64, f func()) {
		t.Helper()
		a0, h0 := server.InlineCalls(env.srv)
		f()
		a1, h1 := server.InlineCalls(env.srv)
		require.Equal(t, answered, a1-a0, "%s: answered on the poll loop", what)
		require.Equal(t, handedOff, h1-h0, "%s: handed off", what)
	}
	step("LOOKUP of a cached name", 1, 0, func() {
		fh, attr, err := c.Lookup(ctx, dirFH, "f")
		require.NoError(t, err)
		require.Equal(t, fileFH, fh)
		require.EqualValues(t, 100, attr.Size)
	})
	step("LOOKUP of .", 1, 0, func() {
		fh, _, err := c.Lookup(ctx, dirFH, ".")
		require.NoError(t, err)
		require.Equal(t, dirFH, fh)
	})
	step("LOOKUP of ..", 0, 1, func() {
		fh, _, err := c.Lookup(ctx, dirFH, "..")
		require.NoError(t, err)
		require.Equal(t, rootFH, fh)
	})
	var notCached = [2]uint64{0, 1} // answered, handed off
	if server.InMemory(env.srv) {
		notCached = [2]uint64{1, 0} // tmpfs: looked up plainly
	}
	step("LOOKUP of a name never looked up", notCached[0], notCached[1], func() {
		_, _, err := c.Lookup(ctx, dirFH, "nope")
		requireStatus(t, err, client.Status(nfs3.ErrNoEnt), "LOOKUP")
	})
	// That name again: the negative dentry the lookup left lets the poll
	// loop answer. The kernel may drop a negative dentry at any time (under
	// memory pressure), and a LOOKUP then handed off leaves a new one: one
	// of three tries is answered on the loop, every one with NFS3ERR_NOENT.
	onLoop := false
	for try := 0; try < 3 && !onLoop; try++ {
		a0, _ := server.InlineCalls(env.srv)
		_, _, err := c.Lookup(ctx, dirFH, "nope")
		requireStatus(t, err, client.Status(nfs3.ErrNoEnt), "LOOKUP of that name again")
		a1, _ := server.InlineCalls(env.srv)
		onLoop = a1-a0 == 1
	}
	require.True(t, onLoop, "LOOKUP of that name again (a negative dentry): answered on the poll loop in none of 3 tries")
	step("LOOKUP in a file", 0, 0, func() { // not in the cache: a worker's
		_, _, err := c.Lookup(ctx, fileFH, "x")
		requireStatus(t, err, client.Status(nfs3.ErrNotDir), "LOOKUP")
	})
	_, err = c.Getattr(ctx, fileFH)
	require.NoError(t, err)
	step("LOOKUP in a cached file", 1, 0, func() {
		_, _, err := c.Lookup(ctx, fileFH, "x")
		requireStatus(t, err, client.Status(nfs3.ErrNotDir), "LOOKUP")
	})
	// The handle made on the loop resolves off it too (a worker's
	// GETATTR of a handle not cached: the index has its name).
	sub := filepath.Join(env.path("d"), "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "g"), []byte("g"), 0o644))
	subFH, _, err := c.Lookup(ctx, dirFH, "sub")
	require.NoError(t, err)
	_, err = c.Getattr(ctx, subFH)
	require.NoError(t, err)
	gFH, _, err := c.Lookup(ctx, subFH, "g")
	require.NoError(t, err)
	attr, err := c.Getattr(ctx, gFH)
	require.NoError(t, err)
	require.EqualValues(t, 1, attr.Size)
}

// TestInlineWrite: a WRITE of a file open for writing in the cache, on an
// export in memory, by a caller whose identity the polling goroutine has
// (root, not squashed), is answered on the poll loop, its data inline or
// pulled by RDMA Read (up to 64 KiB, into the server's call buffer from
// 32 KiB), a retransmission of it from the duplicate request cache, the
// data written once. A user's
// WRITE (an identity thread's), and any WRITE on an export on a disk, go
// to the workers.
func TestInlineWrite(t *testing.T) {
	for _, inMemory := range []bool{true, false} {
		env := startClientEnv(t, func(sc *server.Config, _ *client.MountOptions) {
			sc.Squash = server.NoRootSquash
		})
		server.SetInMemory(env.srv, inMemory)
		_, fh := env.patternFile(t, "f", 16, 1)
		require.NoError(t, os.Chmod(env.path("f"), 0o666))
		conn, ctx := env.exp.Client.Conn(), callCtx(t)
		write := func(xid, uid uint32, off uint64, data string) uint32 {
			t.Helper()
			cred := (&xdr.AuthSys{UID: uid, GID: uid, GIDs: []uint32{uid}}).OpaqueAuth(nil)
			h := xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcWrite, Cred: cred}
			args := nfs3.WriteArgs{File: fh, Offset: off, Count: uint32(len(data)), Stable: nfs3.FileSync, Data: []byte(data)}
			reply, err := conn.Call(ctx, args.Append(h.Append(nil)), nil)
			require.NoError(t, err)
			var rh xdr.ReplyHeader
			res, err := rh.Unmarshal(reply)
			require.NoError(t, err)
			require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
			return binary.BigEndian.Uint32(reply[res:])
		}
		inline := inlineStep(t, env.srv, inMemory)
		want := uint64(0)
		if inMemory {
			want = 1
		}
		inline("a WRITE of a file not cached", 0, func() { require.Zero(t, write(1000, 0, 0, "a")) })
		inline("root's WRITE of a cached file", want, func() { require.Zero(t, write(1001, 0, 1, "b")) })
		drc := env.srv.DRCStats()
		inline("its retransmission", want, func() { require.Zero(t, write(1001, 0, 1, "b")) })
		require.Equal(t, drc.Hits+1, env.srv.DRCStats().Hits, "the retransmission is a DRC hit")
		inline("a user's WRITE", 0, func() { require.Zero(t, write(1002, 1234, 2, "c")) })
		big := strings.Repeat("d", 8<<10)
		chunks := conn.Stats().ReadChunks
		inline("root's WRITE of 8 KiB, its data in a Read chunk", want, func() { require.Zero(t, write(1003, 0, 3, big)) })
		require.Equal(t, chunks+1, conn.Stats().ReadChunks, "the 8 KiB WRITE's data went in a Read chunk")
		// 64 KiB: pulled into a buffer of the server's pool (CallBuffers),
		// executed in it on the poll loop; over 64 KiB, a worker's.
		large := strings.Repeat("e", transport.InlineCallMax)
		inline("root's WRITE of 64 KiB, pulled into a call buffer", want, func() { require.Zero(t, write(1004, 0, 3+uint64(len(big)), large)) })
		larger := strings.Repeat("f", transport.InlineCallMax+4096)
		inline("root's WRITE of 68 KiB", 0, func() { require.Zero(t, write(1005, 0, 3+uint64(len(big)+len(large)), larger)) })
		got, err := os.ReadFile(env.path("f"))
		require.NoError(t, err)
		require.Equal(t, "abc"+big+large+larger, string(got[:3+len(big)+len(large)+len(larger)]))
	}
}

// rootInlineEnv starts a client environment whose server does not squash
// root, its export taken for one in memory or not, the root directory in
// the open-file cache (a GETATTR). want is how many calls a step of root's
// in that directory answers on the poll loop: 1 in memory, else 0.
func rootInlineEnv(t *testing.T, inMemory bool) (env *clientEnv, want uint64) {
	t.Helper()
	env = startClientEnv(t, func(sc *server.Config, _ *client.MountOptions) {
		sc.Squash = server.NoRootSquash
	})
	server.SetInMemory(env.srv, inMemory)
	_, err := env.exp.Client.Getattr(callCtx(t), env.exp.Root) // the root directory into the cache
	require.NoError(t, err)
	if inMemory {
		want = 1
	}
	return env, want
}

// inlineStep returns a check that f had answered calls of srv on the poll
// loop and none handed off to a worker.
func inlineStep(t *testing.T, srv *server.Server, inMemory bool) func(what string, answered uint64, f func()) {
	return func(what string, answered uint64, f func()) {
		t.Helper()
		a0, h0 := server.InlineCalls(srv)
		f()
		a1, h1 := server.InlineCalls(srv)
		require.Equal(t, answered, a1-a0, "%s (in memory %v): answered on the poll loop", what, inMemory)
		require.Zero(t, h1-h0, "%s: handed off", what)
	}
}

// TestInlineCreateRemove: a CREATE, MKDIR or REMOVE in a directory in
// the open-file cache, on an export in memory, by a caller whose identity
// the polling goroutine has (root, not squashed), is answered on the poll
// loop; a user's (an identity thread's), and any on an export on a disk,
// go to the workers. The results are the workers' results.
func TestInlineCreateRemove(t *testing.T) {
	for _, inMemory := range []bool{true, false} {
		env, want := rootInlineEnv(t, inMemory)
		require.NoError(t, os.Chmod(env.dir, 0o777))
		c, ctx := env.exp.Client, callCtx(t)
		root := env.exp.Root
		step := inlineStep(t, env.srv, inMemory)
		mode := uint32(0o640)
		how := client.CreateHow{Mode: client.Guarded, Attr: &client.SetAttr{Mode: &mode}}
		var fh client.FH
		step("root's CREATE", want, func() {
			var attr *client.Attr
			var err error
			fh, attr, err = c.Create(ctx, root, "f", how)
			require.NoError(t, err)
			require.NotNil(t, attr)
			require.EqualValues(t, 0o640, attr.Mode&0o7777)
		})
		got, _, err := c.Lookup(ctx, root, "f")
		require.NoError(t, err)
		require.Equal(t, fh, got, "the handle CREATE gave is LOOKUP's")
		step("root's CREATE of a name taken", want, func() {
			_, _, err := c.Create(ctx, root, "f", how)
			requireStatus(t, err, client.Status(nfs3.ErrExist), "CREATE")
		})
		step("root's MKDIR", want, func() {
			_, _, err := c.Mkdir(ctx, root, "d", nil)
			require.NoError(t, err)
		})
		fi, err := os.Stat(env.path("d"))
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		step("root's REMOVE", want, func() { require.NoError(t, c.Remove(ctx, root, "f")) })
		_, err = os.Lstat(env.path("f"))
		require.True(t, os.IsNotExist(err), "f removed: %v", err)

		// A user's CREATE: on a worker, as the user.
		cred := (&xdr.AuthSys{UID: 1234, GID: 1234, GIDs: []uint32{1234}}).OpaqueAuth(nil)
		h := xdr.CallHeader{XID: 5000, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcCreate, Cred: cred}
		args := nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: "u"}, Mode: nfs3.Guarded}
		step("a user's CREATE", 0, func() {
			reply, err := env.exp.Client.Conn().Call(ctx, args.Append(h.Append(nil)), nil)
			require.NoError(t, err)
			var rh xdr.ReplyHeader
			res, err := rh.Unmarshal(reply)
			require.NoError(t, err)
			require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
			require.Zero(t, binary.BigEndian.Uint32(reply[res:]), "the user's CREATE: NFS3_OK")
		})
		var st syscall.Stat_t
		require.NoError(t, syscall.Lstat(env.path("u"), &st))
		require.EqualValues(t, 1234, st.Uid, "the user's file is the user's")
	}
}

// TestInlineExclusiveCreate: the kernel client's open(O_CREAT|O_EXCL) is
// an EXCLUSIVE CREATE and a SETATTR of the mode and times, and its close
// a WRITE; on an export in memory, by root (not squashed), all three are
// answered on the poll loop, the SETATTR and the WRITE through the
// descriptor the CREATE left in the open-file cache (a chmod the server's
// own access survives keeps it). On an export on a disk they go to the
// workers. The results are the workers' results.
func TestInlineExclusiveCreate(t *testing.T) {
	for _, inMemory := range []bool{true, false} {
		env, want := rootInlineEnv(t, inMemory)
		c, ctx := env.exp.Client, callCtx(t)
		root := env.exp.Root
		step := inlineStep(t, env.srv, inMemory)
		var fh client.FH
		step("root's EXCLUSIVE CREATE", want, func() {
			var err error
			fh, _, err = c.Create(ctx, root, "x", client.CreateHow{Mode: client.Exclusive, Verf: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}})
			require.NoError(t, err)
		})
		mode := uint32(0o640)
		step("its SETATTR of the mode and times", want, func() {
			_, err := c.Setattr(ctx, fh, &client.SetAttr{Mode: &mode, AtimeNow: true, MtimeNow: true}, nil)
			require.NoError(t, err)
		})
		step("a WRITE of it", want, func() {
			_, err := c.Write(ctx, fh, 0, []byte("data"), client.FileSync)
			require.NoError(t, err)
		})
		fi, err := os.Stat(env.path("x"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
		require.Equal(t, int64(4), fi.Size())
		require.Less(t, time.Since(fi.ModTime()), time.Hour, "the times are the server's, not the verifier's")

		// Through the cached descriptor (fchmod, futimens) as through
		// the file's name: a client's times are set to the nanosecond,
		// and a caller who does not own the file may not chmod it.
		mtime := time.Date(2020, 1, 2, 3, 4, 5, 6789, time.UTC)
		_, err = c.Setattr(ctx, fh, &client.SetAttr{Mtime: &mtime}, nil)
		require.NoError(t, err)
		fi, err = os.Stat(env.path("x"))
		require.NoError(t, err)
		require.True(t, fi.ModTime().Equal(mtime), "mtime %v, want %v", fi.ModTime(), mtime)
		cred := (&xdr.AuthSys{UID: 1234, GID: 1234, GIDs: []uint32{1234}}).OpaqueAuth(nil)
		h := xdr.CallHeader{XID: 6000, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcSetattr, Cred: cred}
		args := nfs3.SetattrArgs{Object: fh, NewAttr: nfs3.Sattr{SetMode: true, Mode: 0o777}}
		reply, err := c.Conn().Call(ctx, args.Append(h.Append(nil)), nil)
		require.NoError(t, err)
		var rh xdr.ReplyHeader
		res, err := rh.Unmarshal(reply)
		require.NoError(t, err)
		require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
		require.EqualValues(t, nfs3.ErrPerm, binary.BigEndian.Uint32(reply[res:]), "a user's chmod of root's file")
		fi, err = os.Stat(env.path("x"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the mode stays")
	}
}
