package server_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/nfstest"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Issue 29, item 2: no registered memory held for a connection's
// lifetime. The server pulls a large WRITE's data straight into a buffer
// of its pool (Config.CallBuffers), registered through the connection's
// registration cache; a connection must not keep the pooled buffers it
// used registered (pinned, and alive in the Go heap) once idle.
//
// TestServerRegisteredMemoryIdle has 100 connections send a burst of
// WRITEs of 128 KiB to 1 MiB with a handle that names nothing (the data
// is pulled before the handle is looked at), and READs of as much (written
// from the server's pooled reply buffers, WriteMsgDirect), then go idle.
// While the burst runs, the registrations the transport counts stay
// within MemoryLimits.ListenerRegistered and, per connection, within
// MemoryLimits.Registered. Once idle, the transport's count of
// registered buffers falls to zero and the soft provider's count of live
// registered bytes to exactly its baseline (the Receive and Send buffers
// of the connections, registered before the burst), and the Go heap
// returns near its baseline.
func TestServerRegisteredMemoryIdle(t *testing.T) {
	// The pressure on the bounds is that of the calls in flight at once
	// (conns × inFlight of up to 1 MiB: three times ListenerRegistered),
	// reached in the first round; one round has each connection reuse its
	// pooled buffers and cached registrations across 2 × len(sizes) calls.
	conns, rounds := 100, 1
	if testing.Short() {
		conns = 40
	}
	sizes := []int{1 << 20, 512 << 10, 256 << 10, 128 << 10}
	const inFlight = 2 // per connection

	// The soft providers' transport timer off (AckTimeout < 0): it fails
	// a request the peer's goroutines do not answer within 7.5 s, which a
	// host starved of CPU under the race detector makes them miss while
	// they are alive (a NIC answers whatever the host's load). A hang is
	// stallWatch's to catch.
	prov := &soft.Provider{AckTimeout: -1} // the server's only: the clients have their own
	root, h := newTestExport(t)
	require.NoError(t, os.WriteFile(filepath.Join(root, "big"), nfstest.Pattern(1<<20, 1), 0o644))
	var smu sync.Mutex
	var sconns []*transport.Conn
	srv, err := server.New(server.Config{Handler: h, Transport: transport.Config{Provider: prov},
		RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Rpcbind: server.RpcbindConfig{Disable: true},
		OnConn: func(_ string, c net.Conn) {
			if tc, ok := c.(*transport.Conn); ok {
				smu.Lock()
				sconns = append(sconns, tc)
				smu.Unlock()
			}
		}})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, server.ErrClosed)
	})
	maxRPC := transport.DefaultMaxRPCSize
	perConn, perListener := int64(16*maxRPC), int64(64*maxRPC) // MemoryLimits' defaults

	cprov := &soft.Provider{AckTimeout: -1}
	cs := make([]*transport.Conn, conns)
	for i := range cs {
		ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
		c, err := transport.Dial(ctx, srv.RDMAAddr().String(), &transport.Config{Provider: cprov, Binding: nfs.Binding{}, Credits: 8})
		cancel()
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		cs[i] = c
		// A NULL call: the server's side of the connection is up.
		rh, _ := call(t, c, 1, nfs.ProgNFS, 3, nfs.ProcNull, nil)
		require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat)
	}
	big := lookup(t, cs[0], 2, mountRoot(t, srv), "big").Data
	require.Zero(t, srv.ListenerStats().Registered)
	baseline := prov.RegisteredBytes()
	heap0 := heapAfterGC()

	// Sample the transport's and the provider's counts during the burst.
	stop := make(chan struct{})
	var regPeak, connPeak, provPeak atomic.Int64
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if r := srv.ListenerStats().Registered; r > regPeak.Load() {
				regPeak.Store(r)
			}
			smu.Lock()
			for _, c := range sconns {
				if r := c.Stats().Registered; r > connPeak.Load() {
					connPeak.Store(r)
				}
			}
			smu.Unlock()
			if r := prov.RegisteredBytes(); r > provPeak.Load() {
				provPeak.Store(r)
			}
		}
	}()

	fh := make([]byte, 32)
	_, _ = rand.Read(fh)
	var xids atomic.Uint32
	start := time.Now()
	// No deadline per call: on a starved host a call can wait long for
	// its turn at the listener's budget. The burst fails only if no call
	// completes for stallGuard (a hang).
	burstCtx, progress, stalls := stallWatch(t, stallGuard)
	var wg sync.WaitGroup
	var failed atomic.Int64
	var fmu sync.Mutex
	var failures []error
	fail := func(err error) {
		failed.Add(1)
		fmu.Lock()
		defer fmu.Unlock()
		if len(failures) < 5 {
			failures = append(failures, err)
		}
	}
	for _, c := range cs {
		for range inFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					for _, n := range sizes {
						if err := progress(time.Now(), garbageWrite(burstCtx, c, xids.Add(1), fh, n)); err != nil {
							fail(err)
						}
						if err := progress(time.Now(), readFile(burstCtx, c, xids.Add(1), big, n)); err != nil {
							fail(err)
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	burst := time.Since(start)
	require.Zero(t, failed.Load(), "WRITEs without their NFS3ERR reply, READs without their data (after %v); the first: %v",
		time.Since(start).Round(time.Millisecond), failures)
	heapBurst := heapAfterGC()

	require.LessOrEqual(t, regPeak.Load(), perListener, "listener's registered buffers over MemoryLimits.ListenerRegistered")
	require.LessOrEqual(t, connPeak.Load(), perConn, "a connection's registered buffers over MemoryLimits.Registered")
	smu.Lock()
	require.Len(t, sconns, conns)
	var limited, inPlace, direct uint64
	for _, c := range sconns {
		st := c.Stats()
		limited, inPlace, direct = limited+st.RegisterLimited, inPlace+st.ReadChunksInPlace, direct+st.DirectPlacements
	}
	smu.Unlock()
	slowest, gap := stalls()
	t.Logf("slowest call %v, longest interval with no call completed %v (hang guard %v)", slowest.Round(time.Millisecond), gap.Round(time.Millisecond), stallGuard)
	t.Logf("server: %d WRITEs pulled into pooled buffers, %d READs written from them, %d registrations refused by a bound (copied instead)", inPlace, direct, limited)
	// All the provider registered: the baseline, the registered buffers,
	// the chunk data in motion (ListenerCalls and ListenerReplies, 64 ×
	// MaxRPCSize each) and what each connection's pool keeps idle (2 ×
	// MaxRPCSize).
	provBound := baseline + perListener + int64(2*64*maxRPC) + int64(conns*2*maxRPC)
	require.LessOrEqual(t, provPeak.Load(), provBound, "the provider's registered bytes during the burst")

	// Idle: the registrations are released within seconds (two trim
	// periods of the transport); the deadline guards against a hang.
	deadline := time.Now().Add(stallGuard)
	for (srv.ListenerStats().Registered != 0 || prov.RegisteredBytes() != baseline) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	idleAfter := time.Since(start) - burst
	reg, live := srv.ListenerStats().Registered, prov.RegisteredBytes()
	// runtime.GC twice: sync.Pool keeps what it held one collection
	// longer (its victim cache).
	runtime.GC()
	heapIdle := heapAfterGC()
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	t.Logf("%d connections, %d garbage WRITEs and as many READs of %v bytes each in %v: registered by the transport peak %.1f MiB (a connection's %.1f MiB; bounds %.1f MiB a connection, %.1f MiB the listener), by the provider baseline %.1f MiB, peak %.1f MiB; after %v idle %.1f MiB and %.1f MiB; Go heap baseline %.1f MiB, after the burst %.1f MiB, idle %.1f MiB",
		conns, conns*inFlight*rounds*len(sizes), sizes, burst.Round(time.Millisecond), mib(regPeak.Load()), mib(connPeak.Load()), mib(perConn), mib(perListener),
		mib(baseline), mib(provPeak.Load()), idleAfter.Round(time.Millisecond), mib(reg), mib(live), mib(int64(heap0)), mib(int64(heapBurst)), mib(int64(heapIdle)))
	require.Zero(t, reg, "the transport's registered buffers once idle")
	require.Equal(t, baseline, live, "the provider's live registered bytes once idle")
	// The heap: the burst's buffers (the server's pooled call buffers,
	// the clients' messages) are garbage once no registration, cache or
	// stale slice element holds them, and sync.Pool lets the two
	// collections above take them. What is left is bookkeeping that
	// grew with the burst (goroutines' stacks of the workers each
	// connection added, maps of XIDs), bounded by 8 MiB for 100
	// connections.
	require.LessOrEqual(t, int64(heapIdle)-int64(heap0), int64(8<<20), "Go heap once idle, over its baseline")
	for _, c := range cs {
		st := c.Stats()
		require.Zero(t, st.Registered, "the clients' registrations of their WRITE messages once idle")
	}
}

// readFile reads n bytes of the file fh from its start, waiting for the
// reply as long as ctx allows; an error unless they came back with NFS3_OK.
func readFile(ctx context.Context, c *transport.Conn, xid uint32, fh []byte, n int) error {
	sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("reader")}
	h := xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcRead, Cred: sys.OpaqueAuth(nil)}
	msg := (&nfs3.ReadArgs{File: fh, Count: uint32(n)}).Append(h.Append(nil))
	began := time.Now()
	rep, err := c.Call(ctx, msg, nil)
	if err != nil {
		return fmt.Errorf("READ %d bytes (xid %d) after %v: %w", n, xid, time.Since(began).Round(time.Millisecond), err)
	}
	off, err := replyBody(rep, xid)
	if err != nil {
		return fmt.Errorf("READ %d bytes: %w", n, err)
	}
	if st := nfs3.Status(binary.BigEndian.Uint32(rep[off:])); st != nfs3.OK {
		return fmt.Errorf("READ %d bytes (xid %d): status %v", n, xid, st)
	}
	if len(rep) < off+4+n {
		return fmt.Errorf("READ %d bytes (xid %d): reply of %d bytes", n, xid, len(rep))
	}
	return nil
}

