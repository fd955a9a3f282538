//go:build e2eguest

// The tests in this file run inside the VM (e2e/rdmacore_test.go boots it),
// over rxe1 (10.0.0.2, the client) and rxe0 (10.0.0.1, the server).

package rdmacore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/verbstest"
)

// Addresses of the VM's two Soft-RoCE devices. Policy routing sends
// traffic from the client's address to the server's across the veth pair.
const (
	clientIP = "10.0.0.2"
	serverIP = "10.0.0.1"
)

// listenAddr is where the benchmarks' server listens: the server's rxe
// address, or loopback while soft is measured for comparison.
var listenAddr = serverIP + ":0"

// benchSoft, set by the Soft benchmarks, makes providers return the
// software provider, so that its numbers come from the same VM, in the same
// run, as rdmacore's and perftest's.
var benchSoft bool

// providers returns a client provider bound to the client's address and a
// server provider.
func providers() (client, server verbs.Provider) {
	if benchSoft {
		return &soft.Provider{}, &soft.Provider{}
	}
	return &rdmacore.Provider{LocalAddr: clientIP}, &rdmacore.Provider{}
}

// withSoft runs a benchmark body with the software provider over the
// guest's loopback.
func withSoft(b *testing.B, body func(*testing.B)) {
	benchSoft, listenAddr = true, "127.0.0.1:0"
	defer func() { benchSoft, listenAddr = false, serverIP+":0" }()
	body(b)
}

// BenchmarkSoftSendRecvPingPong and BenchmarkSoftRDMAWrite64K measure the
// software provider with the same code as rdmacore's benchmarks.
func BenchmarkSoftSendRecvPingPong(b *testing.B) {
	withSoft(b, func(b *testing.B) { benchPingPong(b, 64, false) })
}

func BenchmarkSoftRDMAWrite64K(b *testing.B) { withSoft(b, BenchmarkRDMAWrite64K) }

// rxeQuirks are rxe's departures from the InfiniBand Architecture that
// the suite checks (see verbstest.Quirks).
var rxeQuirks = verbstest.Quirks{WindowBoundsUnchecked: true, OverlongSendRemoteOpError: true}

// TestConformance runs the verbs conformance suite over rxe.
func TestConformance(t *testing.T) {
	client, server := providers()
	verbstest.Run(t, func(*testing.T) verbstest.Env {
		return verbstest.Env{Client: client, Server: server, ListenAddr: listenAddr, Quirks: rxeQuirks}
	})
}

// pair is an established connection with a region on each side.
type pair struct {
	client, server   verbs.Conn
	cregion, sregion verbs.Region
}

// dialPair connects the client provider to a listener of the server
// provider; each side allocates size bytes and posts n Receives of
// recvSize bytes at the start of its region.
func dialPair(tb testing.TB, ctx context.Context, client verbs.Provider, ln verbs.Listener, caps verbs.QueueCaps, size, n, recvSize int) pair {
	tb.Helper()
	var p pair
	setup := func(r *verbs.Region) func(verbs.Conn) error {
		return func(c verbs.Conn) error {
			reg, err := c.AllocRegion(size)
			if err != nil {
				return err
			}
			*r = reg
			for i := range n {
				if err := c.PostRecv([]verbs.RecvRequest{{ID: uint64(i), SGL: []verbs.SGE{{Region: reg, Offset: i * recvSize, Length: recvSize}}}}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			p.server, err = req.Accept(ctx, &verbs.ConnOptions{Caps: caps, Setup: setup(&p.sregion)})
		}
		accepted <- err
	}()
	var err error
	p.client, err = client.Dial(ctx, ln.Addr().String(), &verbs.ConnOptions{Caps: caps, Setup: setup(&p.cregion)})
	require.NoError(tb, err, "dial")
	require.NoError(tb, <-accepted, "accept")
	tb.Cleanup(func() {
		_ = p.client.Close()
		_ = p.server.Close()
	})
	return p
}

// osThreads returns the number of threads of the process.
func osThreads(tb testing.TB) int {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(tb, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			require.NoError(tb, err)
			return n
		}
	}
	tb.Fatal("no Threads: line in /proc/self/status")
	return 0
}

// parked counts the goroutines that are parked on the netpoller ("IO
// wait") with fn on their stack.
func parked(fn string) int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte(" [IO wait")) && bytes.Contains(g, []byte(fn)) {
			n++
		}
	}
	return n
}

