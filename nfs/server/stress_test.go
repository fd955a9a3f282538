package server_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
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
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestServerPipelinedWrites: many WRITEs (UNSTABLE, 1 B to 256 KiB at
// random offsets, by Read chunk when large), READs and COMMITs in flight at
// once on one RDMA connection, as the Linux client sends them, against a
// directory export: every call is answered (a stuck reply would hang the
// kernel's hard mount) and the file ends as a model of the writes says.
func TestServerPipelinedWrites(t *testing.T) {
	d, err := server.DirFS(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	h, err := server.NewDirHandler(d, server.DirHandlerOptions{})
	require.NoError(t, err)
	srv := startServer(t, server.Config{Handler: h})
	root := mountRoot(t, srv)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	call := dialNFSCaller(t, ctx, srv, 1)
	do := func(proc uint32, args []byte) []byte {
		res, err := call(proc, args)
		if err != nil {
			t.Errorf("%s: %v", nfs.ProcName(nfs.ProgNFS, 3, proc), err)
		}
		return res
	}
	created := do(nfs.ProcCreate, encode(t, &nfsv3.Create3args{Where: nfsv3.Diropargs3{Dir: root, Name: "f"},
		How: &nfsv3.Createhow3_UNCHECKED{ObjAttributes: sattrNone()}}))
	require.NotNil(t, created)
	fh := lookup(t, dialRDMA(t, srv), 2000, root, "f")

	const size = 2 << 20
	var mu sync.Mutex
	model := make([]byte, 0, size)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 40 {
				switch op := rng.IntN(10); {
				case op < 6:
					off := rng.IntN(size)
					n := 1 + rng.IntN(min(size-off, 256<<10))
					data := bytes.Repeat([]byte{byte(rng.Uint32())}, n)
					// Writes to one range are serialised by mu so that
					// the model is exact: the calls still overlap in time
					// on the wire with everything else.
					mu.Lock()
					res := do(nfs.ProcWrite, encode(t, &nfsv3.Write3args{File: fh, Offset: uint64(off), Count: uint32(n),
						Stable: nfsv3.UNSTABLE, Data: data}))
					if res != nil {
						if need := off + n; need > len(model) {
							model = append(model, make([]byte, need-len(model))...)
						}
						copy(model[off:], data)
					}
					mu.Unlock()
				case op < 9:
					do(nfs.ProcRead, encode(t, &nfsv3.Read3args{File: fh, Offset: uint64(rng.IntN(size)), Count: 64 << 10}))
				default:
					do(nfs.ProcCommit, encode(t, &nfsv3.Commit3args{File: fh}))
				}
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())
	// The file as the server has it.
	got := make([]byte, 0, len(model))
	for off := 0; off < len(model); {
		res := do(nfs.ProcRead, encode(t, &nfsv3.Read3args{File: fh, Offset: uint64(off), Count: 1 << 20}))
		r := xdr.NewReader(res)
		status, _ := r.Uint32()
		require.Zero(t, status)
		if follow, _ := r.Bool(); follow {
			require.NoError(t, r.Skip(84))
		}
		_, _ = r.Uint32() // count
		_, _ = r.Bool()   // eof
		data, err := r.Opaque(1 << 20)
		require.NoError(t, err)
		require.NotEmpty(t, data)
		got = append(got, data...)
		off += len(data)
	}
	require.True(t, bytes.Equal(model, got), "the file differs from the model of the writes")
}

// dialNFSCaller dials srv over RDMA (soft provider, the NFS binding) and
// returns a function, safe for concurrent use, that sends one NFSv3 call
// with an AUTH_SYS credential and returns its results: an error unless the
// reply is MSG_ACCEPTED with SUCCESS. XIDs count up from first.
func dialNFSCaller(t *testing.T, ctx context.Context, srv *server.Server, first uint32) func(proc uint32, args []byte) ([]byte, error) {
	t.Helper()
	c, err := transport.Dial(ctx, srv.RDMAAddr().String(), &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	var next atomic.Uint32
	next.Store(first - 1)
	return func(proc uint32, args []byte) ([]byte, error) {
		sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("client")}
		hdr := xdr.CallHeader{XID: next.Add(1), Prog: nfs.ProgNFS, Vers: 3, Proc: proc, Cred: sys.OpaqueAuth(nil)}
		rep, err := c.Call(ctx, append(hdr.Append(nil), args...), nil)
		if err != nil {
			return nil, err
		}
		var rh xdr.ReplyHeader
		off, err := rh.Unmarshal(rep)
		if err != nil || rh.AcceptStat != xdr.AcceptSuccess {
			return nil, fmt.Errorf("reply %+v: %v", rh, err)
		}
		return rep[off:], nil
	}
}
