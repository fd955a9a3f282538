package server_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestServerConcurrentReads: READs of many sizes at once, from several
// goroutines over one connection, each checked against the file. The
// server builds READ replies in pooled buffers and gives each back once
// the transport is done with it (over RDMA the data of the large ones is
// written to the client's Write chunk from the buffer itself,
// WriteMsgDirect); a buffer given back before its reply left shows here
// as another READ's data.
func TestServerConcurrentReads(t *testing.T) {
	env := startClientEnv(t, nil)
	const size = 1 << 20
	data, fh := env.patternFile(t, "f", size, 7)
	ctx := callCtx(t)
	c := env.exp.Client
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			buf := make([]byte, 256<<10)
			for range 120 {
				n := 1 + rng.IntN(len(buf))
				if rng.IntN(2) == 0 {
					n = 1 + rng.IntN(8<<10) // small: inline replies
				}
				off := rng.IntN(size)
				got, _, err := c.Read(ctx, fh, uint64(off), buf[:n])
				if err != nil {
					errs <- err
					return
				}
				want := data[off:min(off+n, size)]
				if got != len(want) || !bytes.Equal(buf[:got], want) {
					errs <- fmt.Errorf("READ of %d bytes at %d: %d bytes, not the file's", n, off, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestServerReadsDirect: over RDMA, the data of a READ of at least
// transport.DefaultDirectPlacementMin goes to the client's Write chunk
// straight from the pooled reply buffer it was read into (the server's
// connection counts a DirectPlacement per READ, and registers few
// buffers: the pool's, cached; under -race, where sync.Pool drops buffers
// on purpose, fewer than one per READ), while a 4 KiB READ's data is
// copied; every READ returns the file's bytes.
func TestServerReadsDirect(t *testing.T) {
	const size = 256 << 10
	env, data, fh, stats := startDirectEnv(t, "f", size, 9)
	ctx := callCtx(t)
	before := stats()
	buf := make([]byte, 64<<10)
	const reads = 20
	for i := range reads {
		off := (i * 12345) % (size - len(buf))
		n, _, err := env.exp.Client.Read(ctx, fh, uint64(off), buf)
		require.NoError(t, err)
		require.Equal(t, len(buf), n)
		require.True(t, bytes.Equal(data[off:off+n], buf), "READ %d: the file's bytes", i)
	}
	st := stats()
	require.Equal(t, uint64(reads), st.DirectPlacements-before.DirectPlacements, "64 KiB READs written from their reply buffers")
	requirePoolRegistrations(t, st.DirectRegistrations-before.DirectRegistrations, reads)
	require.Zero(t, st.DirectPlacementErrors)

	before = st
	small := buf[:4<<10]
	n, _, err := env.exp.Client.Read(ctx, fh, 100, small)
	require.NoError(t, err)
	require.True(t, bytes.Equal(data[100:100+n], small[:n]))
	require.Zero(t, stats().DirectPlacements-before.DirectPlacements, "a 4 KiB READ's data is copied")
}

// serverConnStats has cfg record the server's RDMA connections and returns
// what reads the Stats of the one connection a test makes.
func serverConnStats(t *testing.T, cfg *server.Config) func() transport.Stats {
	var mu sync.Mutex
	var conns []*transport.Conn
	cfg.OnConn = func(network string, c net.Conn) {
		if tc, ok := c.(*transport.Conn); ok {
			mu.Lock()
			conns = append(conns, tc)
			mu.Unlock()
		}
	}
	return func() transport.Stats {
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, conns, 1, "one RDMA connection")
		return conns[0].Stats()
	}
}

// startDirectEnv starts a server and a client over RDMA with a pattern
// file of size bytes (seed), and returns the file's bytes and handle and
// what reads the server connection's Stats.
func startDirectEnv(t *testing.T, name string, size int, seed byte) (*clientEnv, []byte, client.FH, func() transport.Stats) {
	var stats func() transport.Stats
	env := startClientEnv(t, func(cfg *server.Config, _ *client.MountOptions) { stats = serverConnStats(t, cfg) })
	data, fh := env.patternFile(t, name, size, seed)
	return env, data, fh, stats
}

// requirePoolRegistrations checks that n calls through the server's pooled
// buffers registered few of them: the pool's, once each, then cached.
// sync.Pool drops a quarter of what it is given under -race, so some calls
// then get a new buffer, registered anew.
func requirePoolRegistrations(t *testing.T, regs uint64, n int) {
	t.Helper()
	if raceEnabled {
		require.Less(t, regs, uint64(n), "pooled buffers registered once, then cached")
	} else {
		require.LessOrEqual(t, regs, uint64(4), "pooled buffers registered once, then cached")
	}
}

// TestServerWritesPulledDirect: over RDMA, the data of a WRITE of at least
// transport.DefaultDirectPlacementMin is pulled by the server's RDMA Reads
// straight into a pooled buffer (transport.Config.CallBuffers: the server
// counts ReadChunksInPlace, and registers few buffers), which the WRITE
// is executed from; a 4 KiB WRITE is not; the file holds every WRITE's
// bytes.
func TestServerWritesPulledDirect(t *testing.T) {
	const size = 512 << 10
	env, want, fh, stats := startDirectEnv(t, "w", size, 1)
	ctx := callCtx(t)
	before := stats()
	const writes = 20
	for i := range writes {
		data := pattern(64<<10+i, byte(i+2)) // lengths with and without XDR pads
		off := (i * 23456) % (size - len(data))
		res, err := env.exp.Client.Write(ctx, fh, uint64(off), data, client.FileSync)
		require.NoError(t, err)
		require.EqualValues(t, len(data), res.Count)
		copy(want[off:], data)
	}
	st := stats()
	require.Equal(t, uint64(writes), st.ReadChunksInPlace-before.ReadChunksInPlace, "64 KiB WRITEs pulled into pooled buffers")
	requirePoolRegistrations(t, st.DirectRegistrations-before.DirectRegistrations, writes)
	require.Zero(t, st.DirectPlacementErrors)

	before = st
	small := pattern(4<<10, 99)
	_, err := env.exp.Client.Write(ctx, fh, 100, small, client.FileSync)
	require.NoError(t, err)
	copy(want[100:], small)
	require.Zero(t, stats().ReadChunksInPlace-before.ReadChunksInPlace, "a 4 KiB WRITE is not pulled into a pooled buffer")
	got, err := os.ReadFile(env.path("w"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the file holds every WRITE's bytes")
}

// TestServerPipelinedReadsOverTCP: 64 READs of many sizes written at once
// on one TCP connection, executed by the session's workers at once, their
// replies (from pooled buffers) written concurrently into the one stream,
// those of 4 KiB or more by writev behind their record mark: every reply
// arrives whole, as its own record, with the file's bytes.
func TestServerPipelinedReadsOverTCP(t *testing.T) {
	env := startClientEnv(t, func(c *server.Config, _ *client.MountOptions) { c.NFSOverTCP = true })
	const size = 1 << 20
	data := pattern(size, 9)
	require.NoError(t, os.WriteFile(env.path("f"), data, 0o644))
	fh, _, err := env.exp.Lookup(callCtx(t), "f", true)
	require.NoError(t, err)
	tc := dialTCP(t, env.srv.TCPAddr())
	rng := rand.New(rand.NewPCG(3, 4))
	type want struct{ off, n int }
	wants := map[uint32]want{}
	sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("client")}
	for i := range 64 {
		w := want{off: rng.IntN(size), n: 1 + rng.IntN(200<<10)}
		if i%2 == 0 {
			w.n = 1 + rng.IntN(2<<10)
		}
		xid := uint32(100 + i)
		wants[xid] = w
		h := xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcRead, Cred: sys.OpaqueAuth(nil)}
		args := encode(t, &nfsv3.Read3args{File: nfsv3.NfsFh3{Data: fh}, Offset: uint64(w.off), Count: uint32(w.n)})
		require.NoError(t, tc.WriteMsg(append(h.Append(nil), args...)))
	}
	for range 64 {
		rep, err := tc.ReadMsg(nil)
		require.NoError(t, err)
		var rh xdr.ReplyHeader
		off, err := rh.Unmarshal(rep)
		require.NoError(t, err)
		w, ok := wants[rh.XID]
		require.True(t, ok, "reply to xid %d: not asked, or answered twice", rh.XID)
		delete(wants, rh.XID)
		require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
		r := xdr.NewReader(rep[off:])
		status, _ := r.Uint32()
		require.Zero(t, status, "READ status")
		if present, _ := r.Bool(); present {
			require.NoError(t, r.Skip(84)) // fattr3
		}
		_, _ = r.Uint32() // count
		_, _ = r.Bool()   // eof
		got, err := r.Opaque(size)
		require.NoError(t, err)
		require.Equal(t, data[w.off:min(w.off+w.n, size)], got, "READ xid %d of %d bytes at %d", rh.XID, w.n, w.off)
	}
}

// TestServerConcurrentWrites: 8 goroutines WRITE at once over one RDMA
// connection, each to its own region of a file, 16 B to 256 KiB a call
// (large calls are read into pooled buffers and go back to the pool after
// their WRITE), every call's data its own: the file ends as each region's
// last writes say. A call buffer given back before its WRITE was done
// with would let another call's bytes into the file.
func TestServerConcurrentWrites(t *testing.T) {
	env := startClientEnv(t, nil)
	const region, writers = 512 << 10, 8
	require.NoError(t, os.WriteFile(env.path("w"), nil, 0o644))
	ctx := callCtx(t)
	fh, _, err := env.exp.Lookup(ctx, "w", true)
	require.NoError(t, err)
	c := env.exp.Client
	model := make([]byte, region*writers)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			mine := model[g*region : (g+1)*region]
			for i := range 60 {
				n := 16 + rng.IntN(256<<10)
				if rng.IntN(3) == 0 {
					n = 16 + rng.IntN(4<<10) // small: a kept buffer, inline
				}
				off := rng.IntN(region - n)
				data := pattern(n, byte(g*61+i))
				if _, err := c.Write(ctx, fh, uint64(g*region+off), data, client.Unstable); err != nil {
					errs <- err
					return
				}
				copy(mine[off:], data)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := os.ReadFile(env.path("w"))
	require.NoError(t, err)
	got = append(got, make([]byte, max(0, len(model)-len(got)))...)
	for g := range writers {
		if a, b := got[g*region:(g+1)*region], model[g*region:(g+1)*region]; !bytes.Equal(a, b) {
			i := 0
			for a[i] == b[i] {
				i++
			}
			t.Errorf("region %d differs from its writes at byte %d", g, i)
		}
	}
}
