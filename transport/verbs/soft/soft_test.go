package soft_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// pair connects a client of cp to a server of sp over loopback and
// returns a function that closes both.
func pair(t testing.TB, cp, sp *soft.Provider, copts, sopts *verbs.ConnOptions) (client, server verbs.Conn, closeBoth func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := sp.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	type result struct {
		c   verbs.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			ch <- result{err: err}
			return
		}
		c, err := req.Accept(ctx, sopts)
		ch <- result{c, err}
	}()
	client, err = cp.Dial(ctx, ln.Addr().String(), copts)
	require.NoError(t, err)
	r := <-ch
	require.NoError(t, r.err)
	return client, r.c, func() {
		require.NoError(t, client.Close())
		require.NoError(t, r.c.Close())
	}
}

// withRecvs returns options whose Setup allocates a region of n*size
// bytes into *r and posts n Receives of size bytes (IDs 1..n).
func withRecvs(r *verbs.Region, n, size int) *verbs.ConnOptions {
	return &verbs.ConnOptions{Setup: func(c verbs.Conn) error {
		var err error
		if *r, err = c.AllocRegion(max(n, 1) * size); err != nil {
			return err
		}
		for i := range n {
			err := c.PostRecv([]verbs.RecvRequest{{ID: uint64(i + 1), SGL: []verbs.SGE{{Region: *r, Offset: i * size, Length: size}}}})
			if err != nil {
				return err
			}
		}
		return nil
	}}
}

// waitOne returns the next completion of c.
func waitOne(t testing.TB, c verbs.Conn) verbs.Completion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cs [1]verbs.Completion
	for {
		n, err := c.Poll(cs[:])
		require.NoError(t, err)
		if n == 1 {
			return cs[0]
		}
		require.NoError(t, c.Wait(ctx))
	}
}

func waitDone(t testing.TB, c verbs.Conn) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
}

// settleGoroutines waits for the goroutine count to come back to want,
// and dumps the goroutines if it does not.
func settleGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines left, want %d:\n%s", runtime.NumGoroutine(), want, buf)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCloseLeavesNoGoroutines runs connections through every way of ending
// and checks that nothing keeps running.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		// Traffic, then an orderly close.
		var sr verbs.Region
		client, server, closeBoth := pair(t, &soft.Provider{}, &soft.Provider{}, nil, withRecvs(&sr, 1, 64))
		cr, err := client.AllocRegion(64)
		require.NoError(t, err)
		require.NoError(t, client.PostSend([]verbs.WorkRequest{{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: cr, Length: 64}}}}))
		require.NoError(t, waitOne(t, client).Err())
		require.NoError(t, waitOne(t, server).Err())
		closeBoth()

		// An RNR kills the connection.
		client, server, closeBoth = pair(t, &soft.Provider{}, &soft.Provider{}, nil, nil)
		cr, err = client.AllocRegion(64)
		require.NoError(t, err)
		require.NoError(t, client.PostSend([]verbs.WorkRequest{{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: cr, Length: 8}}}}))
		require.ErrorIs(t, waitOne(t, client).Err(), verbs.ErrRNR)
		waitDone(t, server)
		closeBoth()

		// The link drops.
		faults := &soft.Faults{}
		_, server, closeBoth = pair(t, &soft.Provider{Faults: faults}, &soft.Provider{}, nil, nil)
		faults.Drop()
		waitDone(t, server)
		closeBoth()

		// A listener closed with a request nobody accepted.
		p := &soft.Provider{}
		ln, err := p.Listen("127.0.0.1:0")
		require.NoError(t, err)
		dialErr := make(chan error, 1)
		go func() {
			_, err := p.Dial(context.Background(), ln.Addr().String(), nil)
			dialErr <- err
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := ln.Accept(ctx)
		cancel()
		require.NoError(t, err)
		require.NotNil(t, req)
		require.NoError(t, ln.Close())
		require.NoError(t, req.Reject(nil))
		require.ErrorIs(t, <-dialErr, verbs.ErrRejected)
	}
	settleGoroutines(t, before)
}

