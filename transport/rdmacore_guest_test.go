//go:build e2eguest && linux && cgo

// The benchmarks in this file run inside the project's Soft-RoCE VM,
// started by e2e/rdmacore_test.go (TestRdmacoreTransport), over rdma-core
// between rxe1 (10.0.0.2, the requester) and rxe0 (10.0.0.1, the
// responder): the whole transport, measured in the same boot as perftest's
// ib_send_lat -e and ib_write_bw on the same devices.

package transport

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// rdmacorePair connects a requester on rxe1 to a benchServe responder on
// rxe0.
func rdmacorePair(b *testing.B, cfg Config, spin time.Duration) *Conn {
	scfg, dcfg := cfg, cfg
	scfg.Provider = &rdmacore.Provider{PollBeforeWait: spin}
	dcfg.Provider = &rdmacore.Provider{LocalAddr: "10.0.0.2", PollBeforeWait: spin}
	return servePair(b, "10.0.0.1:0", &scfg, &dcfg)
}

// BenchmarkRdmacoreNull: one NULL RPC at a time through Conn.Call, the
// requester and responder of this package over rdma-core. usec-typical
// is the median round trip and usec-avg the mean, both in microseconds:
// e2e/rdmacore_test.go divides them by two of ib_send_lat -e's one-way
// latencies (the same two Sends a NULL RPC takes, with completion events,
// as the transport waits for them).
//
// Sub-benchmarks: the provider's default PollBeforeWait, and none (every
// Wait arms the completion queue and parks at once).
func BenchmarkRdmacoreNull(b *testing.B) {
	for _, m := range spinModes {
		b.Run(m.name, func(b *testing.B) { benchRdmacoreNull(b, m.spin) })
	}
}

// spinModes are the PollBeforeWait settings the benchmarks compare.
var spinModes = []struct {
	name string
	spin time.Duration
}{{"poll-first", 0}, {"events-only", -1}}

func benchRdmacoreNull(b *testing.B, spin time.Duration) {
	c := rdmacorePair(b, Config{Binding: testBinding{ddp: true}}, spin)
	msg := appendCall(nil, 1, 0)
	reply := make([]byte, 0, 1024)
	ctx := context.Background()
	call := func(xid uint32) {
		msg[0], msg[1], msg[2], msg[3] = byte(xid>>24), byte(xid>>16), byte(xid>>8), byte(xid)
		var err error
		if reply, err = c.Call(ctx, msg, reply); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 100 {
		call(uint32(i + 1))
	}
	rtt := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		call(uint32(1000 + i))
		if len(rtt) < cap(rtt) {
			rtt = append(rtt, time.Since(start))
		}
	}
	b.StopTimer()
	slices.Sort(rtt)
	b.ReportMetric(float64(rtt[len(rtt)/2].Nanoseconds())/1000, "usec-typical")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "usec-avg")
}

// BenchmarkRdmacoreRead64K: 64 KiB READ-like calls whose results the
// responder places with RDMA Writes into the requester's Write chunk,
// depth calls in flight (one goroutine each), for comparison with
// ib_write_bw -s 65536 on the same devices. post-inline is poll-first with
// every batch posted by the goroutine that built it (Config.PostAsyncMin
// negative): the responder's loop then waits for rxe to transmit each
// result before it takes the next call. into is poll-first through
// CallInto, as the NFS client reads: the responder's RDMA Write places the
// result in each caller's own buffer (registered once, then cached), and
// nothing copies it.
func BenchmarkRdmacoreRead64K(b *testing.B) {
	for _, m := range spinModes {
		for _, depth := range []int{1, 16, 32} {
			b.Run(m.name+"/depth"+strconv.Itoa(depth), func(b *testing.B) { benchRdmacoreRead(b, m.spin, depth, 0, false) })
		}
	}
	b.Run("post-inline/depth16", func(b *testing.B) { benchRdmacoreRead(b, 0, 16, -1, false) })
	b.Run("into/depth16", func(b *testing.B) { benchRdmacoreRead(b, 0, 16, 0, true) })
}

func benchRdmacoreRead(b *testing.B, spin time.Duration, depth, postAsyncMin int, into bool) {
	const size = 64 << 10
	c := rdmacorePair(b, Config{Binding: testBinding{ddp: true}, PostAsyncMin: postAsyncMin}, spin)
	var next sync.Mutex
	xid := uint32(1)
	left := 0
	worker := func(wg *sync.WaitGroup, errs chan<- error) {
		defer wg.Done()
		msg := xdr.AppendUint32(appendCall(nil, 0, procRead), size)
		reply := make([]byte, 0, 2*size)
		data := make([]byte, size)
		for {
			next.Lock()
			if left == 0 {
				next.Unlock()
				return
			}
			left--
			xid++
			x := xid
			next.Unlock()
			msg[0], msg[1], msg[2], msg[3] = byte(x>>24), byte(x>>16), byte(x>>8), byte(x)
			var err error
			if into {
				var item DataItem
				reply, item, err = c.CallInto(context.Background(), msg, reply, data)
				if err == nil && item.N != size {
					err = fmt.Errorf("CallInto placed %d bytes, want %d", item.N, size)
				}
			} else {
				reply, err = c.Call(context.Background(), msg, reply)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}
	run := func(n int) {
		left = n
		var wg sync.WaitGroup
		errs := make(chan error, depth)
		for range depth {
			wg.Add(1)
			go worker(&wg, errs)
		}
		wg.Wait()
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
	}
	run(4 * depth) // warm up: grow every buffer
	b.SetBytes(size)
	b.ResetTimer()
	run(b.N)
}
