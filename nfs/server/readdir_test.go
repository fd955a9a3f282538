package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// bigDir makes root/big with n empty files entry-0000 and on, and returns
// a DirHandler exporting root.
func bigDir(t *testing.T, n int) (string, *server.DirHandler) {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "big"), 0o755))
	for i := range n {
		f, err := os.Create(filepath.Join(root, "big", fmt.Sprintf("entry-%04d", i)))
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	d, err := server.DirFS(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	h, err := server.NewDirHandler(d, server.DirHandlerOptions{IndexOnly: true})
	require.NoError(t, err)
	return root, h
}

// dialRDMANFS connects over the soft provider with the NFS binding, so
// that READDIR replies larger than the inline threshold come back in the
// Reply chunk the call offers, as with the Linux client.
func dialRDMANFS(t *testing.T, srv *server.Server) *transport.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	defer cancel()
	c, err := transport.Dial(ctx, srv.RDMAAddr().String(), &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(ioGuard)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// listing is the result of listing a directory to eof.
type listing struct {
	calls   int
	names   map[string]uint64 // name to fileid
	fhs     map[string][]byte
	perCall []int
}

var xidSeq atomic.Uint32

// readdirplusAll lists dir with READDIRPLUS calls of dircount and
// maxcount, each resuming at the last cookie; echo sends back the
// previous reply's verifier (the Linux client does), otherwise 0. Every
// entry must have its handle and attributes; no name may come twice.
func readdirplusAll(t *testing.T, c msgConn, dir nfsv3.NfsFh3, dircount, maxcount uint32, echo bool) listing {
	t.Helper()
	l := listing{names: map[string]uint64{}, fhs: map[string][]byte{}}
	var cookie uint64
	var verf [8]byte
	for {
		l.calls++
		require.Less(t, l.calls, 10000, "no eof")
		args := &nfsv3.Readdirplus3args{Dir: dir, Cookie: cookie, Dircount: dircount, Maxcount: maxcount}
		if echo {
			args.Cookieverf = verf
		}
		res := results(t, c, 1000+xidSeq.Add(1), nfs.ProgNFS, 3, nfs.ProcReaddirplus, args, nfsv3.ReadReaddirplus3res)
		ok, isOK := res.(*nfsv3.Readdirplus3res_NFS3_OK)
		require.True(t, isOK, "READDIRPLUS: %v", res.GetStatus())
		require.True(t, ok.Resok.DirAttributes.GetAttributesFollow(), "dir_attributes")
		verf = ok.Resok.Cookieverf
		require.Zero(t, verf, "cookie verifier (0, as knfsd's)")
		n := 0
		for e := ok.Resok.Reply.Entries; e != nil; e = e.Nextentry {
			n++
			cookie = e.Cookie
			if e.Name == "." || e.Name == ".." {
				continue
			}
			_, dup := l.names[e.Name]
			require.False(t, dup, "%s listed twice", e.Name)
			attr, hasAttr := e.NameAttributes.(*nfsv3.PostOpAttr_TRUE)
			require.True(t, hasAttr, "%s: no name_attributes", e.Name)
			require.Equal(t, e.Fileid, attr.Attributes.Fileid, e.Name)
			fh, hasFH := e.NameHandle.(*nfsv3.PostOpFh3_TRUE)
			require.True(t, hasFH, "%s: no name_handle", e.Name)
			l.names[e.Name] = e.Fileid
			l.fhs[e.Name] = fh.Handle.Data
		}
		l.perCall = append(l.perCall, n)
		if ok.Resok.Reply.Eof {
			return l
		}
		require.NotZero(t, n, "no entries and no eof")
	}
}

// readdirAll lists dir with READDIR calls of count.
func readdirAll(t *testing.T, c msgConn, dir nfsv3.NfsFh3, count uint32) listing {
	t.Helper()
	l := listing{names: map[string]uint64{}}
	var cookie uint64
	var verf [8]byte
	for {
		l.calls++
		require.Less(t, l.calls, 10000, "no eof")
		res := results(t, c, 1000+xidSeq.Add(1), nfs.ProgNFS, 3, nfs.ProcReaddir,
			&nfsv3.Readdir3args{Dir: dir, Cookie: cookie, Cookieverf: verf, Count: count}, nfsv3.ReadReaddir3res)
		ok, isOK := res.(*nfsv3.Readdir3res_NFS3_OK)
		require.True(t, isOK, "READDIR: %v", res.GetStatus())
		verf = ok.Resok.Cookieverf
		n := 0
		for e := ok.Resok.Reply.Entries; e != nil; e = e.Nextentry {
			n++
			cookie = e.Cookie
			if e.Name == "." || e.Name == ".." {
				continue
			}
			_, dup := l.names[e.Name]
			require.False(t, dup, "%s listed twice", e.Name)
			l.names[e.Name] = e.Fileid
		}
		l.perCall = append(l.perCall, n)
		if ok.Resok.Reply.Eof {
			return l
		}
		require.NotZero(t, n, "no entries and no eof")
	}
}

// knfsdCalls is how many READDIRPLUS replies of maxcount knfsd needs for
// entries names of nameLen bytes (plus "." and ".."), with its usual
// 28-byte NFSv3 handle (ext4, UUID fsid): knfsd fills maxcount with
// entries and ignores dircount.
func knfsdCalls(entries, nameLen int, maxcount uint32) (perCall, calls int) {
	const fh = 28
	entry := 4 + 8 + 4 + (nameLen+3)&^3 + 8 + 4 + 84 + 4 + 4 + fh
	perCall = (int(maxcount) - 8) / entry
	return perCall, (entries + 2 + perCall - 1) / perCall
}

// TestReaddirplusFill lists 2,000 entries with the Linux client's
// READDIRPLUS sizes (maxcount is its dtsize, dircount maxcount/8 before
// Linux 5.18 and maxcount since) and compares the number of calls with
// knfsd's; every listing has each name once, with its inode number as
// fileid and the handle LOOKUP gives.
func TestReaddirplusFill(t *testing.T) {
	const n = 2000
	root, h := bigDir(t, n)
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	big := lookup(t, c, 2, rootFH, "big")
	var first listing
	for _, maxcount := range []uint32{8192, 32768, 65536} {
		for _, dircount := range []uint32{maxcount / 8, maxcount} {
			l := readdirplusAll(t, c, big, dircount, maxcount, true)
			require.Len(t, l.names, n)
			if first.names == nil {
				first = l
				for name, fid := range l.names {
					require.Equal(t, fileID(t, filepath.Join(root, "big", name)), fid, "fileid of %s", name)
				}
				for i := 0; i < n; i += 97 {
					name := fmt.Sprintf("entry-%04d", i)
					require.Equal(t, lookup(t, c, 3+uint32(i), big, name).Data, l.fhs[name], "handle of %s", name)
				}
			}
			require.Equal(t, first.names, l.names)
			require.Equal(t, first.fhs, l.fhs)
			kPer, kCalls := knfsdCalls(n, len("entry-0000"), maxcount)
			t.Logf("READDIRPLUS maxcount %d dircount %d: server %d calls (%d entries/call), knfsd %d calls (%d entries/call)",
				maxcount, dircount, l.calls, l.perCall[0], kCalls, kPer)
			require.LessOrEqual(t, float64(l.calls), 1.2*float64(kCalls), "calls against knfsd's")
		}
	}
}

// TestReaddirFill: READDIR of 2,000 entries at count 32768, the same
// names and fileids as READDIRPLUS.
func TestReaddirFill(t *testing.T) {
	const n = 2000
	_, h := bigDir(t, n)
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	big := lookup(t, c, 2, rootFH, "big")
	after := readdirAll(t, c, big, 32768)
	plus := readdirplusAll(t, c, big, 4096, 32768, true)
	require.Equal(t, plus.names, after.names)
	require.Len(t, after.names, n)
	// entry3 with a 10-byte name is 36 bytes.
	t.Logf("READDIR count 32768: server %d calls (%d entries/call), knfsd %d calls",
		after.calls, after.perCall[0], (n+2+(32768-8)/36-1)/((32768-8)/36))
	require.LessOrEqual(t, after.calls, 3)
}

// TestReaddirplusConcurrentChanges lists a directory in small replies
// while other names are created and removed: no name comes twice, and
// every name that stayed is listed.
func TestReaddirplusConcurrentChanges(t *testing.T) {
	const n = 500
	root, h := bigDir(t, n)
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	big := lookup(t, c, 2, rootFH, "big")

	for _, echo := range []bool{true, false} {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := filepath.Join(root, "big", fmt.Sprintf("churn-%04d", i%300))
				if f, err := os.Create(name); err == nil {
					_ = f.Close()
				}
				if i%2 == 1 {
					_ = os.Remove(filepath.Join(root, "big", fmt.Sprintf("churn-%04d", (i*7)%300)))
				}
			}
		}()
		l := readdirplusAll(t, c, big, 512, 4096, echo)
		close(stop)
		wg.Wait()
		for i := range n {
			_, ok := l.names[fmt.Sprintf("entry-%04d", i)]
			require.True(t, ok, "entry-%04d missing", i)
		}
		t.Logf("echo verifier %v: %d calls, %d names under churn", echo, l.calls, len(l.names))
	}
}