// TestSteadyStateAllocs: posting, polling, waiting and the provider's own
// goroutines allocate nothing per Send/Receive round or RDMA transfer.
func TestSteadyStateAllocs(t *testing.T) {
	var sr verbs.Region
	client, server, closeBoth := pair(t, &soft.Provider{}, &soft.Provider{}, nil, withRecvs(&sr, 1, 4096))
	defer closeBoth()
	cr, err := client.AllocRegion(1 << 20)
	require.NoError(t, err)
	w, err := server.AllocWindow()
	require.NoError(t, err)
	require.NoError(t, server.PostSend([]verbs.WorkRequest{{ID: 9, Op: verbs.OpBindWindow, Window: w,
		Bind: verbs.SGE{Region: sr, Length: 4096}, Access: verbs.AccessRemoteRead | verbs.AccessRemoteWrite}}))
	require.NoError(t, waitOne(t, server).Err())

	ctx := context.Background()
	send := []verbs.WorkRequest{{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: cr, Length: 1024}}}}
	rdma := []verbs.WorkRequest{
		{ID: 2, Op: verbs.OpRDMAWrite, SGL: []verbs.SGE{{Region: cr, Length: 4096}}, RemoteAddr: sr.Addr(0), RKey: w.RKey()},
		{ID: 3, Op: verbs.OpRDMARead, SGL: []verbs.SGE{{Region: cr, Offset: 8192, Length: 4096}}, RemoteAddr: sr.Addr(0), RKey: w.RKey()},
	}
	recv := []verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: sr, Length: 4096}}}}
	cs := make([]verbs.Completion, 4)
	await := func(c verbs.Conn, n int) {
		for got := 0; got < n; {
			k, err := c.Poll(cs[:n-got])
			if err != nil {
				panic(err)
			}
			got += k
			if got < n {
				if err := c.Wait(ctx); err != nil {
					panic(err)
				}
			}
		}
	}
	round := func() {
		if err := client.PostSend(send); err != nil {
			panic(err)
		}
		await(server, 1)
		if err := server.PostRecv(recv); err != nil {
			panic(err)
		}
		await(client, 1)
		if err := client.PostSend(rdma); err != nil {
			panic(err)
		}
		await(client, 2)
	}
	for range 50 {
		round()
	}
	require.Zero(t, testing.AllocsPerRun(200, round))
}

// TestLinkDropFailsOutstandingRequest: the link breaks under an
// unanswered Send: it fails with StatusRetryExceeded, the requests behind
// it are flushed, and both sides go down.
func TestLinkDropFailsOutstandingRequest(t *testing.T) {
	faults := &soft.Faults{}
	var sr verbs.Region
	client, server, closeBoth := pair(t, &soft.Provider{Faults: faults}, &soft.Provider{}, nil, withRecvs(&sr, 4, 64))
	defer closeBoth()
	cr, err := client.AllocRegion(64)
	require.NoError(t, err)
	faults.DropAtSend(2)
	send := func(id uint64) verbs.WorkRequest {
		return verbs.WorkRequest{ID: id, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: cr, Length: 8}}}
	}
	require.NoError(t, client.PostSend([]verbs.WorkRequest{send(1)}))
	require.NoError(t, waitOne(t, client).Err())
	require.NoError(t, client.PostSend([]verbs.WorkRequest{send(2), send(3)}))
	c := waitOne(t, client)
	require.Equal(t, uint64(2), c.ID)
	require.ErrorIs(t, c.Err(), verbs.ErrRetryExceeded)
	c = waitOne(t, client)
	require.Equal(t, uint64(3), c.ID)
	require.ErrorIs(t, c.Err(), verbs.ErrFlushed)
	waitDone(t, client)
	waitDone(t, server)
	require.ErrorIs(t, client.Err(), verbs.ErrDisconnected)
	require.ErrorIs(t, server.Err(), verbs.ErrDisconnected)
	require.NoError(t, waitOne(t, server).Err(), "the first Send arrived")
	for range 3 {
		require.ErrorIs(t, waitOne(t, server).Err(), verbs.ErrFlushed)
	}
}

