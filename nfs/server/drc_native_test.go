package server_test

import (
	"io"
	"os"
	"path/filepath"
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

// TestServerDRCAcrossReconnect: a non-idempotent call (REMOVE, RENAME,
// GUARDED CREATE) still executing when its connection is lost keeps its
// duplicate request cache entry: the client's retransmission on a new
// connection waits for it and gets its reply (NFS3_OK), instead of
// executing it a second time (NFS3ERR_NOENT, NFS3ERR_EXIST).
func TestServerDRCAcrossReconnect(t *testing.T) {
	root, h := bigDir(t, 0)
	for _, n := range []string{"gone", "from"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, n), nil, 0o644))
	}
	const blockedXID = 500
	var calls atomic.Int32 // executions of blockedXID
	var release chan struct{}
	entered := make(chan struct{}, 1)
	server.SetExecuteHook(func(ch *xdr.CallHeader) {
		// The first execution of blockedXID waits, as if on a slow
		// disk, while its connection is lost.
		if ch.XID == blockedXID && calls.Add(1) == 1 {
			entered <- struct{}{}
			<-release
		}
	})
	t.Cleanup(func() { server.SetExecuteHook(nil) })
	srv := startServer(t, server.Config{Handler: h})
	dir := mountRoot(t, srv)
	sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("client")}
	for _, tc := range []struct {
		name string
		proc uint32
		args interface {
			WriteTo(w io.Writer) (int64, error)
		}
		check func(t *testing.T)
	}{
		{"REMOVE", nfs.ProcRemove, &nfsv3.Remove3args{Object: nfsv3.Diropargs3{Dir: dir, Name: "gone"}}, func(t *testing.T) {
			_, err := os.Lstat(filepath.Join(root, "gone"))
			require.ErrorIs(t, err, os.ErrNotExist)
		}},
		{"RENAME", nfs.ProcRename, &nfsv3.Rename3args{From: nfsv3.Diropargs3{Dir: dir, Name: "from"},
			To: nfsv3.Diropargs3{Dir: dir, Name: "to"}}, func(t *testing.T) {
			_, err := os.Lstat(filepath.Join(root, "to"))
			require.NoError(t, err)
		}},
		{"CREATE", nfs.ProcCreate, &nfsv3.Create3args{Where: nfsv3.Diropargs3{Dir: dir, Name: "new"},
			How: &nfsv3.Createhow3_GUARDED{ObjAttributes: sattrNone()}}, func(t *testing.T) {
			_, err := os.Lstat(filepath.Join(root, "new"))
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			release = make(chan struct{})
			released := false
			defer func() {
				if !released {
					close(release) // a failure must not leave the server's worker waiting
				}
			}()
			h := xdr.CallHeader{XID: blockedXID, Prog: nfs.ProgNFS, Vers: 3, Proc: tc.proc, Cred: sys.OpaqueAuth(nil)}
			msg := append(h.Append(nil), encode(t, tc.args)...)
			before := srv.DRCStats()

			c1 := dialRDMA(t, srv)
			require.NoError(t, c1.WriteMsg(msg))
			<-entered // the original is executing
			require.NoError(t, c1.Close())
			c2 := dialRDMA(t, srv) // the client reconnects and retransmits
			require.NoError(t, c2.WriteMsg(msg))
			require.Eventually(t, func() bool { return srv.DRCStats().Hits == before.Hits+1 }, ioGuard, time.Millisecond,
				"the retransmission found the executing original")
			close(release)
			released = true

			rep, err := c2.ReadMsg(nil)
			require.NoError(t, err)
			var rh xdr.ReplyHeader
			off, err := rh.Unmarshal(rep)
			require.NoError(t, err)
			require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
			status := xdr.NewReader(rep[off:])
			st, err := status.Uint32()
			require.NoError(t, err)
			require.Equal(t, uint32(nfs3.OK), st, "%s retransmitted after a reconnect: the original's reply", tc.name)
			require.EqualValues(t, 1, calls.Load(), "executed once")
			tc.check(t)
		})
	}
}