// replyBody checks that rep is the accepted reply to the call xid with at
// least an NFS3 status after its header, and returns the status's offset.
func replyBody(rep []byte, xid uint32) (int, error) {
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(rep)
	switch {
	case err != nil:
		return 0, fmt.Errorf("reply to xid %d: %w", xid, err)
	case rh.XID != xid:
		return 0, fmt.Errorf("reply to xid %d names xid %d", xid, rh.XID)
	case rh.AcceptStat != xdr.AcceptSuccess:
		return 0, fmt.Errorf("reply to xid %d: accept stat %v", xid, rh.AcceptStat)
	case len(rep) < off+4:
		return 0, fmt.Errorf("reply to xid %d: %d bytes, no NFS3 status", xid, len(rep))
	}
	return off, nil
}

// heapAfterGC returns the Go heap in use after a collection.
func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// garbageWrite sends a WRITE of n bytes to the handle fh, which names
// nothing, waiting for the reply as long as ctx allows; an error unless it
// was answered with an NFS3 error.
func garbageWrite(ctx context.Context, c *transport.Conn, xid uint32, fh []byte, n int) error {
	sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("garbage")}
	h := xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcWrite, Cred: sys.OpaqueAuth(nil)}
	msg := (&nfs3.WriteArgs{File: fh, Count: uint32(n), Stable: nfs3.Unstable, Data: make([]byte, n)}).Append(h.Append(nil))
	began := time.Now()
	rep, err := c.Call(ctx, msg, nil)
	if err != nil {
		return fmt.Errorf("WRITE %d bytes (xid %d) after %v: %w", n, xid, time.Since(began).Round(time.Millisecond), err)
	}
	off, err := replyBody(rep, xid)
	if err != nil {
		return fmt.Errorf("WRITE %d bytes: %w", n, err)
	}
	if st := nfs3.Status(binary.BigEndian.Uint32(rep[off:])); st == nfs3.OK {
		return fmt.Errorf("WRITE %d bytes (xid %d) to a handle naming nothing: NFS3_OK", n, xid)
	}
	return nil
}

