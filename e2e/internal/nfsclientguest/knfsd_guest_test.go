//go:build e2eguest

package nfsclientguest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// report logs a line the host test collects.
func report(t testing.TB, format string, args ...any) {
	t.Logf("NFSCLIENT "+format, args...)
}

var sizes = []int{0, 1, 4095, 4096, 4097, 65536, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3<<20 + 12345, 8 << 20}

// TestKnfsdPutGet writes files of 0 B to 8 MiB with the Go client and
// compares their checksums with the files on the exported tmpfs; then
// reads files the guest wrote there.
func TestKnfsdPutGet(t *testing.T) {
	exp := mount(t, nil)
	ctx := testCtx(t)
	dir, local := scratch(t, "putget")
	start := time.Now()
	var moved int64
	for i, size := range sizes {
		data := guesttest.Pattern(size, uint64(i))
		name := fmt.Sprintf("%s/put-%d", dir, size)
		f, err := exp.Create(ctx, name)
		require.NoError(t, err)
		_, err = io.Copy(f, bytes.NewReader(data))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		disk, err := os.ReadFile(fmt.Sprintf("%s/put-%d", local, size))
		require.NoError(t, err)
		require.Equal(t, sha256.Sum256(data), sha256.Sum256(disk), "put %d bytes: the kernel sees other bytes", size)

		want := guesttest.Pattern(size, uint64(i)+100)
		require.NoError(t, os.WriteFile(fmt.Sprintf("%s/get-%d", local, size), want, 0o644))
		f, err = exp.Open(ctx, fmt.Sprintf("%s/get-%d", dir, size))
		require.NoError(t, err)
		got, err := io.ReadAll(f)
		require.NoError(t, err)
		require.Equal(t, sha256.Sum256(want), sha256.Sum256(got), "get %d bytes", size)
		at := make([]byte, size)
		n, err := f.ReadAt(at, 0)
		if err != io.EOF {
			require.NoError(t, err)
		}
		require.Equal(t, size, n)
		guesttest.RequireData(t, want, at, "ReadAt of", size)
		require.NoError(t, f.Close())
		moved += 2 * int64(size)
	}
	st := exp.Client.Conn().Stats()
	rs, ws := exp.Client.IOSize()
	report(t, "put/get 0 B..8 MiB against knfsd: %d files each way, %.1f MiB in %.1f s; rsize %d wsize %d; negotiated %+v",
		len(sizes), float64(moved)/(1<<20), time.Since(start).Seconds(), rs, ws, st.Negotiated)
	report(t, "counters: inline calls %d, read-chunk calls %d, long calls %d, write chunks %d, reply chunks %d, remote invalidations %d, local %d",
		st.InlineCalls, st.ReadChunkCalls, st.LongCalls, st.WriteChunks, st.ReplyChunks, st.RemoteInvalidations, st.LocalInvalidations)
}

// TestKnfsdDirectory2000 lists a directory of 2,000 entries the guest made.
func TestKnfsdDirectory2000(t *testing.T) {
	exp := mount(t, nil)
	ctx := testCtx(t)
	dir, local := scratch(t, "big")
	want := map[string]bool{}
	for i := range 2000 {
		name := fmt.Sprintf("entry-with-a-longish-name-%04d", i)
		require.NoError(t, os.WriteFile(local+"/"+name, nil, 0o644))
		want[name] = true
	}
	fh, _, err := exp.Lookup(ctx, dir, true)
	require.NoError(t, err)
	for _, plus := range []bool{false, true} {
		before := exp.Client.Conn().Stats().ReplyChunks
		start := time.Now()
		ents, err := exp.Client.ReadDirAll(ctx, fh, plus)
		require.NoError(t, err)
		got := map[string]bool{}
		for _, e := range ents {
			require.False(t, got[e.Name], "%s listed twice", e.Name)
			got[e.Name] = true
			if plus {
				require.NotNil(t, e.Attr, e.Name)
				require.NotEmpty(t, e.FH, e.Name)
			}
		}
		require.Equal(t, want, got)
		report(t, "2,000 entries (plus=%v) in %d pages (Reply chunks), %v", plus,
			exp.Client.Conn().Stats().ReplyChunks-before, time.Since(start).Round(time.Millisecond))
	}
	des, err := exp.ReadDir(ctx, dir)
	require.NoError(t, err)
	require.Len(t, des, 2000)
}

