package soft_test

import (
	"context"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// echoServer returns every message received on c until c goes down.
func echoServer(c verbs.Conn, r verbs.Region, size int) {
	ctx := context.Background()
	cs := make([]verbs.Completion, 16)
	recv := []verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: r, Length: size}}}}
	reply := []verbs.WorkRequest{{ID: 2, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: r, Offset: size}}}}
	for {
		n, err := c.Poll(cs)
		if err != nil {
			return
		}
		for _, comp := range cs[:n] {
			if comp.Err() != nil {
				return
			}
			if comp.Op != verbs.OpRecv {
				continue
			}
			copy(r.Bytes()[size:], r.Bytes()[:comp.ByteLen])
			reply[0].SGL[0].Length = comp.ByteLen
			if c.PostRecv(recv) != nil || c.PostSend(reply) != nil {
				return
			}
		}
		if n == 0 && c.Wait(ctx) != nil {
			return
		}
	}
}

// BenchmarkPingPong measures a Send/Receive round trip of 64 bytes
// between two connections over loopback: one op is a message there and
// its echo back.
func BenchmarkPingPong(b *testing.B) {
	const size = 4096
	var sr, cr verbs.Region
	client, server, closeBoth := pair(b, &soft.Provider{}, &soft.Provider{}, withRecvs(&cr, 1, 2*size), withRecvs(&sr, 1, 2*size))
	defer closeBoth()
	go echoServer(server, sr, size)
	ctx := context.Background()
	send := []verbs.WorkRequest{{ID: 1, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: cr, Offset: size, Length: 64}}}}
	recv := []verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: cr, Length: size}}}}
	cs := make([]verbs.Completion, 2)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := client.PostSend(send); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < 2; {
			n, err := client.Poll(cs[:2-got])
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range cs[:n] {
				if c.Err() != nil {
					b.Fatal(c.Err())
				}
			}
			got += n
			if got < 2 {
				if err := client.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := client.PostRecv(recv); err != nil {
			b.Fatal(err)
		}
	}
}

// benchmarkRDMA streams RDMA Writes or Reads of size bytes into a window,
// keeping depth of them outstanding.
func benchmarkRDMA(b *testing.B, op verbs.Opcode, size, depth int) {
	var sr verbs.Region
	caps := verbs.QueueCaps{SendQueue: 2 * depth, RecvQueue: 4, MaxSGE: 1, ReadDepth: depth}
	client, server, closeBoth := pair(b, &soft.Provider{}, &soft.Provider{},
		&verbs.ConnOptions{Caps: caps},
		&verbs.ConnOptions{Caps: caps, Setup: func(c verbs.Conn) (err error) {
			sr, err = c.AllocRegion(depth * size)
			return err
		}})
	defer closeBoth()
	w, err := server.AllocWindow()
	if err != nil {
		b.Fatal(err)
	}
	if err := server.PostSend([]verbs.WorkRequest{{ID: 1, Op: verbs.OpBindWindow, Window: w,
		Bind: verbs.SGE{Region: sr, Length: depth * size}, Access: verbs.AccessRemoteRead | verbs.AccessRemoteWrite}}); err != nil {
		b.Fatal(err)
	}
	if err := waitOne(b, server).Err(); err != nil {
		b.Fatal(err)
	}
	cr, err := client.AllocRegion(depth * size)
	if err != nil {
		b.Fatal(err)
	}
	wrs := make([]verbs.WorkRequest, depth)
	for i := range wrs {
		wrs[i] = verbs.WorkRequest{ID: uint64(i), Op: op, SGL: []verbs.SGE{{Region: cr, Offset: i * size, Length: size}},
			RemoteAddr: sr.Addr(i * size), RKey: w.RKey()}
	}
	ctx := context.Background()
	cs := make([]verbs.Completion, depth)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	posted, done := 0, 0
	for done < b.N {
		if k := min(depth-(posted-done), b.N-posted); k > 0 {
			if err := client.PostSend(wrs[:k]); err != nil {
				b.Fatal(err)
			}
			posted += k
		}
		n, err := client.Poll(cs)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cs[:n] {
			if c.Err() != nil {
				b.Fatal(c.Err())
			}
		}
		done += n
		if n == 0 {
			if err := client.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRDMAWrite64K is the throughput of 64 KiB RDMA Writes, 8 in
// flight.
func BenchmarkRDMAWrite64K(b *testing.B) { benchmarkRDMA(b, verbs.OpRDMAWrite, 64<<10, 8) }

// BenchmarkRDMARead64K is the throughput of 64 KiB RDMA Reads, 8 in
// flight.
func BenchmarkRDMARead64K(b *testing.B) { benchmarkRDMA(b, verbs.OpRDMARead, 64<<10, 8) }
