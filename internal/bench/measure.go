package bench

import (
	"context"
	"slices"
	"sync"
	"time"
)

// opFunc performs one operation of a workload for worker w and returns the
// payload bytes it moved.
type opFunc func(w int) (int, error)

// measurement is what workers did in one timed section.
type measurement struct {
	elapsed  time.Duration
	ops      uint64
	errors   uint64
	bytes    uint64
	lat      []time.Duration // every successful operation's latency, sorted
	firstErr error
}

// runOps runs op in n goroutines (n operations in flight) until d has
// passed, and returns what they did. Latencies are kept for every
// operation (a cell under TCG makes at most some 10^5).
func runOps(ctx context.Context, n int, d time.Duration, op opFunc) measurement {
	// The deadline counts from t0, so that elapsed is at least d.
	t0 := time.Now()
	ctx, cancel := context.WithDeadline(ctx, t0.Add(d))
	defer cancel()
	type worker struct {
		ops, errs, bytes uint64
		lat              []time.Duration
		err              error
	}
	ws := make([]worker, n)
	var wg sync.WaitGroup
	for i := range ws {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w := &ws[i]
			w.lat = make([]time.Duration, 0, 1024)
			for ctx.Err() == nil {
				s := time.Now()
				b, err := op(i)
				if err != nil {
					w.errs++
					if w.err == nil {
						w.err = err
					}
					if w.errs > 100 {
						return // a broken cell stops, its error is reported
					}
					continue
				}
				w.lat = append(w.lat, time.Since(s))
				w.ops++
				w.bytes += uint64(b)
			}
		}(i)
	}
	wg.Wait()
	m := measurement{elapsed: time.Since(t0)}
	for _, w := range ws {
		m.ops += w.ops
		m.errors += w.errs
		m.bytes += w.bytes
		m.lat = append(m.lat, w.lat...)
		if m.firstErr == nil {
			m.firstErr = w.err
		}
	}
	slices.Sort(m.lat)
	return m
}

// percentile returns the p-th percentile (0..100) of sorted latencies in
// microseconds, NA without any.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return NA
	}
	i := int(p / 100 * float64(len(sorted)-1))
	return float64(sorted[i]) / float64(time.Microsecond)
}

// counters is a flat snapshot of every counter a cell reads, by source
// and name ("client.sends", "server.rdma_reads", "rxe.sent_pkts").
type counters map[string]uint64

// sub returns after - before for each counter present in both.
func (after counters) sub(before counters) counters {
	d := counters{}
	for k, v := range after {
		if b, ok := before[k]; ok {
			if v >= b {
				d[k] = v - b
			} else {
				d[k] = 0
			}
		}
	}
	return d
}

// merge adds src's counters under prefix.
func (c counters) merge(prefix string, src map[string]uint64) {
	for k, v := range src {
		c[prefix+k] = v
	}
}

// perRPCOf is d[key]/rpcs, NA when the counter was not read.
func (d counters) perRPCOf(key string, rpcs uint64) float64 {
	v, ok := d[key]
	if !ok {
		return NA
	}
	return perRPC(v, rpcs)
}

// usPerRPCOf is the nanosecond counter d[key] in microseconds per RPC, NA
// when it was not read.
func (d counters) usPerRPCOf(key string, rpcs uint64) float64 {
	v := d.perRPCOf(key, rpcs)
	if v == NA {
		return NA
	}
	return v / 1e3
}

// fill sets r's rates and per-RPC figures from a measurement and the
// growth of the counters over it. The counter names are those the peers'
// snapshot functions use: client.{rpcs,sends,recvs,read_chunks,
// write_chunks,reply_chunks,local_inv,remote_inv,send_posts},
// server.{sends,rdma_reads,rdma_writes,remote_inv,send_posts,mallocs,
// cpu_ns,ctxsw}, rxe.{sent_pkts,rcvd_pkts}, vm.{busy_ns,total_ns}, and
// for our clients client.{cpu_ns,mallocs,ctxsw}.
func (r *Result) fill(m measurement, d counters) {
	r.Seconds = m.elapsed.Seconds()
	r.Ops, r.Errors = m.ops, m.errors
	if m.firstErr != nil {
		r.Err = m.firstErr.Error()
	}
	r.OpsPerS = float64(m.ops) / r.Seconds
	r.MBPerS = float64(m.bytes) / r.Seconds / 1e6
	r.P50us, r.P99us = percentile(m.lat, 50), percentile(m.lat, 99)
	rpcs := d["client.rpcs"]
	r.RPCs = rpcs
	r.RPCsPerOp = perRPC(rpcs, m.ops)
	// Sends both ways: the client's calls and the server's replies (a
	// reply is one Receive at the client when the server's Sends are not
	// counted by the server itself).
	srvSends, ok := d["server.sends"]
	if !ok {
		srvSends, ok = d["client.recvs"]
	}
	r.Sends = NA
	if ok {
		r.Sends = perRPC(d["client.sends"]+srvSends, rpcs)
	}
	r.RDMAReads = d.perRPCOf("server.rdma_reads", rpcs)
	r.RDMAWrites = d.perRPCOf("server.rdma_writes", rpcs)
	r.RemoteInv = d.perRPCOf("server.remote_inv", rpcs)
	if r.RemoteInv == NA {
		r.RemoteInv = d.perRPCOf("client.remote_inv", rpcs)
	}
	r.LocalInv = d.perRPCOf("client.local_inv", rpcs)
	r.ReadChunks = d.perRPCOf("client.read_chunks", rpcs)
	r.WriteChunks = d.perRPCOf("client.write_chunks", rpcs)
	r.ReplyChunks = d.perRPCOf("client.reply_chunks", rpcs)
	r.Packets = NA
	if s, ok := d["rxe.sent_pkts"]; ok {
		r.Packets = perRPC(s+d["rxe.rcvd_pkts"], rpcs)
	}
	r.ServerCPUus = d.usPerRPCOf("server.cpu_ns", rpcs)
	r.ServerAllocs = d.perRPCOf("server.mallocs", rpcs)
	r.ServerCtxSw = d.perRPCOf("server.ctxsw", rpcs)
	r.ServerPosts = d.perRPCOf("server.send_posts", rpcs)
	r.ClientPosts = d.perRPCOf("client.send_posts", rpcs)
	r.ClientCPUus = d.usPerRPCOf("client.cpu_ns", rpcs)
	r.ClientAllocs = d.perRPCOf("client.mallocs", rpcs)
	r.ClientCtxSw = d.perRPCOf("client.ctxsw", rpcs)
	r.VMCPUus = d.usPerRPCOf("vm.busy_ns", rpcs)
	r.VMBusyPct = NA
	if t := d["vm.total_ns"]; t > 0 {
		r.VMBusyPct = 100 * float64(d["vm.busy_ns"]) / float64(t)
	}
}
