package server_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestInlineCalls: over RDMA, NULL and a GETATTR of a file in the
// open-file cache run on the goroutine that polled them (the transport's
// serveInline, seen in OnCall's stack); a GETATTR of a file not cached
// yet (which opens it) and every other call run on the session's workers;
// with Config.NoInlineCalls, every call does.
func TestInlineCalls(t *testing.T) {
	for _, off := range []bool{false, true} {
		var mu sync.Mutex
		inline := map[string]int{}
		env := startClientEnv(t, func(sc *server.Config, _ *client.MountOptions) {
			sc.NoInlineCalls = off
			sc.OnCall = func(network string, h *xdr.CallHeader) {
				buf := make([]byte, 16<<10)
				in := strings.Contains(string(buf[:runtime.Stack(buf, false)]), "serveInline")
				mu.Lock()
				defer mu.Unlock()
				if name := nfs.ProcName(h.Prog, h.Vers, h.Proc); in {
					inline[name]++
				} else {
					inline[name] += 0
				}
			}
		})
		_, fh := env.patternFile(t, "f", 4096, 1)
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
		_, _, err = c.Read(ctx, fh, 0, make([]byte, 1024))
		require.NoError(t, err)
		if off {
			require.Zero(t, count("NFS3 NULL"), "NoInlineCalls: NULL")
			require.Zero(t, count("NFS3 GETATTR"), "NoInlineCalls: GETATTR")
		} else {
			require.Equal(t, 1, count("NFS3 NULL"), "NULL")
			require.Equal(t, getattrs+1, count("NFS3 GETATTR"), "the GETATTR of a cached file")
		}
		require.Zero(t, count("NFS3 READ"), "READ")
	}
}
