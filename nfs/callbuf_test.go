package nfs_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
)

// TestServerForwardedWritesOwnTheirCall: the session's workers reuse their
// call buffer after a GETATTR, READ or WRITE, so a WRITE that go-nfs
// executes (a file system other than a Dir), whose pending call keeps the
// file handle until go-nfs answers and the handle is synced for FILE_SYNC,
// must keep its own copy of it (go-nfs, slowed, holds each WRITE 2 ms).
// Writers to eight files, each WRITE followed by GETATTRs, and more
// GETATTRs without pause, all on one connection at once, so that reused
// buffers are overwritten: every WRITE is FILE_SYNC, the file system
// synced each file once per WRITE and no other name, and every file holds
// what was written to it.
func TestServerForwardedWritesOwnTheirCall(t *testing.T) {
	const files, rounds = 8, 25
	fs := newTestFS(t)
	for k := range files {
		f, err := fs.Create(fmt.Sprintf("f%d", k))
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	fs.openDelay = 2 * time.Millisecond // go-nfs holds each WRITE
	srv := startServer(t, nfs.ServerConfig{FS: fs})
	root := mountRoot(t, srv)
	lc := dialRDMA(t, srv)
	a := lookup(t, lc, 2, root, "a")
	fhs := make([]nfsv3.NfsFh3, files)
	for k := range files {
		fhs[k] = lookup(t, lc, uint32(3+k), root, fmt.Sprintf("f%d", k))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	do := dialNFSCaller(t, ctx, srv, 101)

	var wg sync.WaitGroup
	errs := make(chan error, 2*files)
	// GETATTRs without pause, so that workers' buffers are overwritten
	// while go-nfs holds forwarded WRITEs.
	stop := make(chan struct{})
	var hammer sync.WaitGroup
	for range files {
		hammer.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := do(nfs.ProcGetattr, encode(t, &nfsv3.Getattr3args{Object: a})); err != nil {
					errs <- fmt.Errorf("GETATTR: %w", err)
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

	_, syncs := fs.calls()
	count := map[string]int{}
	for _, name := range syncs {
		count[name]++
	}
	want := map[string]int{}
	for k := range files {
		want[fmt.Sprintf("f%d", k)] = rounds
	}
	require.Equal(t, want, count, "the names synced")
	for k := range files {
		f, err := fs.Open(fmt.Sprintf("f%d", k))
		require.NoError(t, err)
		got, err := io.ReadAll(f)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, bytes.Repeat([]byte{byte('a' + k)}, 100*rounds), got, "f%d", k)
	}
}