// waitAll starts a Wait on every connection and returns once all of them
// are parked on the netpoller; cancel ends them, and the returned function
// checks that every Wait returned context.Canceled.
func waitAll(t *testing.T, conns []verbs.Conn) (cancel func(), done func()) {
	t.Helper()
	ctx, cancelCtx := context.WithCancel(context.Background())
	errs := make(chan error, len(conns))
	for _, c := range conns {
		go func() { errs <- c.Wait(ctx) }()
	}
	deadline := time.Now().Add(30 * time.Second)
	for parked("rdmacore.(*conn).Wait") < len(conns) {
		if time.Now().After(deadline) {
			cancelCtx()
			t.Fatalf("only %d of %d Waits parked on the netpoller", parked("rdmacore.(*conn).Wait"), len(conns))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cancelCtx, func() {
		for range conns {
			require.ErrorIs(t, <-errs, context.Canceled)
		}
	}
}

// TestIdleConnectionsParkOnNetpoller opens 64 connections (128 queue
// pairs, both sides in this process) and waits for completions on every
// one: each waiting goroutine parks on the Go netpoller (the completion
// channel's fd), so that the process has hardly more OS threads with 128
// waiters than before (at most 8 more: the runtime may start a thread
// while the 64 connections are dialled on a busy host, when a cgo call
// blocks; 128 waiters blocked in the kernel would take 128); the
// providers' event channel goroutines are parked there too.
func TestIdleConnectionsParkOnNetpoller(t *testing.T) {
	const conns = 64
	client, server := providers()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := server.Listen(listenAddr)
	require.NoError(t, err)
	defer ln.Close()
	caps := verbs.QueueCaps{SendQueue: 4, RecvQueue: 4, MaxSGE: 1, ReadDepth: 1}

	// One connection and one round of Waits first, so that whatever the
	// runtime starts for cgo calls and the netpoller exists before the
	// count.
	warm := dialPair(t, ctx, client, ln, caps, 4096, 1, 64)
	stop, done := waitAll(t, []verbs.Conn{warm.client, warm.server})
	stop()
	done()
	before := osThreads(t)

	all := make([]verbs.Conn, 0, 2*conns)
	for range conns {
		p := dialPair(t, ctx, client, ln, caps, 4096, 1, 64)
		all = append(all, p.client, p.server)
	}
	stop, done = waitAll(t, all)
	during := osThreads(t)
	eventLoops := parked("rdmacore.(*eventChannel).loop")
	stop()
	done()
	t.Logf("OS threads: %d before, %d with %d connections and %d goroutines in Wait (GOMAXPROCS %d)",
		before, during, conns, len(all), runtime.GOMAXPROCS(0))
	require.LessOrEqual(t, during, before+8, "OS threads with %d parked Waits", len(all))
	require.Equal(t, 2, eventLoops, "one event channel goroutine per provider, parked on the netpoller")

	// The connections still work after all that waiting.
	for i := 0; i < len(all); i += 2 {
		require.NoError(t, all[i].Err())
		require.NoError(t, all[i+1].Err())
	}
}

// errNoRecv: pumpUntilRecv ran out of completions to look at.
var errNoRecv = errors.New("no Receive completion")

// pumpUntilRecv polls c (waiting on the netpoller, or spinning if spin)
// until a Receive completes, and returns its byte count.
func pumpUntilRecv(ctx context.Context, c verbs.Conn, cs []verbs.Completion, spin bool) (int, error) {
	for {
		n, err := c.Poll(cs)
		if err != nil {
			return 0, err
		}
		got := -1
		for i := range cs[:n] {
			if err := cs[i].Err(); err != nil {
				return 0, err
			}
			if cs[i].Op == verbs.OpRecv {
				got = cs[i].ByteLen
			}
		}
		if got >= 0 {
			return got, nil
		}
		if n > 0 {
			continue
		}
		if spin {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			continue
		}
		if err := c.Wait(ctx); err != nil {
			return 0, err
		}
	}
}

// pingPonger runs round trips of size-byte messages between the two sides
// of a connection: the server side echoes every message from a goroutine.
type pingPonger struct {
	p         pair
	size      int
	spin      bool
	delay     atomic.Int64 // nanoseconds the echo waits before it answers
	ctx       context.Context
	cancel    context.CancelFunc
	serverErr chan error
	cs        []verbs.Completion
	recv      []verbs.RecvRequest
	send      []verbs.WorkRequest
}

func newPingPonger(tb testing.TB, size int, spin bool) *pingPonger {
	client, server := providers()
	return newPingPongerOn(tb, client, server, size, spin)
}

// newPingPongerOn is newPingPonger with the two sides' providers.
func newPingPongerOn(tb testing.TB, client, server verbs.Provider, size int, spin bool) *pingPonger {
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := server.Listen(listenAddr)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = ln.Close() })
	caps := verbs.QueueCaps{SendQueue: 16, RecvQueue: 4, MaxSGE: 1, ReadDepth: 1}
	pp := &pingPonger{
		p:         dialPair(tb, ctx, client, ln, caps, 2*size, 1, size),
		size:      size,
		spin:      spin,
		ctx:       ctx,
		cancel:    cancel,
		serverErr: make(chan error, 1),
		cs:        make([]verbs.Completion, 8),
	}
	pp.recv = []verbs.RecvRequest{{SGL: []verbs.SGE{{Region: pp.p.cregion, Length: size}}}}
	pp.send = []verbs.WorkRequest{{Op: verbs.OpSend, SGL: []verbs.SGE{{Region: pp.p.cregion, Offset: size, Length: size}}}}
	go func() { pp.serverErr <- pp.echo() }()
	tb.Cleanup(func() {
		cancel()
		if err := <-pp.serverErr; !errors.Is(err, context.Canceled) {
			tb.Errorf("echo: %v", err)
		}
	})
	return pp
}

