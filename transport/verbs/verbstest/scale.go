package verbstest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// testManyConnections runs 64 connections at once, each exchanging
// messages both ways.
func testManyConnections(t *testing.T, env Env) {
	const conns, rounds, size = 64, 8, 256
	ctx := testContext(t)
	ln := listen(t, env)
	var mu sync.Mutex
	var all []verbs.Conn
	keep := func(c verbs.Conn) {
		mu.Lock()
		all = append(all, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range all {
			_ = c.Close()
		}
	})
	opts := func(r *verbs.Region) *verbs.ConnOptions {
		return &verbs.ConnOptions{
			Caps:  verbs.QueueCaps{SendQueue: 8, RecvQueue: 4, MaxSGE: 1, ReadDepth: 1},
			Setup: RecvSetup(r, 2*size, 1, size),
		}
	}
	errs := make(chan error, 2*conns)
	go func() {
		for range conns {
			req, err := ln.Accept(ctx)
			if err != nil {
				errs <- err
				return
			}
			go func() {
				var r verbs.Region
				c, err := req.Accept(ctx, opts(&r))
				if err != nil {
					errs <- fmt.Errorf("accept: %w", err)
					return
				}
				keep(c)
				errs <- echo(ctx, c, r, size, rounds)
			}()
		}
	}()
	for i := range conns {
		go func() {
			var r verbs.Region
			c, err := env.Client.Dial(ctx, ln.Addr().String(), opts(&r))
			if err != nil {
				errs <- fmt.Errorf("dial %d: %w", i, err)
				return
			}
			keep(c)
			errs <- ping(ctx, c, r, size, rounds, byte(i))
		}()
	}
	for range 2 * conns {
		select {
		case err := <-errs:
			require.NoError(t, err)
		case <-ctx.Done():
			t.Fatal("connections did not finish")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, all, 2*conns)
	for _, c := range all {
		require.NoError(t, c.Close())
	}
}

// ping sends rounds messages on c and checks each echo.
func ping(ctx context.Context, c verbs.Conn, r verbs.Region, size, rounds int, seed byte) error {
	b := r.Bytes()
	for i := range rounds {
		fill(b[size:], seed+byte(i))
		if err := c.PostSend([]verbs.WorkRequest{sendWR(uint64(i), r, size, size)}); err != nil {
			return err
		}
		var cs [2]verbs.Completion
		if _, err := poll(ctx, c, cs[:]); err != nil {
			return err
		}
		for _, comp := range cs {
			if err := comp.Err(); err != nil {
				return fmt.Errorf("completion %d: %w", comp.ID, err)
			}
		}
		if !bytes.Equal(b[:size], b[size:]) {
			return errors.New("echo differs")
		}
		if err := c.PostRecv([]verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: r, Length: size}}}}); err != nil {
			return err
		}
	}
	return nil
}

// echo returns rounds messages received on c. The completion of an
// echoed Send and the Receive of the peer's next message may come in
// either order: completions are ordered within the send queue and within
// the receive queue, not between the two (the peer may acknowledge our
// Send after its next message; rxe completes them from different tasks).
func echo(ctx context.Context, c verbs.Conn, r verbs.Region, size, rounds int) error {
	b := r.Bytes()
	var cs [1]verbs.Completion
	received, sent := 0, 0
	// next takes one completion: a Receive (round received) or the
	// completion of the Send of round sent.
	next := func() error {
		if _, err := poll(ctx, c, cs[:]); err != nil {
			return err
		}
		comp := cs[0]
		if comp.Op != verbs.OpRecv {
			if err := comp.Err(); err != nil || comp.ID != uint64(sent+10) {
				return fmt.Errorf("round %d: send %+v: %v", sent, comp, err)
			}
			sent++
			return nil
		}
		if err := comp.Err(); err != nil || comp.ByteLen != size {
			return fmt.Errorf("round %d: receive %+v: %v", received, comp, err)
		}
		received++
		return nil
	}
	for i := range rounds {
		for received <= i {
			if err := next(); err != nil {
				return err
			}
		}
		copy(b[size:], b[:size])
		if err := c.PostRecv([]verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: r, Length: size}}}}); err != nil {
			return err
		}
		if err := c.PostSend([]verbs.WorkRequest{sendWR(uint64(i+10), r, size, size)}); err != nil {
			return err
		}
	}
	for sent < rounds {
		if err := next(); err != nil {
			return err
		}
	}
	if received != rounds {
		return fmt.Errorf("%d messages received, want %d", received, rounds)
	}
	return nil
}

// Geometry of testTenThousandOperations.
const (
	stressIterations = 4000
	stressSlots      = 128
	stressSlotSize   = 1024
	stressCredits    = 32
	stressMsg        = 16
)

// stressPattern is the content of a slot at iteration i: i, then a fill.
func stressPattern(b []byte, i int) {
	fill(b, byte(i)^byte(i>>8))
	binary.LittleEndian.PutUint64(b, uint64(i))
}

