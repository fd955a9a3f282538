package server_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// TestHandleFSID: an export's fsid (DirHandlerOptions.FSID, exports(5)
// fsid=) names it in file handles, instead of its file system's id: a
// handler made anew for the same directory and fsid takes the handles of
// the first (a restart); another fsid, or none, refuses them
// (NFS3ERR_STALE), and so does another directory with the same fsid (its
// files are other files). GETATTR's fsid is the number (root: 0), a UUID's
// halves XORed (as knfsd, in the host's byte order), and without fsid=
// the device number of the export's file system (Linux's
// new_encode_dev, as knfsd); it was 0 for every export before. Two
// exports of one fsid are refused.
func TestHandleFSID(t *testing.T) {
	uuid := "0123456789abcdef-fedcba9876543210"
	u := []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	uuidFSID := binary.NativeEndian.Uint64(u[:8]) ^ binary.NativeEndian.Uint64(u[8:])

	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a"), []byte("hello"), 0o644))
	var st unix.Stat_t
	require.NoError(t, unix.Stat(root, &st))
	devWant := devFSID(st.Dev)

	handler := func(dir, fsid string) *server.DirHandler {
		t.Helper()
		d, err := server.DirFS(dir)
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		h, err := server.NewDirHandler(d, server.DirHandlerOptions{IndexOnly: true, FSID: fsid})
		require.NoError(t, err)
		return h
	}
	for _, tc := range []struct {
		fsid string
		want uint64
	}{{"", devWant}, {"7", 7}, {"root", 0}, {"0", 0}, {uuid, uuidFSID}} {
		h := handler(root, tc.fsid)
		require.Equal(t, tc.want, h.FSID(), "fsid=%q", tc.fsid)
		srv := startServer(t, server.Config{Handler: h})
		c := dialRDMANFS(t, srv)
		rootFH := mountRoot(t, srv)
		status, attr := getattr(t, c, 1, rootFH)
		require.Equal(t, nfsv3.NFS3_OK, status)
		require.Equal(t, tc.want, attr.Fsid, "GETATTR fsid with fsid=%q", tc.fsid)
		fh := lookup(t, c, 2, rootFH, "a")
		status, attr = getattr(t, c, 3, fh)
		require.Equal(t, nfsv3.NFS3_OK, status)
		require.Equal(t, tc.want, attr.Fsid, "a file's fsid with fsid=%q", tc.fsid)
	}
	require.NotZero(t, devWant, "a device number")

	// Handles of fsid=7, taken by a new handler of fsid 7 (a restart)
	// and of a copy of the directory elsewhere (a moved export, the
	// same file system: the root's handle names the root).
	srv7 := startServer(t, server.Config{Handler: handler(root, "7")})
	fh7 := mountRoot(t, srv7)
	for _, tc := range []struct {
		name, dir, fsid string
		want            nfsv3.Nfsstat3
	}{
		{"a restart, fsid=7", root, "7", nfsv3.NFS3_OK},
		{"a restart, fsid=8", root, "8", nfsv3.NFS3ERR_STALE},
		{"a restart without fsid", root, "", nfsv3.NFS3ERR_STALE},
		{"another directory, fsid=7", t.TempDir(), "7", nfsv3.NFS3ERR_STALE},
	} {
		srv := startServer(t, server.Config{Handler: handler(tc.dir, tc.fsid)})
		status, _ := getattr(t, dialRDMANFS(t, srv), 1, fh7)
		require.Equal(t, tc.want, status, tc.name)
	}

	// One fsid names one export.
	_, err := server.New(server.Config{Exports: []server.Export{
		{Path: "/a", Handler: handler(root, "9")}, {Path: "/b", Handler: handler(t.TempDir(), "9")},
	}})
	require.ErrorContains(t, err, "same fsid 9")
	_, err = server.NewDirHandler(nil, server.DirHandlerOptions{FSID: "nope"})
	require.ErrorContains(t, err, "DirHandlerOptions.FSID")
}