// TestFsinfoDtpref: FSINFO offers the message size as dtpref.
func TestFsinfoDtpref(t *testing.T) {
	srv := startServer(t, server.Config{Handler: newTestDir(t)})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	res := results(t, c, 2, nfs.ProgNFS, 3, nfs.ProcFsinfo, &nfsv3.Fsinfo3args{Fsroot: rootFH}, nfsv3.ReadFsinfo3res)
	ok, isOK := res.(*nfsv3.Fsinfo3res_NFS3_OK)
	require.True(t, isOK)
	require.Equal(t, uint32(1<<20), ok.Resok.Dtpref)
}

// TestReaddirErrors: a file is not a directory; a reply too small for one
// entry is NFS3ERR_TOOSMALL; a handle of a removed directory is
// NFS3ERR_STALE, one the server did not make NFS3ERR_BADHANDLE.
func TestReaddirErrors(t *testing.T) {
	root, h := newTestExport(t)
	require.NoError(t, os.Mkdir(filepath.Join(root, "gone"), 0o755))
	srv := startServer(t, server.Config{Handler: h})
	rootFH := mountRoot(t, srv)
	c := dialRDMANFS(t, srv)
	a := lookup(t, c, 2, rootFH, "a")
	res := results(t, c, 3, nfs.ProgNFS, 3, nfs.ProcReaddirplus,
		&nfsv3.Readdirplus3args{Dir: a, Dircount: 4096, Maxcount: 4096}, nfsv3.ReadReaddirplus3res)
	require.Equal(t, nfsv3.NFS3ERR_NOTDIR, res.GetStatus())
	res = results(t, c, 4, nfs.ProgNFS, 3, nfs.ProcReaddirplus,
		&nfsv3.Readdirplus3args{Dir: rootFH, Dircount: 100, Maxcount: 150}, nfsv3.ReadReaddirplus3res)
	require.Equal(t, nfsv3.NFS3ERR_TOOSMALL, res.GetStatus())
	res2 := results(t, c, 5, nfs.ProgNFS, 3, nfs.ProcReaddir,
		&nfsv3.Readdir3args{Dir: nfsv3.NfsFh3{Data: make([]byte, 16)}, Count: 4096}, nfsv3.ReadReaddir3res)
	require.Equal(t, nfsv3.NFS3ERR_BADHANDLE, res2.GetStatus())
	gone := lookup(t, c, 6, rootFH, "gone")
	require.NoError(t, os.Remove(filepath.Join(root, "gone")))
	res2 = results(t, c, 7, nfs.ProgNFS, 3, nfs.ProcReaddir, &nfsv3.Readdir3args{Dir: gone, Count: 4096}, nfsv3.ReadReaddir3res)
	require.Equal(t, nfsv3.NFS3ERR_STALE, res2.GetStatus())
	// The root: every entry listed once.
	l := readdirplusAll(t, c, rootFH, 4096, 4096, true)
	require.Contains(t, l.names, "a")
}