// echo returns every message to the client.
func (pp *pingPonger) echo() error {
	c, r := pp.p.server, pp.p.sregion
	cs := make([]verbs.Completion, 8)
	recv := []verbs.RecvRequest{{SGL: []verbs.SGE{{Region: r, Length: pp.size}}}}
	send := []verbs.WorkRequest{{Op: verbs.OpSend, SGL: []verbs.SGE{{Region: r, Offset: pp.size, Length: pp.size}}}}
	for {
		if _, err := pumpUntilRecv(pp.ctx, c, cs, pp.spin); err != nil {
			return err
		}
		if d := pp.delay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		if err := c.PostRecv(recv); err != nil {
			return err
		}
		if err := c.PostSend(send); err != nil {
			return err
		}
	}
}

// roundTrip sends one message and waits for its echo.
func (pp *pingPonger) roundTrip() error {
	c := pp.p.client
	if err := c.PostSend(pp.send); err != nil {
		return err
	}
	n, err := pumpUntilRecv(pp.ctx, c, pp.cs, pp.spin)
	if err != nil {
		return err
	}
	if n != pp.size {
		return errNoRecv
	}
	return c.PostRecv(pp.recv)
}

// benchPingPong bounces a size-byte message between the two sides b.N
// times: ns/op is the mean round trip; usec-typical and usec-avg are the
// median and the mean of half the round trip, what ib_send_lat reports as
// t_typical and t_avg (under TCG the mean follows a tail of stalls of the
// emulator on a shared host).
func benchPingPong(b *testing.B, size int, spin bool) {
	pp := newPingPonger(b, size, spin)
	rtt := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if err := pp.roundTrip(); err != nil {
			b.Fatal(err)
		}
		rtt[i] = time.Since(start)
	}
	b.StopTimer()
	slices.Sort(rtt)
	b.ReportMetric(float64(rtt[len(rtt)/2].Nanoseconds())/2/1000, "usec-typical")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2/1000, "usec-avg")
}