// TestFaultDrop: Drop breaks every connection of the provider at once.
func TestFaultDrop(t *testing.T) {
	faults := &soft.Faults{}
	p := &soft.Provider{Faults: faults}
	var r1, r2 verbs.Region
	c1, s1, close1 := pair(t, p, &soft.Provider{}, withRecvs(&r1, 2, 64), nil)
	defer close1()
	c2, s2, close2 := pair(t, p, &soft.Provider{}, withRecvs(&r2, 2, 64), nil)
	defer close2()
	faults.Drop()
	for _, c := range []verbs.Conn{c1, s1, c2, s2} {
		waitDone(t, c)
		require.ErrorIs(t, c.Err(), verbs.ErrDisconnected)
	}
	for _, c := range []verbs.Conn{c1, c2} {
		for range 2 {
			require.ErrorIs(t, waitOne(t, c).Err(), verbs.ErrFlushed)
		}
	}
}

// TestFaultDelayCompletions: completions are held back, in order.
func TestFaultDelayCompletions(t *testing.T) {
	const delay = 30 * time.Millisecond
	faults := &soft.Faults{}
	var sr verbs.Region
	client, server, closeBoth := pair(t, &soft.Provider{}, &soft.Provider{Faults: faults}, nil, withRecvs(&sr, 3, 64))
	defer closeBoth()
	cr, err := client.AllocRegion(64)
	require.NoError(t, err)
	faults.DelayCompletions(delay)
	start := time.Now()
	for i := range 3 {
		require.NoError(t, client.PostSend([]verbs.WorkRequest{{ID: uint64(i), Op: verbs.OpSend, SGL: []verbs.SGE{{Region: cr, Length: 8}}}}))
	}
	for i := range 3 {
		c := waitOne(t, server)
		require.NoError(t, c.Err())
		require.Equal(t, uint64(i+1), c.ID, "order kept")
	}
	require.GreaterOrEqual(t, time.Since(start), delay, "a completion came before its delay")
	faults.DelayCompletions(0)
}

// TestFaultCorruptNextRecvLength: the next Receive completion lies about
// its length, within the posted buffer; the one after it does not.
func TestFaultCorruptNextRecvLength(t *testing.T) {
	faults := &soft.Faults{}
	var sr verbs.Region
	client, server, closeBoth := pair(t, &soft.Provider{}, &soft.Provider{Faults: faults}, nil, withRecvs(&sr, 3, 64))
	defer closeBoth()
	cr, err := client.AllocRegion(64)
	require.NoError(t, err)
	send := []verbs.WorkRequest{{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: cr, Length: 40}}}}
	for _, tc := range []struct {
		fn   func(int) int
		want int
	}{
		{func(n int) int { return n - 3 }, 37},
		{func(int) int { return 1 << 30 }, 64}, // clamped to the Receive
		{nil, 40},
	} {
		if tc.fn != nil {
			faults.CorruptNextRecvLength(tc.fn)
		}
		require.NoError(t, client.PostSend(send))
		c := waitOne(t, server)
		require.NoError(t, c.Err())
		require.Equal(t, tc.want, c.ByteLen)
		require.NoError(t, waitOne(t, client).Err())
	}
}

