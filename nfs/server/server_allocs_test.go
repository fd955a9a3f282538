package server_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// TestServerCallAllocs bounds the heap allocations of a whole call, Go
// client and server together over the soft provider, for the calls of a
// client's everyday work: a 4 KiB FILE_SYNC WRITE (5 today; 8 before the
// attributes were built as values and the server executed every call
// itself, 9 before the duplicate request cache's LRU list was made
// intrusive, 10 before the session's workers kept their call buffer, 17
// before the attributes were built from the stat result in one allocation
// and replies were given room for their results), a GETATTR (7; 8; 13),
// and a 1 MiB READ (1 allocation and well under 1 KiB a call once each
// processor's pool holds a buffer; 4 before the attributes were values; 6
// and 1 MiB a call before READ replies were built in pooled buffers), and
// a 1 MiB UNSTABLE WRITE (5 allocations, 12-23 KB a call, the pooled 1 MiB
// buffers allocated again now and then after a collection emptied the
// pool, once its call is pulled or read into a pooled buffer; 1 MiB
// before) (the bytes are not bounded under -race, where sync.Pool drops
// buffers on purpose, and allocates more). The bounds leave room for a
// stray allocation of a background goroutine.
func TestServerCallAllocs(t *testing.T) {
	env := startClientEnv(t, nil)
	require.NoError(t, os.WriteFile(env.path("f"), pattern(64<<10, 1), 0o644))
	ctx := t.Context()
	fh, _, err := env.exp.Lookup(ctx, "f", true)
	require.NoError(t, err)
	c := env.exp.Client
	buf := pattern(4<<10, 2)
	big := make([]byte, 1<<20)
	require.NoError(t, os.WriteFile(env.path("big"), pattern(len(big), 3), 0o644))
	bigFH, _, err := env.exp.Lookup(ctx, "big", true)
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		max      float64
		maxBytes uint64 // heap bytes allocated per call; 0: not bounded
		call     func() error
	}{
		{"WRITE", 7, 0, func() error { _, err := c.Write(ctx, fh, 0, buf, client.FileSync); return err }},
		{"GETATTR", 9, 0, func() error { _, err := c.Getattr(ctx, fh); return err }},
		{"WRITE 1 MiB", 10, 128 << 10, func() error { _, err := c.Write(ctx, bigFH, 0, big, client.Unstable); return err }},
		{"READ 1 MiB", 4, 128 << 10, func() error {
			n, _, err := c.Read(ctx, bigFH, 0, big)
			if err == nil && n != len(big) {
				err = fmt.Errorf("READ returned %d bytes", n)
			}
			return err
		}},
	} {
		require.NoError(t, tc.call()) // warm: the open-file cache, the client's buffers
		var callErr error
		n := testing.AllocsPerRun(200, func() {
			if err := tc.call(); err != nil {
				callErr = err
			}
		})
		require.NoError(t, callErr)
		require.LessOrEqual(t, n, tc.max, "%s: allocations per call", tc.name)
		if tc.maxBytes == 0 {
			t.Logf("%s: %.1f allocations per call", tc.name, n)
			continue
		}
		const runs = 100
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			require.NoError(t, tc.call())
		}
		runtime.ReadMemStats(&after)
		perCall := (after.TotalAlloc - before.TotalAlloc) / runs
		if !raceEnabled { // -race: sync.Pool drops what it is given at random
			require.LessOrEqual(t, perCall, tc.maxBytes, "%s: heap bytes per call", tc.name)
		}
		t.Logf("%s: %.1f allocations, %d bytes per call", tc.name, n, perCall)
	}
}