// testTenThousandOperations pipelines, with 32 credits, 4000 iterations of
// an RDMA Write into a window slot followed by a Send naming it (and an
// RDMA Read of the slot every fourth time); the target checks the slot on
// every Send and answers. Over 10 000 work requests, batched posting and
// polling, on both sides at once.
func testTenThousandOperations(t *testing.T, env Env) {
	ctx := testContext(t)
	caps := verbs.QueueCaps{SendQueue: 4 * stressCredits, RecvQueue: stressCredits, MaxSGE: 1, ReadDepth: 8}
	const msgArea = stressCredits * stressMsg
	var cr, sr verbs.Region
	client, server := connect(t, env,
		&verbs.ConnOptions{Caps: caps, Setup: RecvSetup(&cr, msgArea+2*stressSlots*stressSlotSize, stressCredits, stressMsg)},
		&verbs.ConnOptions{Caps: caps, Setup: RecvSetup(&sr, msgArea+stressSlots*stressSlotSize+stressSlots*stressMsg, stressCredits, stressMsg)})
	win := expose(t, server, sr, msgArea, stressSlots*stressSlotSize, rw)

	serverOps := make(chan int, 1)
	serverErr := make(chan error, 1)
	go func() {
		n, err := stressServer(ctx, server, sr)
		serverOps <- n
		serverErr <- err
	}()
	clientOps, err := stressClient(ctx, client, cr, win)
	require.NoError(t, err, "client")
	require.NoError(t, <-serverErr, "server")
	total := clientOps + <-serverOps
	require.GreaterOrEqual(t, total, 10000, "work requests and Receives completed")
}

func stressClient(ctx context.Context, c verbs.Conn, r verbs.Region, win exposed) (int, error) {
	const msgArea = stressCredits * stressMsg
	const srcOff, dstOff = msgArea, msgArea + stressSlots*stressSlotSize
	b := r.Bytes()
	expect := make([]byte, stressSlotSize)
	cs := make([]verbs.Completion, 16)
	wrs := make([]verbs.WorkRequest, 0, 3)
	posted, completed, replies, nextIter, inflight := 0, 0, 0, 0, 0
	for replies < stressIterations || completed < posted {
		for nextIter < stressIterations && inflight < stressCredits {
			i, k := nextIter, nextIter%stressSlots
			stressPattern(b[srcOff+k*stressSlotSize:srcOff+(k+1)*stressSlotSize], i)
			wrs = append(wrs[:0],
				writeWR(uint64(i)<<2, r, srcOff+k*stressSlotSize, stressSlotSize, win, uint64(k*stressSlotSize)),
				sendWR(uint64(i)<<2|1, r, srcOff+k*stressSlotSize, 8))
			if i%4 == 0 {
				wrs = append(wrs, readWR(uint64(i)<<2|2, r, dstOff+k*stressSlotSize, stressSlotSize, win, uint64(k*stressSlotSize)))
			}
			if err := c.PostSend(wrs); err != nil {
				return completed, fmt.Errorf("iteration %d: %w", i, err)
			}
			posted += len(wrs)
			nextIter++
			inflight++
		}
		n, err := c.Poll(cs)
		if err != nil {
			return completed, err
		}
		if n == 0 {
			if err := c.Wait(ctx); err != nil {
				return completed, err
			}
			continue
		}
		for _, comp := range cs[:n] {
			if err := comp.Err(); err != nil {
				return completed, fmt.Errorf("completion %#x %v: %w", comp.ID, comp.Op, err)
			}
			switch {
			case comp.Op == verbs.OpRecv:
				replies++
				inflight--
				if err := c.PostRecv([]verbs.RecvRequest{{ID: comp.ID, SGL: []verbs.SGE{{Region: r, Offset: int(comp.ID-1) * stressMsg, Length: stressMsg}}}}); err != nil {
					return completed, err
				}
			case comp.Op == verbs.OpRDMARead:
				i := int(comp.ID >> 2)
				k := i % stressSlots
				stressPattern(expect, i)
				if !bytes.Equal(expect, b[dstOff+k*stressSlotSize:dstOff+(k+1)*stressSlotSize]) {
					return completed, fmt.Errorf("iteration %d: RDMA Read returned other bytes", i)
				}
				completed++
			default:
				completed++
			}
		}
	}
	return completed + replies, nil
}

func stressServer(ctx context.Context, c verbs.Conn, r verbs.Region) (int, error) {
	const msgArea = stressCredits * stressMsg
	const winOff, replyOff = msgArea, msgArea + stressSlots*stressSlotSize
	b := r.Bytes()
	expect := make([]byte, stressSlotSize)
	cs := make([]verbs.Completion, 16)
	received, sent, sendsDone := 0, 0, 0
	for received < stressIterations || sendsDone < sent {
		n, err := c.Poll(cs)
		if err != nil {
			return received + sendsDone, err
		}
		if n == 0 {
			if err := c.Wait(ctx); err != nil {
				return received + sendsDone, err
			}
			continue
		}
		for _, comp := range cs[:n] {
			if err := comp.Err(); err != nil {
				return received + sendsDone, fmt.Errorf("completion %#x %v: %w", comp.ID, comp.Op, err)
			}
			if comp.Op != verbs.OpRecv {
				sendsDone++
				continue
			}
			msg := b[int(comp.ID-1)*stressMsg:]
			i := int(binary.LittleEndian.Uint64(msg))
			if i != received || comp.ByteLen != 8 {
				return received + sendsDone, fmt.Errorf("message %d (%d bytes) out of order, expected %d", i, comp.ByteLen, received)
			}
			k := i % stressSlots
			stressPattern(expect, i)
			if !bytes.Equal(expect, b[winOff+k*stressSlotSize:winOff+(k+1)*stressSlotSize]) {
				return received + sendsDone, fmt.Errorf("iteration %d: the Send overtook its RDMA Write", i)
			}
			received++
			reply := replyOff + k*stressMsg
			binary.LittleEndian.PutUint64(b[reply:], uint64(i))
			if err := c.PostRecv([]verbs.RecvRequest{{ID: comp.ID, SGL: []verbs.SGE{{Region: r, Offset: int(comp.ID-1) * stressMsg, Length: stressMsg}}}}); err != nil {
				return received + sendsDone, err
			}
			if err := c.PostSend([]verbs.WorkRequest{sendWR(uint64(i), r, reply, 8)}); err != nil {
				return received + sendsDone, err
			}
			sent++
		}
	}
	return received + sendsDone, nil
}