// BenchmarkSendRecvPingPong: 64-byte Send/Receive round trips, waiting for
// completions on the netpoller (the provider's normal mode), and busy
// polling (as ib_send_lat does by default).
func BenchmarkSendRecvPingPong(b *testing.B) {
	b.Run("Wait", func(b *testing.B) { benchPingPong(b, 64, false) })
	b.Run("BusyPoll", func(b *testing.B) { benchPingPong(b, 64, true) })
}

// TestPollFirstYieldsThread: a Wait that polls before it parks yields its
// OS thread between polls (sched_yield), not only its goroutine, and
// takes the completion that arrives while it polls.
func TestPollFirstYieldsThread(t *testing.T) {
	var yields atomic.Int64
	restore := rdmacore.SetYieldThread(func() { yields.Add(1) })
	defer restore()
	ctx, p := oneSendPair(t, &rdmacore.Provider{LocalAddr: clientIP, PollBeforeWait: 30 * time.Second})
	defer func() { _ = p.client.Close() }() // before restore
	sent := sendLater(p)
	start := time.Now()
	require.NoError(t, p.client.Wait(ctx))
	waited := time.Since(start)
	requireOneRecv(t, p, sent)
	require.Less(t, waited, 20*time.Second, "the Send arrived while Wait polled")
	require.Positive(t, yields.Load(), "sched_yield calls while polling")
}

// TestWaitArmsOnlyToSleep: a Wait that sleeps arms the completion queue
// once, before it sleeps; woken by the completion's event, it finds the
// completion without arming again (ibv_req_notify_cq is a system call on
// rxe). No spin, so that the Wait sleeps at once.
func TestWaitArmsOnlyToSleep(t *testing.T) {
	ctx, p := oneSendPair(t, &rdmacore.Provider{LocalAddr: clientIP, PollBeforeWait: -1})
	defer func() { _ = p.client.Close() }()
	before := rdmacore.Arms(p.client)
	sent := sendLater(p)
	require.NoError(t, p.client.Wait(ctx))
	requireOneRecv(t, p, sent)
	require.Equal(t, 1, rdmacore.Arms(p.client)-before, "arms of a Wait that slept once")
}

// oneSendPair dials a pair whose client, of the client provider, has one
// Receive posted; the caller closes the client. The listener and the
// context (a minute) end with the test.
func oneSendPair(t *testing.T, client *rdmacore.Provider) (context.Context, pair) {
	t.Helper()
	_, server := providers()
	ln, err := server.Listen(listenAddr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	caps := verbs.QueueCaps{SendQueue: 4, RecvQueue: 4, MaxSGE: 1, ReadDepth: 1}
	return ctx, dialPair(t, ctx, client, ln, caps, 128, 1, 64)
}

// sendLater has p's server Send once, 50 ms from now: time for the
// client's Wait to start. The post's error comes on the channel.
func sendLater(p pair) <-chan error {
	sent := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		sent <- p.server.PostSend([]verbs.WorkRequest{{Op: verbs.OpSend, SGL: []verbs.SGE{{Region: p.sregion, Offset: 64, Length: 64}}}})
	}()
	return sent
}

// requireOneRecv checks that the Send of sendLater was posted and that
// p's client polls exactly its Receive.
func requireOneRecv(t *testing.T, p pair, sent <-chan error) {
	t.Helper()
	require.NoError(t, <-sent)
	cs := make([]verbs.Completion, 4)
	n, err := p.client.Poll(cs)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, verbs.OpRecv, cs[0].Op)
}

// TestRoundTripAllocs: posting, polling and waiting allocate nothing, on
// both sides (the echoing side runs during the measurement too).
func TestRoundTripAllocs(t *testing.T) {
	pp := newPingPonger(t, 64, false)
	for range 10 { // the first Wait with a context registers its watch
		require.NoError(t, pp.roundTrip())
	}
	var err error
	allocs := testing.AllocsPerRun(200, func() {
		if e := pp.roundTrip(); e != nil {
			err = e
		}
	})
	require.NoError(t, err)
	require.Zero(t, allocs, "allocations per round trip")
}

