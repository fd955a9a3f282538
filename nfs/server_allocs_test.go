package nfs_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
)

// TestServerCallAllocs bounds the heap allocations of a whole call, Go
// client and server together over the soft provider, for the calls the
// dispatch layer answers itself: a 4 KiB FILE_SYNC WRITE (8 today; 9
// before the duplicate request cache's LRU list was made intrusive, 10
// before the session's workers kept their call buffer, 17 before the
// attributes were built from the stat result in one allocation and replies
// were given room for their results) and a GETATTR (7; 8; 13). The bounds
// leave room for a stray allocation of a background goroutine.
func TestServerCallAllocs(t *testing.T) {
	env := startClientEnv(t, nil)
	require.NoError(t, os.WriteFile(env.path("f"), pattern(64<<10, 1), 0o644))
	ctx := t.Context()
	fh, _, err := env.exp.Lookup(ctx, "f", true)
	require.NoError(t, err)
	c := env.exp.Client
	buf := pattern(4<<10, 2)
	for _, tc := range []struct {
		name string
		max  float64
		call func() error
	}{
		{"WRITE", 10, func() error { _, err := c.Write(ctx, fh, 0, buf, nfs.FileSync); return err }},
		{"GETATTR", 9, func() error { _, err := c.Getattr(ctx, fh); return err }},
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
		t.Logf("%s: %.1f allocations per call", tc.name, n)
	}
}