// TestFaultFailPosts: injected post failures post nothing and run out.
func TestFaultFailPosts(t *testing.T) {
	faults := &soft.Faults{}
	var sr verbs.Region
	client, server, closeBoth := pair(t, &soft.Provider{Faults: faults}, &soft.Provider{Faults: faults}, nil, withRecvs(&sr, 1, 64))
	defer closeBoth()
	cr, err := client.AllocRegion(64)
	require.NoError(t, err)
	errBoom := errors.New("boom")
	faults.FailPostSend(2, errBoom)
	faults.FailPostRecv(1, nil)
	send := []verbs.WorkRequest{{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: cr, Length: 8}}}}
	require.ErrorIs(t, client.PostSend(send), errBoom)
	require.ErrorIs(t, client.PostSend(send), errBoom)
	require.Error(t, server.PostRecv([]verbs.RecvRequest{{ID: 2, SGL: []verbs.SGE{{Region: sr, Length: 64}}}}))
	require.NoError(t, client.PostSend(send))
	require.NoError(t, waitOne(t, client).Err())
	c := waitOne(t, server)
	require.Equal(t, uint64(1), c.ID, "the failed PostRecv posted nothing")
	require.NoError(t, server.PostRecv([]verbs.RecvRequest{{ID: 2, SGL: []verbs.SGE{{Region: sr, Length: 64}}}}))
}

// TestDialContextCanceled: a listener that never answers does not hold
// Dial past its context.
func TestDialContextCanceled(t *testing.T) {
	before := runtime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			accepted <- nc
		}
		close(accepted)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c, err := (&soft.Provider{}).Dial(ctx, ln.Addr().String(), nil)
	require.Nil(t, c)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	if nc := <-accepted; nc != nil {
		nc.Close()
	}
	settleGoroutines(t, before)
}