// TestKnfsdProcedures calls every NFSv3 procedure and MOUNT's MNT, UMNT and
// EXPORT, checking each against the guest's view of the export.
func TestKnfsdProcedures(t *testing.T) {
	exp := mount(t, nil)
	ctx := testCtx(t)
	c := exp.Client
	name, local := scratch(t, "procs")
	require.NoError(t, c.Null(ctx))
	dir, da, err := exp.Lookup(ctx, name, true)
	require.NoError(t, err)
	require.Equal(t, client.TypeDir, da.Type)

	mode := uint32(0o750)
	sub, _, err := c.Mkdir(ctx, dir, "d", &client.SetAttr{Mode: &mode})
	require.NoError(t, err)
	fi, err := os.Stat(local + "/d")
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o750)|os.ModeDir, fi.Mode())

	fmode, zero := uint32(0o640), uint64(0)
	f1, _, err := c.Create(ctx, sub, "unchecked", client.CreateHow{Mode: client.Unchecked, Attr: &client.SetAttr{Mode: &fmode, Size: &zero}})
	require.NoError(t, err)
	_, _, err = c.Create(ctx, sub, "guarded", client.CreateHow{Mode: client.Guarded})
	require.NoError(t, err)
	_, _, err = c.Create(ctx, sub, "guarded", client.CreateHow{Mode: client.Guarded})
	require.ErrorIs(t, err, fs.ErrExist)
	verf := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	x1, _, err := c.Create(ctx, sub, "exclusive", client.CreateHow{Mode: client.Exclusive, Verf: verf})
	require.NoError(t, err)
	// The same verifier again is a retransmission: same file, no error.
	x2, _, err := c.Create(ctx, sub, "exclusive", client.CreateHow{Mode: client.Exclusive, Verf: verf})
	require.NoError(t, err)
	require.Equal(t, x1, x2)
	_, _, err = c.Create(ctx, sub, "exclusive", client.CreateHow{Mode: client.Exclusive, Verf: [8]byte{9}})
	require.ErrorIs(t, err, fs.ErrExist)

	lf, la, err := c.Lookup(ctx, sub, "unchecked")
	require.NoError(t, err)
	require.Equal(t, f1, lf)
	require.Equal(t, uint32(0o640), la.Mode&0o777)
	_, _, err = c.Lookup(ctx, sub, "missing")
	require.ErrorIs(t, err, fs.ErrNotExist)

	granted, err := c.Access(ctx, f1, client.AccessRead|client.AccessModify|client.AccessExecute)
	require.NoError(t, err)
	require.Equal(t, uint32(client.AccessRead|client.AccessModify), granted&(client.AccessRead|client.AccessModify))

	data := guesttest.Pattern(100000, 7)
	wr, err := c.Write(ctx, f1, 0, data[:60000], client.FileSync)
	require.NoError(t, err)
	require.Equal(t, client.FileSync, wr.Committed)
	wr2, err := c.Write(ctx, f1, 60000, data[60000:], client.Unstable)
	require.NoError(t, err)
	cv, err := c.Commit(ctx, f1, 0, 0)
	require.NoError(t, err)
	require.Equal(t, wr2.Verf, cv, "WRITE and COMMIT verifiers")
	disk, err := os.ReadFile(local + "/d/unchecked")
	require.NoError(t, err)
	guesttest.RequireData(t, data, disk)
	got := make([]byte, 200000)
	n, eof, err := c.Read(ctx, f1, 0, got)
	require.NoError(t, err)
	require.True(t, eof)
	guesttest.RequireData(t, data, got[:n])

	newSize := uint64(5000)
	mtime := time.Unix(1700000000, 0)
	_, err = c.Setattr(ctx, f1, &client.SetAttr{Size: &newSize, Mtime: &mtime}, nil)
	require.NoError(t, err)
	st, err := os.Stat(local + "/d/unchecked")
	require.NoError(t, err)
	require.Equal(t, int64(5000), st.Size())
	require.Equal(t, mtime.Unix(), st.ModTime().Unix())
	old := time.Unix(1, 0)
	_, err = c.Setattr(ctx, f1, &client.SetAttr{Size: &newSize}, &old)
	var ne *client.Error
	require.ErrorAs(t, err, &ne)
	require.Equal(t, client.StatusNotSync, ne.Status)

	target := string(bytes.Repeat([]byte("t/"), 1500)) + "end" // > 1 KiB: a Read chunk one way, a Write chunk back
	sl, _, err := c.Symlink(ctx, sub, "link", target, nil)
	require.NoError(t, err)
	rl, err := c.Readlink(ctx, sl)
	require.NoError(t, err)
	require.Equal(t, target, rl)
	onDisk, err := os.Readlink(local + "/d/link")
	require.NoError(t, err)
	require.Equal(t, target, onDisk)

	require.NoError(t, c.Link(ctx, f1, sub, "hard"))
	a, _ := os.Stat(local + "/d/unchecked")
	b, _ := os.Stat(local + "/d/hard")
	require.True(t, os.SameFile(a, b))
	require.NoError(t, c.Rename(ctx, sub, "guarded", dir, "moved"))
	_, err = os.Stat(local + "/moved")
	require.NoError(t, err)

	for _, plus := range []bool{false, true} {
		ents, err := c.ReadDirAll(ctx, sub, plus)
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name)
		}
		require.ElementsMatch(t, []string{"unchecked", "exclusive", "link", "hard"}, names)
	}
	err = c.Rmdir(ctx, dir, "d")
	require.ErrorIs(t, err, syscall.ENOTEMPTY)
	for _, n := range []string{"unchecked", "exclusive", "link", "hard"} {
		require.NoError(t, c.Remove(ctx, sub, n))
	}
	require.ErrorIs(t, c.Remove(ctx, sub, "hard"), fs.ErrNotExist)
	require.NoError(t, c.Rmdir(ctx, dir, "d"))
	_, err = os.Stat(local + "/d")
	require.ErrorIs(t, err, fs.ErrNotExist)

	fss, err := c.Fsstat(ctx, dir)
	require.NoError(t, err)
	require.NotZero(t, fss.TotalBytes)
	info, err := c.Fsinfo(ctx, dir)
	require.NoError(t, err)
	pc, err := c.Pathconf(ctx, dir)
	require.NoError(t, err)
	require.Equal(t, uint32(255), pc.NameMax)
	_, err = c.Getattr(ctx, client.FH(bytes.Repeat([]byte{1}, 28)))
	require.ErrorAs(t, err, &ne)
	report(t, "FSINFO of knfsd: rtmax %d rtpref %d wtmax %d wtpref %d dtpref %d maxfilesize %d properties %#x",
		info.RTMax, info.RTPref, info.WTMax, info.WTPref, info.DTPref, info.MaxFileSize, info.Properties)

	mc, err := client.DialMount(ctx, serverIP, nil)
	require.NoError(t, err)
	defer mc.Close()
	exports, err := mc.Export(ctx)
	require.NoError(t, err)
	require.Contains(t, exports, client.ExportEntry{Dir: "/export", Groups: []string{"10.0.0.0/24"}})
	root, flavors, err := mc.Mnt(ctx, exportPath)
	require.NoError(t, err)
	require.Equal(t, exp.Root, root)
	require.Contains(t, flavors, xdr.FlavorSys)
	require.NoError(t, mc.Umnt(ctx, exportPath))
	_, _, err = mc.Mnt(ctx, "/not-exported")
	require.ErrorAs(t, err, &ne)
	report(t, "MNT of /not-exported: %v; EXPORT: %+v", err, exports)
}

