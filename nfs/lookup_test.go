package nfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"
	gonfs "github.com/willscott/go-nfs"
	nfshelper "github.com/willscott/go-nfs/helpers"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// fastPathHandlers are the handlers the dispatch layer's GETATTR, LOOKUP
// and READ are tested with: a DirHandler (its one-descriptor LOOKUP) and
// go-nfs's caching handler over a Dir (the generic path; memfs would make
// up "now" as every file's times). Each has the
// file "a" ("hello") and the directory "d" holding "b" ("bee").
func fastPathHandlers(t *testing.T) map[string]gonfs.Handler {
	root, dh := bigDir(t, 0)
	require.NoError(t, os.WriteFile(filepath.Join(root, "a"), []byte("hello"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "d", "b"), []byte("bee"), 0o644))
	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "a"), []byte("hello"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(other, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "d", "b"), []byte("bee"), 0o644))
	d, err := nfs.DirFS(other)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return map[string]gonfs.Handler{
		"DirHandler": dh,
		"caching":    nfshelper.NewCachingHandler(nfshelper.NewNullAuthHandler(d), 1024),
	}
}

// TestServerFastPaths: GETATTR, LOOKUP and READ, which the dispatch layer
// answers itself, give the bytes go-nfs gives for the same handler where
// go-nfs is right (successes), and knfsd's answers where it is not:
// LOOKUP failures carry the directory's attributes, ".." of the root is
// the root, empty names and names with "/" are NFS3ERR_ACCES, long ones
// NFS3ERR_NAMETOOLONG; READ of a directory is NFS3ERR_ISDIR.
func TestServerFastPaths(t *testing.T) {
	for name, h := range fastPathHandlers(t) {
		t.Run(name, func(t *testing.T) {
			srv := startServer(t, nfs.ServerConfig{Handler: h})
			rootFH := mountRoot(t, srv)
			ours, theirs := dialRDMANFS(t, srv), serveGoNFS(t, h)
			same := func(xid, proc uint32, args []byte) []byte {
				t.Helper()
				rh1, got := call(t, ours, xid, nfs.ProgNFS, 3, proc, args)
				rh2, want := call(t, theirs, xid, nfs.ProgNFS, 3, proc, args)
				require.Equal(t, rh2.AcceptStat, rh1.AcceptStat)
				require.Equal(t, want, got, "%s", nfs.ProcName(nfs.ProgNFS, 3, proc))
				return got
			}
			lookupArgs := func(dir nfsv3.NfsFh3, name string) []byte {
				return encode(t, &nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: dir, Name: nfsv3.Filename3(name)}})
			}
			aFH := lookup(t, ours, 2, rootFH, "a")
			dFH := lookup(t, ours, 3, rootFH, "d")
			bFH := lookup(t, ours, 4, dFH, "b")
			for i, fh := range []nfsv3.NfsFh3{rootFH, aFH, dFH, bFH} {
				same(10+uint32(i), nfs.ProcGetattr, encode(t, &nfsv3.Getattr3args{Object: fh}))
			}
			same(20, nfs.ProcLookup, lookupArgs(rootFH, "a"))
			same(21, nfs.ProcLookup, lookupArgs(dFH, "b"))
			same(22, nfs.ProcLookup, lookupArgs(dFH, "."))
			same(23, nfs.ProcLookup, lookupArgs(dFH, ".."))
			for i, r := range []nfsv3.Read3args{
				{File: aFH, Offset: 0, Count: 2}, {File: aFH, Offset: 0, Count: 5}, {File: aFH, Offset: 0, Count: 4096},
				{File: aFH, Offset: 3, Count: 100}, {File: aFH, Offset: 5, Count: 10}, {File: aFH, Offset: 99, Count: 10},
				{File: bFH, Offset: 1, Count: 1}, {File: aFH, Offset: 1, Count: 0},
			} {
				same(30+uint32(i), nfs.ProcRead, encode(t, &r))
			}

			fails := []struct {
				dir    nfsv3.NfsFh3
				name   string
				status nfsv3.Nfsstat3
			}{
				{rootFH, "missing", nfsv3.NFS3ERR_NOENT},
				{rootFH, "", nfsv3.NFS3ERR_ACCES},
				{rootFH, "d/b", nfsv3.NFS3ERR_ACCES},
				{rootFH, strings.Repeat("x", 256), nfsv3.NFS3ERR_NAMETOOLONG},
				{dFH, "missing", nfsv3.NFS3ERR_NOENT},
				{aFH, "x", nfsv3.NFS3ERR_NOTDIR},
			}
			for i, f := range fails {
				res := results(t, ours, 40+uint32(i), nfs.ProgNFS, 3, nfs.ProcLookup,
					&nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: f.dir, Name: nfsv3.Filename3(f.name)}}, nfsv3.ReadLookup3res)
				fail, ok := res.(*nfsv3.Lookup3res_default)
				require.True(t, ok, "LOOKUP %q: %T", f.name, res)
				require.Equal(t, f.status, fail.Status, "LOOKUP %q", f.name)
				require.True(t, fail.Resfail.DirAttributes.GetAttributesFollow(), "LOOKUP %q: dir_attributes", f.name)
			}
			res := results(t, ours, 50, nfs.ProgNFS, 3, nfs.ProcLookup,
				&nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: rootFH, Name: ".."}}, nfsv3.ReadLookup3res)
			up, ok := res.(*nfsv3.Lookup3res_NFS3_OK)
			require.True(t, ok, "LOOKUP .. of the root: %v", res.GetStatus())
			require.True(t, bytes.Equal(rootFH.Data, up.Resok.Object.Data), "LOOKUP .. of the root is the root")

			rd := results(t, ours, 51, nfs.ProgNFS, 3, nfs.ProcRead, &nfsv3.Read3args{File: dFH, Count: 10}, nfsv3.ReadRead3res)
			require.Equal(t, nfsv3.NFS3ERR_ISDIR, rd.GetStatus())
			ga := results(t, ours, 52, nfs.ProgNFS, 3, nfs.ProcGetattr,
				&nfsv3.Getattr3args{Object: nfsv3.NfsFh3{Data: bytes.Repeat([]byte{7}, 32)}}, nfsv3.ReadGetattr3res)
			require.Contains(t, []nfsv3.Nfsstat3{nfsv3.NFS3ERR_STALE, nfsv3.NFS3ERR_BADHANDLE}, ga.GetStatus())

			rh, _ := call(t, ours, 53, nfs.ProgNFS, 3, nfs.ProcRead, []byte{0, 0, 0, 1})
			require.Equal(t, xdr.AcceptGarbageArgs, rh.AcceptStat)
		})
	}
}