// TestAcceptContextCanceled: a dialer that never confirms does not hold
// Accept past its context.
func TestAcceptContextCanceled(t *testing.T) {
	p := &soft.Provider{}
	ln, err := p.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	// A dialer that sends a valid connect request and then nothing.
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	req := []byte{'S', 'R', 'D', 'M', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	_, err = nc.Write(req)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := ln.Accept(ctx)
	require.NoError(t, err)
	require.Equal(t, make([]byte, 56), r.PrivateData())
	actx, acancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer acancel()
	c, err := r.Accept(actx, nil)
	require.Nil(t, c)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestCloseUnblocksWait: Close wakes a goroutine parked in Wait.
func TestCloseUnblocksWait(t *testing.T) {
	client, _, closeBoth := pair(t, &soft.Provider{}, &soft.Provider{}, nil, nil)
	defer closeBoth()
	errc := make(chan error, 1)
	go func() { errc <- client.Wait(context.Background()) }()
	require.NoError(t, client.Close())
	select {
	case err := <-errc:
		require.ErrorIs(t, err, verbs.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
	}
}

// TestConcurrentPostPollClose hammers a connection from several goroutines
// while it is closed (for the race detector).
func TestConcurrentPostPollClose(t *testing.T) {
	var sr verbs.Region
	client, server, closeBoth := pair(t, &soft.Provider{}, &soft.Provider{}, nil, withRecvs(&sr, 64, 64))
	defer closeBoth()
	cr, err := client.AllocRegion(4096)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wrs := []verbs.WorkRequest{{ID: uint64(g), Op: verbs.OpSend, SGL: []verbs.SGE{{Region: cr, Length: 16}}}}
			cs := make([]verbs.Completion, 8)
			for range 200 {
				if err := client.PostSend(wrs); err != nil && !errors.Is(err, verbs.ErrQueueFull) {
					return
				}
				if _, err := client.Poll(cs); err != nil {
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		cs := make([]verbs.Completion, 8)
		for {
			if _, err := server.Poll(cs); err != nil {
				return
			}
			if err := server.Wait(context.Background()); err != nil {
				return
			}
		}
	}()
	time.Sleep(time.Millisecond)
	require.NoError(t, client.Close())
	require.NoError(t, server.Close())
	wg.Wait()
}

// TestPostValidation: what ibv_post_send itself refuses.
func TestPostValidation(t *testing.T) {
	var sr verbs.Region
	var setupErr error
	opts := withRecvs(&sr, 1, 64)
	setup := opts.Setup
	opts.Setup = func(c verbs.Conn) error {
		setupErr = c.PostSend([]verbs.WorkRequest{{ID: 1, Op: verbs.OpRDMAWrite}})
		return setup(c)
	}
	client, _, closeBoth := pair(t, &soft.Provider{}, &soft.Provider{}, opts, nil)
	defer closeBoth()
	require.ErrorIs(t, setupErr, verbs.ErrNotSupported, "PostSend during Setup")
	r, err := client.AllocRegion(soft.MaxMessageSize + 1)
	require.NoError(t, err)
	sge := verbs.SGE{Region: r, Length: 8}
	for _, tc := range []struct {
		wr   verbs.WorkRequest
		want error
	}{
		{verbs.WorkRequest{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{sge, sge, sge, sge, sge}}, verbs.ErrNotSupported},
		{verbs.WorkRequest{ID: 1, Op: 200}, verbs.ErrNotSupported},
		{verbs.WorkRequest{ID: 1, Op: verbs.OpRDMAWrite, SGL: []verbs.SGE{{Region: r, Length: soft.MaxMessageSize + 1}}}, verbs.ErrLength},
	} {
		require.ErrorIs(t, client.PostSend([]verbs.WorkRequest{tc.wr}), tc.want, "%+v", tc.wr.Op)
	}
	require.ErrorIs(t, client.PostRecv([]verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{sge, sge, sge, sge, sge}}}), verbs.ErrNotSupported)
	_, err = client.AllocRegion(0)
	require.ErrorIs(t, err, verbs.ErrNotSupported)
	_, _, err = func() (verbs.Conn, verbs.Conn, error) {
		_, err := (&soft.Provider{}).Dial(context.Background(), "127.0.0.1:1", &verbs.ConnOptions{Caps: verbs.QueueCaps{MaxSGE: 1000}})
		return nil, nil, err
	}()
	require.ErrorIs(t, err, verbs.ErrNotSupported, "MaxSGE over the provider's limit")
}

// TestRegions: region memory and addresses.
func TestRegions(t *testing.T) {
	client, _, closeBoth := pair(t, &soft.Provider{}, &soft.Provider{}, nil, nil)
	r1, err := client.AllocRegion(5000)
	require.NoError(t, err)
	r2, err := client.AllocRegion(100)
	require.NoError(t, err)
	require.Len(t, r1.Bytes(), 5000)
	require.Equal(t, 5000, cap(r1.Bytes()), "no access past the region")
	require.Greater(t, r1.Addr(0), uint64(1)<<32, "addresses look like virtual addresses")
	require.Equal(t, r1.Addr(0)+4999, r1.Addr(4999))
	require.True(t, r2.Addr(0) >= r1.Addr(5000) || r2.Addr(100) <= r1.Addr(0), "regions do not overlap")
	r1.Bytes()[4999] = 42
	require.NoError(t, r1.Close())
	require.Nil(t, r1.Bytes())
	require.NoError(t, r1.Close(), "Close is idempotent")
	closeBoth()
	require.Nil(t, r2.Bytes(), "Close of the connection frees its regions")
	_, err = client.AllocRegion(10)
	require.ErrorIs(t, err, verbs.ErrClosed)
	_, err = client.AllocWindow()
	require.ErrorIs(t, err, verbs.ErrClosed)
}

// TestErrorsAreTyped: errors carry the verbs sentinels and say where
// they come from.
func TestErrorsAreTyped(t *testing.T) {
	_, err := (&soft.Provider{}).Dial(context.Background(), "127.0.0.1:1", nil)
	require.ErrorIs(t, err, verbs.ErrRefused)
	require.True(t, strings.HasPrefix(err.Error(), "soft: "), err.Error())
	_, err = (&soft.Provider{}).Listen("256.0.0.1:0")
	require.Error(t, err)
	require.Equal(t, "soft", (&soft.Provider{}).Name())
	require.Equal(t, fmt.Sprint(verbs.StatusRemoteAccess), "remote access error")
}