// TestKnfsdInFlight64 runs 64 READs and 64 WRITEs at once on one
// connection (knfsd grants 64 credits).
func TestKnfsdInFlight64(t *testing.T) {
	exp := mount(t, nil)
	ctx := testCtx(t)
	dir, local := scratch(t, "inflight")
	data := guesttest.Pattern(64*65536, 3)
	require.NoError(t, os.WriteFile(local+"/r", data, 0o644))
	rfh, _, err := exp.Lookup(ctx, dir+"/r", true)
	require.NoError(t, err)
	wf, err := exp.Create(ctx, dir+"/w")
	require.NoError(t, err)
	c := exp.Client
	var wg sync.WaitGroup
	errs := make(chan error, 128)
	start := time.Now()
	for i := range 64 {
		wg.Go(func() {
			buf := make([]byte, 65536)
			n, _, err := c.Read(ctx, rfh, uint64(i*65536), buf)
			if err == nil && (n != 65536 || !bytes.Equal(buf, data[i*65536:(i+1)*65536])) {
				err = fmt.Errorf("READ %d: wrong data", i)
			}
			errs <- err
		})
		wg.Go(func() {
			_, err := c.Write(ctx, wf.Handle(), uint64(i*65536), data[i*65536:(i+1)*65536], client.Unstable)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, wf.Close())
	disk, err := os.ReadFile(local + "/w")
	require.NoError(t, err)
	guesttest.RequireData(t, data, disk)
	st := c.Conn().Stats()
	report(t, "128 calls of 64 KiB at once: %v; credits %d, credit stalls %d", time.Since(start).Round(time.Millisecond),
		st.Negotiated.Credits, st.CreditStalls)
	require.Equal(t, uint32(64), st.Negotiated.Credits, "knfsd's credit grant")
}

// TestKnfsdFSTest runs testing/fstest.TestFS over the fs.FS view of a tree
// the guest made.
func TestKnfsdFSTest(t *testing.T) {
	exp := mount(t, nil)
	dir, local := scratch(t, "fstest")
	require.NoError(t, os.MkdirAll(local+"/a/b", 0o755))
	require.NoError(t, os.WriteFile(local+"/x", []byte("hello"), 0o644))
	require.NoError(t, os.WriteFile(local+"/a/y", guesttest.Pattern(3000, 1), 0o644))
	require.NoError(t, os.WriteFile(local+"/a/b/z", nil, 0o644))
	sub, err := fs.Sub(exp.FS(testCtx(t)), dir)
	require.NoError(t, err)
	require.NoError(t, fstest.TestFS(sub, "x", "a/y", "a/b/z"))
}

// TestKnfsdTeardown restarts knfsd (rpc.nfsd 0, then up again) in the
// middle of a 32 MiB write and of a 32 MiB read: the client reconnects,
// resends, and both transfers complete intact (the WRITEs whose verifier
// the restart changed are sent again before Close returns).
func TestKnfsdTeardown(t *testing.T) {
	exp := mount(t, func(o *client.MountOptions) {
		o.Client.Transport.Reconnect = transport.ReconnectPolicy{Enabled: true, Retransmit: true,
			CallTimeout: 10 * time.Second, MaxAttempts: 30}
		o.Client.WSize, o.Client.RSize = 256<<10, 256<<10
	})
	ctx := testCtx(t)
	dir, local := scratch(t, "teardown")
	data := guesttest.Pattern(32<<20, 11)
	restart := func() {
		guesttest.Sh(t, "rpc.nfsd 0 && sleep 1 && rpc.nfsd -N 4 4 && echo 'rdma 20049' > /proc/fs/nfsd/portlist")
	}

	f, err := exp.Create(ctx, dir+"/big")
	require.NoError(t, err)
	start := time.Now()
	for off := 0; off < len(data); off += 1 << 20 {
		if off == 8<<20 {
			restart()
		}
		_, err := f.Write(data[off : off+1<<20])
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	disk, err := os.ReadFile(local + "/big")
	require.NoError(t, err)
	guesttest.RequireData(t, data, disk, "after knfsd restarted mid-write")
	report(t, "32 MiB put with knfsd restarted after 8 MiB: %v, %d WRITEs resent after the verifier changed, reconnects %d, call timeouts %d",
		time.Since(start).Round(time.Millisecond), f.Resends(), exp.Client.Conn().Stats().Reconnects, exp.Client.Conn().Stats().CallTimeouts)

	f, err = exp.Open(ctx, dir+"/big")
	require.NoError(t, err)
	got := make([]byte, 0, len(data))
	buf := make([]byte, 1<<20)
	start = time.Now()
	before := exp.Client.Conn().Stats().Reconnects
	for {
		if len(got) >= 8<<20 && len(got) < 9<<20 {
			restart()
		}
		n, err := f.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	guesttest.RequireData(t, data, got, "after knfsd restarted mid-read")
	after := exp.Client.Conn().Stats().Reconnects
	require.Greater(t, after, before, "no reconnection during the read")
	report(t, "32 MiB get with knfsd restarted after 8 MiB: %v, reconnects %d", time.Since(start).Round(time.Millisecond), after-before)
}

// TestKnfsdInline offers 1024, 4096 and 65536 bytes inline and checks that
// each call and reply takes the form the negotiated thresholds call for:
// WRITEs of 2, 16 and 48 KiB inline or with a Read chunk, READs of the same
// sizes with or without a Write chunk, GETATTR always inline.
func TestKnfsdInline(t *testing.T) {
	for _, inline := range []int{1024, 4096, 65536} {
		t.Run(fmt.Sprint(inline), func(t *testing.T) {
			exp := mount(t, func(o *client.MountOptions) {
				o.Client.Transport.InlineSend, o.Client.Transport.InlineRecv = inline, inline
			})
			checkInline(t, exp, "knfsd", inline, exportPath)
		})
	}
}

// checkInline makes the calls of TestKnfsdInline on exp, whose server
// exports root.
func checkInline(t *testing.T, exp *client.Export, server string, offered int, root string) {
	ctx := testCtx(t)
	dir, _ := scratchIn(t, root, fmt.Sprintf("inline%d", offered))
	c := exp.Client
	f, err := exp.Create(ctx, dir+"/f")
	require.NoError(t, err)
	fh := f.Handle()
	conn := c.Conn()
	neg := conn.Stats().Negotiated
	report(t, "%s, inline %d offered: negotiated send %d recv %d (peer private data %s)", server, offered,
		neg.SendInline, neg.RecvInline, neg.PeerPrivateData)
	delta := func(op func()) transport.Stats {
		before := conn.Stats()
		op()
		after := conn.Stats()
		return transport.Stats{InlineCalls: after.InlineCalls - before.InlineCalls,
			ReadChunkCalls: after.ReadChunkCalls - before.ReadChunkCalls, LongCalls: after.LongCalls - before.LongCalls,
			WriteChunks: after.WriteChunks - before.WriteChunks, ReplyChunks: after.ReplyChunks - before.ReplyChunks}
	}
	b2i := func(b bool) uint64 {
		if b {
			return 1
		}
		return 0
	}
	g := delta(func() { _, err = c.Getattr(ctx, fh); require.NoError(t, err) })
	require.Equal(t, transport.Stats{InlineCalls: 1}, g, "GETATTR")
	for _, size := range []int{2 << 10, 16 << 10, 48 << 10} {
		data := guesttest.Pattern(size, uint64(size))
		// Every size is at least 1 KiB from each threshold, more than a
		// WRITE call's or a READ reply's overhead: a chunk is due
		// exactly when the payload exceeds the threshold.
		w := delta(func() { _, err = c.Write(ctx, fh, 0, data, client.FileSync); require.NoError(t, err) })
		chunk := size > neg.SendInline
		require.Equal(t, transport.Stats{InlineCalls: 1 - b2i(chunk), ReadChunkCalls: b2i(chunk)}, w,
			"WRITE of %d bytes, send inline %d", size, neg.SendInline)
		buf := make([]byte, size)
		r := delta(func() {
			n, _, err := c.Read(ctx, fh, 0, buf)
			require.NoError(t, err)
			require.Equal(t, size, n)
		})
		guesttest.RequireData(t, data, buf)
		chunk = size > neg.RecvInline
		require.Equal(t, transport.Stats{InlineCalls: 1, WriteChunks: b2i(chunk)}, r,
			"READ of %d bytes, receive inline %d", size, neg.RecvInline)
		report(t, "%s inline %d: WRITE %d B: %+v; READ %d B: write chunks %d", server, offered, size,
			map[string]uint64{"inline": w.InlineCalls, "read_chunk": w.ReadChunkCalls}, size, r.WriteChunks)
	}
	require.NoError(t, f.Close())
}