// stallGuard is how long a burst of calls may go without any call
// completing before stallWatch declares it hung.
const stallGuard = 2 * time.Minute

// stallWatch guards a burst of calls against a hang rather than against
// slowness: the context it returns is cancelled once guard passes with no
// call completed, or when the test ends. progress is called with each
// call's start and result once it completes, and returns the result
// (naming the hang if there was one); stalls reports the slowest call and
// the longest interval between completions.
func stallWatch(t *testing.T, guard time.Duration) (ctx context.Context, progress func(time.Time, error) error, stalls func() (slowest, gap time.Duration)) {
	ctx, cancel := context.WithCancelCause(context.Background())
	var last, longestGap, longestCall atomic.Int64 // UnixNano of the last completion; nanoseconds
	last.Store(time.Now().UnixNano())
	raise := func(v *atomic.Int64, n int64) {
		for l := v.Load(); n > l && !v.CompareAndSwap(l, n); l = v.Load() {
		}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(guard / 20)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if idle := time.Duration(time.Now().UnixNano() - last.Load()); idle > guard {
					cancel(fmt.Errorf("no call completed for %v: %w", idle.Round(time.Second), context.DeadlineExceeded))
					return
				}
			}
		}
	}()
	t.Cleanup(func() { close(done); cancel(context.Canceled) })
	progress = func(began time.Time, err error) error {
		now := time.Now()
		raise(&longestGap, now.UnixNano()-last.Swap(now.UnixNano()))
		raise(&longestCall, int64(now.Sub(began)))
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		return err
	}
	return ctx, progress, func() (time.Duration, time.Duration) {
		return time.Duration(longestCall.Load()), time.Duration(longestGap.Load())
	}
}
