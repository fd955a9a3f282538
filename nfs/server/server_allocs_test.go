package server_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestServerCallAllocs bounds the heap allocations of a whole call, Go
// client and server together over the soft provider, for the calls of a
// client's everyday work: a 4 KiB FILE_SYNC WRITE, a GETATTR (the
// client's *Attr only: the server's side allocates nothing,
// TestServerCallsAllocNothing), a 1 MiB READ and a 1 MiB UNSTABLE WRITE,
// whose pooled 1 MiB buffers a collection may empty now and then (the
// bytes are not bounded under -race, where sync.Pool drops buffers on
// purpose, and allocates more). The bounds leave room for a stray
// allocation of a background goroutine.
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
		{"GETATTR", 2, 0, func() error { _, err := c.Getattr(ctx, fh); return err }},
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

// TestServerCallsAllocNothing: the server's side of the calls a client
// makes most, NULL, GETATTR and READ (1 KiB, inline; 4 KiB, through a Write
// chunk), allocates nothing once warm, for root kept and for a caller
// whose calls run as that caller (a user; root squashed). The calls are
// made through the client's transport.Conn with buffers reused, which
// allocates nothing itself (transport's BenchmarkCall), so every
// allocation counted is the server's (or a stray one of a background
// goroutine: the bound is a tenth of an allocation per call).
func TestServerCallsAllocNothing(t *testing.T) {
	for _, who := range []struct {
		name     string
		squash   server.Squash
		uid, gid uint32
	}{
		{"root", server.NoRootSquash, 0, 0},
		{"user", server.RootSquash, 1234, 1234},
		{"squashed-root", server.RootSquash, 0, 0},
	} {
		t.Run(who.name, func(t *testing.T) {
			env := startClientEnv(t, func(sc *server.Config, _ *client.MountOptions) {
				sc.Squash, sc.AnonUID, sc.AnonGID = who.squash, 65534, 65534
			})
			_, fh := env.patternFile(t, "f", 8<<10, 1)
			conn := env.exp.Client.Conn()
			ctx := callCtx(t)
			cred := (&xdr.AuthSys{UID: who.uid, GID: who.gid, GIDs: []uint32{who.gid}}).OpaqueAuth(nil)
			msg := make([]byte, 0, 512)
			reply := make([]byte, 0, 16<<10)
			xid := uint32(1)
			call := func(proc uint32, args func([]byte) []byte) func() error {
				return func() error {
					xid++
					h := xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: proc, Cred: cred}
					msg = args(h.Append(msg[:0]))
					var err error
					if reply, err = conn.Call(ctx, msg, reply[:0]); err != nil {
						return err
					}
					var rh xdr.ReplyHeader
					off, err := rh.Unmarshal(reply)
					switch {
					case err != nil:
						return err
					case rh.Stat != xdr.MsgAccepted || rh.AcceptStat != xdr.AcceptSuccess:
						return fmt.Errorf("%s: reply %v %v", nfs.ProcName(nfs.ProgNFS, 3, proc), rh.Stat, rh.AcceptStat)
					case proc != nfs.ProcNull && (len(reply) < off+4 || binary.BigEndian.Uint32(reply[off:]) != 0):
						return fmt.Errorf("%s: not NFS3_OK", nfs.ProcName(nfs.ProgNFS, 3, proc))
					}
					return nil
				}
			}
			read := func(n uint32) func([]byte) []byte {
				return func(b []byte) []byte { return (&nfs3.ReadArgs{File: fh, Count: n}).Append(b) }
			}
			for _, tc := range []struct {
				name string
				call func() error
			}{
				{"NULL", call(nfs.ProcNull, func(b []byte) []byte { return b })},
				{"GETATTR", call(nfs.ProcGetattr, func(b []byte) []byte { return (&nfs3.GetattrArgs{Object: fh}).Append(b) })},
				{"READ 1 KiB", call(nfs.ProcRead, read(1<<10))},
				{"READ 4 KiB", call(nfs.ProcRead, read(4<<10))},
			} {
				for range 10 { // warm: the open-file cache, the pools, the workers
					require.NoError(t, tc.call(), tc.name)
				}
				var callErr error
				n := testing.AllocsPerRun(500, func() {
					if err := tc.call(); err != nil {
						callErr = err
					}
				})
				require.NoError(t, callErr, tc.name)
				require.LessOrEqual(t, n, 0.1, "%s: allocations per call", tc.name)
			}
		})
	}
}
