package server_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// TestServerCallBuffersReused: the session's workers reuse their call
// buffer after every NFSv3 call, so what a call keeps of its arguments
// must be its own copy. WRITEs to eight files, each held 2 ms in its
// stable write, each followed by GETATTRs, and GETATTRs and LOOKUPs
// without pause, all on one connection at once, so that reused buffers
// are overwritten while WRITEs execute: every WRITE is FILE_SYNC, each
// file's data was written stable once per WRITE, and every file holds
// what was written to it.
func TestServerCallBuffersReused(t *testing.T) {
	const files, rounds = 8, 25
	root, h := newTestExport(t)
	for k := range files {
		require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", k)), nil, 0o644))
	}
	var mu sync.Mutex
	synced := map[byte]int{}
	defer server.WrapSyncWrite(func(real server.SyncWriteFunc) server.SyncWriteFunc {
		return func(fd int, b []byte, off int64) (int, error) {
			time.Sleep(2 * time.Millisecond) // the WRITE holds its call
			mu.Lock()
			synced[b[0]]++
			mu.Unlock()
			return real(fd, b, off)
		}
	})()
	srv := startServer(t, server.Config{Handler: h})
	root0 := mountRoot(t, srv)
	lc := dialRDMA(t, srv)
	a := lookup(t, lc, 2, root0, "a")
	fhs := make([]nfsv3.NfsFh3, files)
	for k := range files {
		fhs[k] = lookup(t, lc, uint32(3+k), root0, fmt.Sprintf("f%d", k))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	do := dialNFSCaller(t, ctx, srv, 101)

	var wg sync.WaitGroup
	errs := make(chan error, 2*files)
	// GETATTRs and LOOKUPs without pause, so that workers' buffers are
	// overwritten while WRITEs execute.
	stop := make(chan struct{})
	var hammer sync.WaitGroup
	for i := range files {
		hammer.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				proc, args := uint32(nfs.ProcGetattr), encode(t, &nfsv3.Getattr3args{Object: a})
				if i%2 == 1 {
					proc, args = nfs.ProcLookup, encode(t, &nfsv3.Lookup3args{What: nfsv3.Diropargs3{Dir: root0, Name: "a"}})
				}
				if _, err := do(proc, args); err != nil {
					errs <- fmt.Errorf("%s: %w", nfs.ProcName(nfs.ProgNFS, 3, proc), err)
					return
				}
			}
		})
	}
	for k := range files {
		wg.Go(func() {
			for i := range rounds {
				data := bytes.Repeat([]byte{byte('a' + k)}, 100)
				res, err := do(nfs.ProcWrite, encode(t, &nfsv3.Write3args{File: fhs[k], Offset: uint64(100 * i),
					Count: uint32(len(data)), Stable: nfsv3.FILE_SYNC, Data: data}))
				if err != nil {
					errs <- fmt.Errorf("f%d WRITE %d: %w", k, i, err)
					return
				}
				wr, _, err := nfsv3.ReadWrite3res(bytes.NewReader(res))
				if err != nil {
					errs <- fmt.Errorf("f%d WRITE %d: %w", k, i, err)
					return
				}
				ok, isOK := wr.(*nfsv3.Write3res_NFS3_OK)
				if !isOK || ok.Resok.Committed != nfsv3.FILE_SYNC || ok.Resok.Count != 100 {
					errs <- fmt.Errorf("f%d WRITE %d: %+v", k, i, wr)
					return
				}
				for range 2 {
					if _, err := do(nfs.ProcGetattr, encode(t, &nfsv3.Getattr3args{Object: a})); err != nil {
						errs <- fmt.Errorf("GETATTR: %w", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	hammer.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	want := map[byte]int{}
	for k := range files {
		want[byte('a'+k)] = rounds
	}
	mu.Lock()
	require.Equal(t, want, synced, "the stable writes, by file")
	mu.Unlock()
	for k := range files {
		got, err := os.ReadFile(filepath.Join(root, fmt.Sprintf("f%d", k)))
		require.NoError(t, err)
		require.Equal(t, bytes.Repeat([]byte{byte('a' + k)}, 100*rounds), got, "f%d", k)
	}
}
