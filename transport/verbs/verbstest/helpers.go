package verbstest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// timeout bounds every wait of the suite: a hang is a failure. It is not
// a speed requirement; rxe on a loaded VM is slow.
const timeout = 30 * time.Second

// CM private data sizes as rdma_cm delivers them over the IB CM.
const (
	connectPDLen = verbs.ConnectPrivateDataLen
	acceptPDLen  = verbs.AcceptPrivateDataLen
	rejectPDLen  = verbs.RejectPrivateDataLen
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// listen starts a listener of env's server provider, closed at cleanup.
func listen(t *testing.T, env Env) verbs.Listener {
	t.Helper()
	ln, err := env.Server.Listen(env.ListenAddr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// acceptOne accepts one request on ln in the background, handing it to
// inspect (if set) before accepting with opts.
func acceptOne(ctx context.Context, ln verbs.Listener, opts *verbs.ConnOptions, inspect func(verbs.ConnRequest)) <-chan acceptResult {
	ch := make(chan acceptResult, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			ch <- acceptResult{err: err}
			return
		}
		if inspect != nil {
			inspect(req)
		}
		c, err := req.Accept(ctx, opts)
		ch <- acceptResult{conn: c, err: err}
	}()
	return ch
}

type acceptResult struct {
	conn verbs.Conn
	err  error
}

// connect returns an established client/server pair, closed at cleanup.
func connect(t *testing.T, env Env, clientOpts, serverOpts *verbs.ConnOptions) (client, server verbs.Conn) {
	t.Helper()
	return connectInspect(t, env, clientOpts, serverOpts, nil)
}

func connectInspect(t *testing.T, env Env, clientOpts, serverOpts *verbs.ConnOptions, inspect func(verbs.ConnRequest)) (client, server verbs.Conn) {
	t.Helper()
	ctx := testContext(t)
	ln := listen(t, env)
	accepted := acceptOne(ctx, ln, serverOpts, inspect)
	client, err := env.Client.Dial(ctx, ln.Addr().String(), clientOpts)
	require.NoError(t, err, "dial")
	t.Cleanup(func() { _ = client.Close() })
	r := <-accepted
	require.NoError(t, r.err, "accept")
	t.Cleanup(func() { _ = r.conn.Close() })
	return client, r.conn
}

// next returns c's next completion, waiting for it.
func next(t *testing.T, c verbs.Conn) verbs.Completion {
	t.Helper()
	return collect(t, c, 1)[0]
}

// collect returns c's next n completions, polling in batches.
func collect(t *testing.T, c verbs.Conn, n int) []verbs.Completion {
	t.Helper()
	cs := make([]verbs.Completion, n)
	got, err := poll(testContext(t), c, cs)
	require.NoError(t, err, "after %d of %d completions", got, n)
	return cs
}

// poll fills cs with completions of c, waiting as needed.
func poll(ctx context.Context, c verbs.Conn, cs []verbs.Completion) (int, error) {
	got := 0
	for got < len(cs) {
		n, err := c.Poll(cs[got:])
		if err != nil {
			return got, err
		}
		got += n
		if got == len(cs) {
			break
		}
		if n == 0 {
			if err := c.Wait(ctx); err != nil {
				return got, fmt.Errorf("wait: %w", err)
			}
		}
	}
	return got, nil
}

// requireDone waits for c's Done and checks that posting now fails with
// ErrDisconnected.
func requireDone(t *testing.T, c verbs.Conn, side string) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(timeout):
		t.Fatalf("%s: Done not closed", side)
	}
	require.Error(t, c.Err(), side)
	err := c.PostSend([]verbs.WorkRequest{{ID: 999, Op: verbs.OpRDMAWrite}})
	require.ErrorIs(t, err, verbs.ErrDisconnected, "%s: PostSend after Done", side)
}

// requireStatus checks a completion's ID and error.
func requireStatus(t *testing.T, c verbs.Completion, id uint64, want error) {
	t.Helper()
	require.Equal(t, id, c.ID, "completion ID (status %v)", c.Status)
	if want == nil {
		require.NoError(t, c.Err(), "completion %d", id)
		return
	}
	require.ErrorIs(t, c.Err(), want, "completion %d", id)
}

// drainFlushed polls c until it reports no more completions after its
// Done closed, and checks that every one was flushed.
func drainFlushed(t *testing.T, c verbs.Conn) int {
	t.Helper()
	ctx := testContext(t)
	var cs [8]verbs.Completion
	count := 0
	for {
		n, err := c.Poll(cs[:])
		require.NoError(t, err)
		for _, comp := range cs[:n] {
			require.ErrorIs(t, comp.Err(), verbs.ErrFlushed, "completion %d", comp.ID)
		}
		count += n
		if n > 0 {
			continue
		}
		if err := c.Wait(ctx); err != nil {
			require.False(t, errors.Is(err, context.DeadlineExceeded), "waiting for flushes")
			return count
		}
	}
}