// BenchmarkRDMAWrite64K: 64 KiB RDMA Writes into a window, 128 in flight
// (ib_write_bw's default), completions polled in batches and waited for
// on the netpoller.
func BenchmarkRDMAWrite64K(b *testing.B) {
	const size, depth = 64 << 10, 128
	client, server := providers()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := server.Listen(listenAddr)
	require.NoError(b, err)
	defer ln.Close()
	caps := verbs.QueueCaps{SendQueue: 2 * depth, RecvQueue: 4, MaxSGE: 1, ReadDepth: 1}
	p := dialPair(b, ctx, client, ln, caps, size, 0, 0)
	win, err := p.server.AllocWindow()
	require.NoError(b, err)
	require.NoError(b, p.server.PostSend([]verbs.WorkRequest{{Op: verbs.OpBindWindow, Window: win,
		Bind: verbs.SGE{Region: p.sregion, Length: size}, Access: verbs.AccessRemoteWrite}}))
	var one [1]verbs.Completion
	_, err = pumpUntilBind(ctx, p.server, one[:])
	require.NoError(b, err)

	wr := []verbs.WorkRequest{{Op: verbs.OpRDMAWrite, SGL: []verbs.SGE{{Region: p.cregion, Length: size}},
		RemoteAddr: p.sregion.Addr(0), RKey: win.RKey()}}
	cs := make([]verbs.Completion, 32)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	posted, completed := 0, 0
	for completed < b.N {
		for posted < b.N && posted-completed < depth {
			if err := p.client.PostSend(wr); err != nil {
				b.Fatal(err)
			}
			posted++
		}
		n, err := p.client.Poll(cs)
		if err != nil {
			b.Fatal(err)
		}
		for i := range cs[:n] {
			if err := cs[i].Err(); err != nil {
				b.Fatal(err)
			}
		}
		completed += n
		if n == 0 {
			if err := p.client.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// pumpUntilBind waits for one completion and checks that it is a
// successful bind.
func pumpUntilBind(ctx context.Context, c verbs.Conn, cs []verbs.Completion) (verbs.Completion, error) {
	for {
		n, err := c.Poll(cs[:1])
		if err != nil {
			return verbs.Completion{}, err
		}
		if n == 1 {
			if cs[0].Op != verbs.OpBindWindow {
				return cs[0], fmt.Errorf("completion %v, want a bind", cs[0].Op)
			}
			return cs[0], cs[0].Err()
		}
		if err := c.Wait(ctx); err != nil {
			return verbs.Completion{}, err
		}
	}
}

// TestWaitSpinAdapts checks that Wait's polling follows the connection's
// recent waits (spinPolicy): answers that come 5 ms after the call make
// the requester's Wait poll longer than PollBeforeWait; answers 600 ms
// late make it poll for PollBeforeWait only (the median wait is then over
// PollBeforeWaitMax, 200 ms here); 5 ms again bring the long polls back.
// Each round trip waits for its answer and at most once for its Send's
// completion, so at least half of the last 8 waits are answers and their
// median at least half an answer's delay. PollBeforeWaitMax is far above
// 5 ms so that a guest slowed by a busy host (a round trip of tens of
// milliseconds) still counts as answering fast.
func TestWaitSpinAdapts(t *testing.T) {
	const min, max = 50 * time.Microsecond, 200 * time.Millisecond
	client := &rdmacore.Provider{LocalAddr: clientIP, PollBeforeWait: min, PollBeforeWaitMax: max}
	pp := newPingPongerOn(t, client, &rdmacore.Provider{}, 64, false)
	c := pp.p.client
	roundTrips := func(n int, delay time.Duration) {
		pp.delay.Store(int64(delay))
		for range n {
			require.NoError(t, pp.roundTrip())
		}
	}
	roundTrips(8, 5*time.Millisecond)
	if got := rdmacore.SpinLimit(c); got <= min || got > max {
		t.Fatalf("after 8 round trips of 5 ms Wait polls for %v, want more than %v, at most %v", got, min, max)
	}
	roundTrips(8, 600*time.Millisecond)
	if got := rdmacore.SpinLimit(c); got != min {
		t.Fatalf("after 8 round trips of 600 ms Wait polls for %v, want %v", got, min)
	}
	roundTrips(8, 5*time.Millisecond)
	if got := rdmacore.SpinLimit(c); got <= min {
		t.Fatalf("5 ms again, Wait polls for %v, want more than %v", got, min)
	}
}
