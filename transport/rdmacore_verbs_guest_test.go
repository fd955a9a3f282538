//go:build e2eguest && linux && cgo

package transport

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/verbstest"
)

// BenchmarkRdmacoreVerbsRead64K is the exchange of a pipelined 64 KiB
// READ written directly on verbs, with no RPC layer: the client Sends a
// 128-byte call, and the server answers each with an RDMA Write of 64 KiB
// into the client's memory and a 128-byte Send, one post for both, depth
// calls in flight; one goroutine a side posts as the completions arrive.
// It measures what the exchange itself costs on rxe next to ib_write_bw
// (Writes only): rxe carries the Write and the reply Send through one
// queue pair, in the thread that posts them. It is no ceiling for the
// transport, which posts its bulk from a goroutine of its own. The
// client's memory is exposed once, through one window, where the
// transport binds one per call and the reply invalidates it.
func BenchmarkRdmacoreVerbsRead64K(b *testing.B) {
	for _, depth := range []int{1, 16} {
		b.Run("depth"+strconv.Itoa(depth), func(b *testing.B) { benchReadShaped(b, depth) })
	}
}

func benchReadShaped(b *testing.B, depth int) {
	const (
		size    = 64 << 10
		msgSize = 128
		recvLen = 256
		sinkOff = 64 << 10 // the client's sink, the server's source
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Receives at [0, depth×recvLen); call (client) or reply (server)
	// buffers at 32 KiB + slot×msgSize; the sink or source from 64 KiB.
	caps := verbs.QueueCaps{SendQueue: 4*depth + 4, RecvQueue: depth, MaxSGE: 1, ReadDepth: 1}
	p := verbsPair(b, ctx, caps, sinkOff+depth*size, depth, recvLen)
	win, err := p.client.AllocWindow()
	if err != nil {
		b.Fatal(err)
	}
	if err := p.client.PostSend([]verbs.WorkRequest{{Op: verbs.OpBindWindow, Window: win,
		Bind: verbs.SGE{Region: p.cregion, Offset: sinkOff, Length: depth * size}, Access: verbs.AccessRemoteWrite}}); err != nil {
		b.Fatal(err)
	}
	err = waitBind(ctx, p.client)
	if err != nil {
		b.Fatal(err)
	}
	sink, rkey := p.cregion.Addr(sinkOff), win.RKey()

	served := make(chan error, 1)
	go func() { served <- serveReadShaped(ctx, p.server, p.sregion, depth, sink, rkey) }()
	defer func() {
		cancel()
		if err := <-served; !errors.Is(err, context.Canceled) {
			b.Errorf("server: %v", err)
		}
	}()

	c, r := p.client, p.cregion
	call := func(slot int) error {
		off := 32<<10 + slot*msgSize
		r.Bytes()[off] = byte(slot)
		return c.PostSend([]verbs.WorkRequest{{ID: uint64(slot), Op: verbs.OpSend,
			SGL: []verbs.SGE{{Region: r, Offset: off, Length: msgSize}}}})
	}
	cs := make([]verbs.Completion, 32)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	posted, done := 0, 0
	for ; posted < min(depth, b.N); posted++ {
		if err := call(posted); err != nil {
			b.Fatal(err)
		}
	}
	for done < b.N {
		n, err := c.Poll(cs)
		if err != nil {
			b.Fatal(err)
		}
		for i := range cs[:n] {
			if err := cs[i].Err(); err != nil {
				b.Fatal(err)
			}
			if cs[i].Op != verbs.OpRecv {
				continue
			}
			// The reply names the slot whose 64 KiB landed.
			rb := int(cs[i].ID) - 1 // verbstest.RecvSetup: IDs 1..n
			slot := int(r.Bytes()[rb*recvLen])
			if cs[i].ByteLen != msgSize || slot >= depth {
				b.Fatalf("reply %d bytes for slot %d", cs[i].ByteLen, slot)
			}
			done++
			if err := c.PostRecv([]verbs.RecvRequest{{ID: cs[i].ID, SGL: []verbs.SGE{{Region: r, Offset: rb * recvLen, Length: recvLen}}}}); err != nil {
				b.Fatal(err)
			}
			if posted < b.N {
				if err := call(slot); err != nil {
					b.Fatal(err)
				}
				posted++
			}
		}
		if n == 0 {
			if err := c.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// serveReadShaped answers each call with a 64 KiB RDMA Write into the
// call's slot of the client's sink and a reply Send naming the slot, one
// post for both (as the transport posts a READ's reply).
func serveReadShaped(ctx context.Context, c verbs.Conn, r verbs.Region, depth int, sink uint64, rkey uint32) error {
	const size, msgSize, recvLen, srcOff = 64 << 10, 128, 256, 64 << 10
	cs := make([]verbs.Completion, 32)
	wrs := make([]verbs.WorkRequest, 2)
	for {
		n, err := c.Poll(cs)
		if err != nil {
			return err
		}
		for i := range cs[:n] {
			if err := cs[i].Err(); err != nil {
				return err
			}
			if cs[i].Op != verbs.OpRecv {
				continue
			}
			rb := int(cs[i].ID) - 1 // verbstest.RecvSetup: IDs 1..n
			slot := int(r.Bytes()[rb*recvLen])
			if slot >= depth {
				return fmt.Errorf("call for slot %d", slot)
			}
			if err := c.PostRecv([]verbs.RecvRequest{{ID: cs[i].ID, SGL: []verbs.SGE{{Region: r, Offset: rb * recvLen, Length: recvLen}}}}); err != nil {
				return err
			}
			off := 32<<10 + slot*msgSize
			r.Bytes()[off] = byte(slot)
			wrs[0] = verbs.WorkRequest{Op: verbs.OpRDMAWrite, SGL: []verbs.SGE{{Region: r, Offset: srcOff, Length: size}},
				RemoteAddr: sink + uint64(slot*size), RKey: rkey}
			wrs[1] = verbs.WorkRequest{Op: verbs.OpSend, SGL: []verbs.SGE{{Region: r, Offset: off, Length: msgSize}}}
			if err := c.PostSend(wrs); err != nil {
				return err
			}
		}
		if n == 0 {
			if err := c.Wait(ctx); err != nil {
				return err
			}
		}
	}
}

// verbsConns are two connected rdma-core queue pairs and their regions.
type verbsConns struct {
	client, server   verbs.Conn
	cregion, sregion verbs.Region
}

// verbsPair connects rxe1 to rxe0 with bare queue pairs, each with a
// region of size bytes and n Receives of recvSize bytes posted at its
// start (verbstest.RecvSetup: IDs 1..n).
func verbsPair(b *testing.B, ctx context.Context, caps verbs.QueueCaps, size, n, recvSize int) verbsConns {
	b.Helper()
	var p verbsConns
	ln, err := (&rdmacore.Provider{}).Listen("10.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ln.Close() })
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			p.server, err = req.Accept(ctx, &verbs.ConnOptions{Caps: caps, Setup: verbstest.RecvSetup(&p.sregion, size, n, recvSize)})
		}
		accepted <- err
	}()
	p.client, err = (&rdmacore.Provider{LocalAddr: "10.0.0.2"}).Dial(ctx, ln.Addr().String(), &verbs.ConnOptions{Caps: caps, Setup: verbstest.RecvSetup(&p.cregion, size, n, recvSize)})
	if err != nil {
		_ = ln.Close() // ends the Accept
	}
	if aerr := <-accepted; err == nil {
		err = aerr
	}
	if err != nil {
		if p.client != nil {
			_ = p.client.Close()
		}
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = p.client.Close()
		_ = p.server.Close()
	})
	return p
}

// waitBind waits for the completion of the one bind posted.
func waitBind(ctx context.Context, c verbs.Conn) error {
	var cs [1]verbs.Completion
	for {
		n, err := c.Poll(cs[:])
		if err != nil {
			return err
		}
		if n == 1 {
			if cs[0].Op != verbs.OpBindWindow {
				return fmt.Errorf("completion %v, want a bind", cs[0].Op)
			}
			return cs[0].Err()
		}
		if err := c.Wait(ctx); err != nil {
			return err
		}
	}
}