func alloc(t *testing.T, c verbs.Conn, size int) verbs.Region {
	t.Helper()
	r, err := c.AllocRegion(size)
	require.NoError(t, err)
	require.Len(t, r.Bytes(), size)
	return r
}

func postRecv(t *testing.T, c verbs.Conn, id uint64, r verbs.Region, off, n int) {
	t.Helper()
	require.NoError(t, c.PostRecv([]verbs.RecvRequest{{ID: id, SGL: []verbs.SGE{{Region: r, Offset: off, Length: n}}}}))
}

func sendWR(id uint64, r verbs.Region, off, n int) verbs.WorkRequest {
	return verbs.WorkRequest{ID: id, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: r, Offset: off, Length: n}}}
}

func writeWR(id uint64, r verbs.Region, off, n int, w exposed, roff uint64) verbs.WorkRequest {
	return verbs.WorkRequest{ID: id, Op: verbs.OpRDMAWrite, SGL: []verbs.SGE{{Region: r, Offset: off, Length: n}}, RemoteAddr: w.addr + roff, RKey: w.rkey}
}

func readWR(id uint64, r verbs.Region, off, n int, w exposed, roff uint64) verbs.WorkRequest {
	return verbs.WorkRequest{ID: id, Op: verbs.OpRDMARead, SGL: []verbs.SGE{{Region: r, Offset: off, Length: n}}, RemoteAddr: w.addr + roff, RKey: w.rkey}
}

// RecvSetup returns a verbs.ConnOptions.Setup that allocates a region of
// size bytes into *r and posts n Receives of recvSize bytes at its start,
// Receive i at offset (i-1)×recvSize with ID i (1..n). Benchmarks outside
// the suite use it too.
func RecvSetup(r *verbs.Region, size, n, recvSize int) func(verbs.Conn) error {
	return func(c verbs.Conn) error {
		reg, err := c.AllocRegion(size)
		if err != nil {
			return err
		}
		*r = reg
		rrs := make([]verbs.RecvRequest, n)
		for i := range rrs {
			rrs[i] = verbs.RecvRequest{ID: uint64(i + 1), SGL: []verbs.SGE{{Region: reg, Offset: i * recvSize, Length: recvSize}}}
		}
		return c.PostRecv(rrs)
	}
}

// exposed is a bound window as the peer names it.
type exposed struct {
	w    verbs.Window
	rkey uint32
	addr uint64
}

// expose binds a new window of c to n bytes of r at off and waits for the
// bind to complete. c must have no other completion on the way.
func expose(t *testing.T, c verbs.Conn, r verbs.Region, off, n int, access verbs.Access) exposed {
	t.Helper()
	w, err := c.AllocWindow()
	require.NoError(t, err)
	return rebind(t, c, w, r, off, n, access)
}

// rebind binds w (which must be free) and waits for the bind.
func rebind(t *testing.T, c verbs.Conn, w verbs.Window, r verbs.Region, off, n int, access verbs.Access) exposed {
	t.Helper()
	const id = 0xb1d
	before := w.RKey()
	require.NoError(t, c.PostSend([]verbs.WorkRequest{{
		ID: id, Op: verbs.OpBindWindow, Window: w,
		Bind: verbs.SGE{Region: r, Offset: off, Length: n}, Access: access,
	}}))
	comp := next(t, c)
	requireStatus(t, comp, id, nil)
	require.Equal(t, verbs.OpBindWindow, comp.Op)
	require.Equal(t, verbs.NextRKey(before), w.RKey(), "a bind gives the window verbs.NextRKey of its rkey")
	return exposed{w: w, rkey: w.RKey(), addr: r.Addr(off)}
}

// invalidate posts a Local Invalidate of e's rkey and waits for it.
func invalidate(t *testing.T, c verbs.Conn, e exposed) {
	t.Helper()
	const id = 0x11a
	require.NoError(t, c.PostSend([]verbs.WorkRequest{{ID: id, Op: verbs.OpLocalInvalidate, InvalidateRKey: e.rkey}}))
	requireStatus(t, next(t, c), id, nil)
}

// fill writes a pattern that differs for every seed and offset.
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i) ^ byte(i>>8)*31 ^ seed
	}
}

// byID indexes completions by ID and checks there is no duplicate.
func byID(t *testing.T, cs []verbs.Completion) map[uint64]verbs.Completion {
	t.Helper()
	m := make(map[uint64]verbs.Completion, len(cs))
	for _, c := range cs {
		_, dup := m[c.ID]
		require.False(t, dup, "duplicate completion %d", c.ID)
		m[c.ID] = c
	}
	return m
}
