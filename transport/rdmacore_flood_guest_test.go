//go:build e2eguest && linux && cgo

// The test in this file runs inside the project's Soft-RoCE VM, started by
// e2e/rdmacore_flood_test.go: issue 29's flood of half-open peers over
// rdma-core on rxe, from rxe1 (10.0.0.2) to a Listener on rxe0 (10.0.0.1),
// where the IB CM's own timers (REP retries) apply.

package transport

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// TestRdmacoreHalfOpenFlood: 1,000 half-open peers (rdmacore.DialHalfOpen:
// a REQ, then no RTU) from 8 goroutines against a Listener with the
// default settings; 10 real Dials after them (once the queue pairs on
// rxe0 settled: their number unchanged for a second) must each connect
// and be served, within the handshake timeout. It prints the Dial
// latencies, and the heap and registered memory the flood adds: the heap
// bounded by haFloodHeapSlack, as on the soft provider, the registered
// memory by twice the backlog's worth of what one half-open handshake
// registers (measured first) and the provider's spare regions
// (SpareLimit); once the peers are gone, the spares are freed and the
// registered memory is back to idle. During the flood the Listener's
// backlog must fill and never exceed DefaultAcceptBacklog. How many
// requests rxe and the IB CM drop before they reach the Listener is
// reported, not bounded: the project does not control it, and a busy host
// makes it grow (0-13 of 1,000 on an idle host, 105 on a busy one). Then
// knfsd (rxevm-nfsd-start) gets the same flood and 10 Dials: our slowest
// Dial fails the test only if it is over floodDialSlow and over
// floodParity times knfsd's slowest in the same boot.
func TestRdmacoreHalfOpenFlood(t *testing.T) {
	prov := &rdmacore.Provider{}
	dialer := &rdmacore.Provider{LocalAddr: "10.0.0.2"}
	l, accepted := haListenAt(t, "10.0.0.1:0", Config{Provider: prov})
	addr := l.Addr().String()
	haDialsWith(t, l, dialer, accepted, 1)
	heap0 := haHeap()
	reg0 := prov.RegisteredBytes()
	avail0 := memAvailable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// What one half-open handshake keeps registered on rdma-core.
	waitHandshakes := func(n int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for l.Stats().Handshakes != n {
			if time.Now().After(deadline) {
				t.Fatalf("stats %+v: want %d handshakes in progress", l.Stats(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	one, err := rdmacore.DialHalfOpen(ctx, addr, "10.0.0.2", hpLinuxClientPD)
	if err != nil {
		t.Fatal(err)
	}
	// Its handshake counts from the request on; its buffers are
	// registered a moment later, one region after the other. Once its
	// peer has gone and the handshake ended, all it registered is kept as
	// spare regions (the connection was never established): the measure.
	waitHandshakes(1)
	deadline := time.Now().Add(time.Minute)
	for prov.RegisteredBytes() == reg0 {
		if time.Now().After(deadline) {
			t.Fatal("a half-open handshake registered nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = one.Close()
	waitHandshakes(0)
	perHandshake := prov.SpareBytes()
	if perHandshake == 0 || prov.RegisteredBytes()-reg0 != perHandshake {
		t.Fatalf("after one half-open handshake: %d B spare, %d B registered over idle; want the same, not 0",
			perHandshake, prov.RegisteredBytes()-reg0)
	}
	// The Listener's bound: the newest DefaultAcceptBacklog handshakes,
	// and as many evicted or timed out ones still ending; and the
	// provider's spare regions.
	regBound := 2*DefaultAcceptBacklog*perHandshake + rdmacore.SpareLimit
	handled := func(st ListenerStats) int {
		return st.Handshakes + int(st.HandshakesEvicted+st.HandshakeTimeouts+st.HandshakeFailures)
	}
	before := handled(l.Stats()) // the one above
	start := time.Now()
	mon := watchListener(l)
	defer mon.stop()
	peers := halfOpenFlood(ctx, t, addr, "")
	defer closeHalfOpen(peers)
	sent := time.Since(start)
	// The requests reach the Listener: the newest hold the backlog, the
	// others are evicted (or, on a host slow enough, time out). Some may
	// never reach it: the provider's own queue (rdma_listen's backlog)
	// rejects requests beyond 128 not yet taken, and rxe and the IB CM
	// drop some when the guest is starved of CPU. The project controls
	// none of that: the number lost is reported, not bounded. Done when
	// all are accounted for, or when the count has not moved for 2 s (a
	// longer wait would let the backlog's handshakes time out), or after
	// a minute.
	deadline = time.Now().Add(time.Minute)
	total, moved := -1, time.Now()
	for total < haFlood && time.Since(moved) <= 2*time.Second && time.Now().Before(deadline) {
		if n := handled(l.Stats()) - before; n != total {
			total, moved = n, time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	lost := haFlood - total
	// What the Listener guarantees, whatever the CM delivered: the
	// backlog's places are never exceeded, and the resources of at most
	// twice as many handshakes exist at once. The flood must have filled
	// the backlog, or it tested nothing.
	peakBacklog, peakSetups := mon.peaks()
	if peakBacklog > DefaultAcceptBacklog || peakSetups > 2*DefaultAcceptBacklog {
		t.Errorf("during the flood: up to %d handshakes and queued connections, resources of up to %d handshakes; bounds %d and %d",
			peakBacklog, peakSetups, DefaultAcceptBacklog, 2*DefaultAcceptBacklog)
	}
	if peakBacklog < DefaultAcceptBacklog {
		t.Errorf("the flood never filled the backlog: at most %d of %d places taken (%d of %d requests reached the Listener); stats %+v",
			peakBacklog, DefaultAcceptBacklog, total, haFlood, l.Stats())
	}
	flooded := time.Since(start)
	// The Dials come once the queue pairs on rxe0 settled, as against
	// knfsd below: the same moment of the same flood for both.
	qpSettled, qpPeak, settled := rxeSettle(t, start)
	heapFlood := haHeap()
	regFlood := prov.RegisteredBytes() - reg0
	if heapFlood > heap0+haFloodHeapSlack {
		t.Errorf("live heap %d B over idle during the flood, bound %d", heapFlood-heap0, haFloodHeapSlack)
	}
	if regFlood > regBound {
		t.Errorf("%d B registered over idle during the flood, bound %d (2 x %d handshakes x %d B, and %d B of spares)",
			regFlood, regBound, DefaultAcceptBacklog, perHandshake, rdmacore.SpareLimit)
	}

	tokens := len(l.setups)
	inOrder := haDialsInOrder(t, l, dialer, accepted, 10)
	took := slices.Sorted(slices.Values(inOrder))
	t.Logf("FLOOD rdmacore: %d half-open peers sent in %v, handled in %v (%d lost before the Listener: dropped by rxe or the CM, %.1f%%), backlog peak %d, queue pairs on rxe0 settled at %d (peak %d) after %v; %d handshakes holding resources; 10 real Dials after them: min %v, median %v, max %v (in order: %v); live heap %+.1f MiB, registered %+.1f MiB over idle during the flood, of which %.1f MiB spare (one half-open handshake: %.2f MiB; bound %.0f MiB); guest MemAvailable %+.0f MiB; stats %+v",
		haFlood, sent, flooded, lost, 100*float64(lost)/haFlood, peakBacklog, qpSettled, qpPeak, settled, tokens, took[0], took[len(took)/2], took[len(took)-1], inOrder,
		(float64(heapFlood)-float64(heap0))/(1<<20), float64(regFlood)/(1<<20), float64(prov.SpareBytes())/(1<<20),
		float64(perHandshake)/(1<<20), float64(regBound)/(1<<20), float64(memAvailable(t)-avail0)/(1<<20), l.Stats())

	for i, h := range peers {
		_ = h.Close()
		peers[i] = nil
	}
	deadline = time.Now().Add(2 * time.Minute)
	for l.Stats().Handshakes != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("handshakes still in progress after the peers left: %+v", l.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := l.Stats()
	t.Logf("FLOOD rdmacore after the peers left: registered %+.1f MiB over idle, of which %.1f MiB spare; stats %+v",
		float64(prov.RegisteredBytes()-reg0)/(1<<20), float64(prov.SpareBytes())/(1<<20), st)
	if st.Accepted != 11 || st.RejectedBacklog != 0 || st.RejectedCap != 0 {
		t.Errorf("stats %+v: want 11 accepted, none rejected", st)
	}
	// The spares go SpareIdle after the last handshake ended.
	deadline = time.Now().Add(rdmacore.SpareIdle + time.Minute)
	for prov.SpareBytes() != 0 || prov.RegisteredBytes() > reg0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d B spare, %d B registered over idle a minute after the flood", prov.SpareBytes(), prov.RegisteredBytes()-reg0)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The kernel's server under the same flood, in the same boot (so
	// under the same host load): ours must not be both slow in absolute
	// terms and far slower than knfsd.
	knfsd := knfsdFlood(t, dialer)
	ours := took[len(took)-1]
	t.Logf("FLOOD parity: slowest of 10 Dials after %d half-open peers: ours %v, knfsd %s; ours/knfsd %s",
		haFlood, ours, knfsd.slowest(), knfsd.ratio(ours))
	if ours > floodDialSlow && knfsd.failed == 0 && ours > floodParity*knfsd.max {
		t.Errorf("our slowest Dial after the flood took %v: over %v and over %d x knfsd's %v in the same boot",
			ours, floodDialSlow, floodParity, knfsd.max)
	}
}

// floodDialSlow and floodParity are TestRdmacoreHalfOpenFlood's guard on
// the Dials after the flood, beyond their success within the handshake
// timeout: our slowest Dial fails the test only if it took over
// floodDialSlow and over floodParity times knfsd's slowest in the same
// boot. On an idle host ours took 14-700 ms, 1.1-12.5x knfsd's; a host
// busy with other work slows both, and the Dial during the teardown of
// evicted handshakes has taken 2.7 s (22x). The figures are reported in
// any case (FLOOD parity).
const (
	floodDialSlow = DefaultHandshakeTimeout / 2
	floodParity   = 20
)

// knfsdAddr is knfsd's NFS/RDMA listener in the VM (rxevm-nfsd-start).
const knfsdAddr = "10.0.0.1:20049"

// knfsdDials is what the Dials to knfsd after its flood measured.
type knfsdDials struct {
	took   []time.Duration // of the Dials that connected, in order
	max    time.Duration
	failed int
}

func (k knfsdDials) slowest() string {
	if k.failed > 0 {
		return fmt.Sprintf("%v (%d of 10 Dials failed)", k.max, k.failed)
	}
	return k.max.String()
}

func (k knfsdDials) ratio(ours time.Duration) string {
	if k.failed > 0 || k.max == 0 {
		return "n/a (knfsd's Dials failed)"
	}
	return fmt.Sprintf("%.2f", float64(ours)/float64(k.max))
}

// knfsdFlood sends haFlood half-open requests to knfsd, as to our
// Listener, waits until the kernel created the queue pairs it will for
// them, and makes 10 Dials with p, each within DefaultHandshakeTimeout.
func knfsdFlood(t *testing.T, p verbs.Provider) knfsdDials {
	t.Helper()
	// Is knfsd there?
	var k knfsdDials
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Dial(ctx, knfsdAddr, &Config{Provider: p})
	if err != nil {
		t.Fatalf("knfsd (rxevm-nfsd-start) does not answer on %s: %v", knfsdAddr, err)
	}
	_ = c.Close()
	qp0 := rxeQPs(t)
	avail0 := memAvailable(t)
	start := time.Now()
	peers := halfOpenFlood(ctx, t, knfsdAddr, " of knfsd")
	defer closeHalfOpen(peers)
	sent := time.Since(start)
	// Handled: knfsd creates a queue pair for each request it accepts.
	last, peak, handled := rxeSettle(t, start)
	availFlood := memAvailable(t)
	for i := range 10 {
		dctx, dcancel := context.WithTimeout(ctx, DefaultHandshakeTimeout)
		t0 := time.Now()
		c, err := Dial(dctx, knfsdAddr, &Config{Provider: p})
		d := time.Since(t0)
		dcancel()
		k.max = max(k.max, d)
		if err != nil {
			t.Logf("FLOOD knfsd: Dial %d after the flood failed after %v: %v", i, d, err)
			k.failed++
			continue
		}
		k.took = append(k.took, d)
		_ = c.Close()
	}
	took := slices.Sorted(slices.Values(k.took))
	if len(took) == 0 {
		took = []time.Duration{0}
	}
	t.Logf("FLOOD knfsd: %d half-open peers sent in %v, queue pairs on rxe0 settled at %d (peak %d, %d before) after %v; 10 Dials after them: %d failed, min %v, median %v, max %v (in order: %v); guest MemAvailable %+.0f MiB during the flood",
		haFlood, sent, last, peak, qp0, handled, k.failed, took[0], took[len(took)/2], k.max, k.took,
		float64(availFlood-avail0)/(1<<20))
	return k
}

// rxeSettle waits until the number of queue pairs on rxe0 has not changed
// for a second (within two minutes of start) and returns it, the most
// seen meanwhile and the time since start.
func rxeSettle(t *testing.T, start time.Time) (n, peak int, d time.Duration) {
	t.Helper()
	n = rxeQPs(t)
	peak = n
	for stable := time.Now(); time.Since(stable) < time.Second && time.Since(start) < 2*time.Minute; {
		time.Sleep(100 * time.Millisecond)
		m := rxeQPs(t)
		peak = max(peak, m)
		if m != n {
			n, stable = m, time.Now()
		}
	}
	return n, peak, time.Since(start)
}

// rxeQPs returns the number of queue pairs on rxe0 (rdma resource show).
func rxeQPs(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("rdma", "resource", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma resource show: %v: %s", err, out)
	}
	m := regexp.MustCompile(`rxe0: .*\bqp (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("rdma resource show: no qp count for rxe0 in %q", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// memAvailable returns the guest's MemAvailable (/proc/meminfo) in bytes.
func memAvailable(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`MemAvailable:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no MemAvailable in /proc/meminfo")
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n << 10
}

// listenerWatch samples a Listener's backlog (handshakes in progress and
// connections queued) and the handshakes holding resources every 5
// milliseconds, keeping the largest of each.
type listenerWatch struct {
	backlog, setups atomic.Int64
	done            chan struct{}
	ended           sync.WaitGroup
}

// watchListener starts sampling l until stop.
func watchListener(l *Listener) *listenerWatch {
	w := &listenerWatch{done: make(chan struct{})}
	w.ended.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			st := l.Stats()
			raise(&w.backlog, int64(st.Handshakes+st.Queued))
			raise(&w.setups, int64(len(l.setups)))
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	})
	return w
}

// raise sets v to n if n is larger.
func raise(v *atomic.Int64, n int64) {
	for o := v.Load(); n > o && !v.CompareAndSwap(o, n); o = v.Load() {
	}
}

// peaks returns the largest backlog and number of handshakes holding
// resources seen so far.
func (w *listenerWatch) peaks() (backlog, setups int) {
	return int(w.backlog.Load()), int(w.setups.Load())
}

// stop ends the sampling; it may be called more than once.
func (w *listenerWatch) stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.ended.Wait()
}

// haDialsInOrder is haDialsWith returning the latencies in the order of the
// Dials.
func haDialsInOrder(t *testing.T, l *Listener, p verbs.Provider, accepted <-chan *Conn, n int) []time.Duration {
	t.Helper()
	var took []time.Duration
	for range n {
		took = append(took, haDialsWith(t, l, p, accepted, 1)...)
	}
	return took
}

// halfOpenFlood sends haFlood half-open connection requests
// (rdmacore.DialHalfOpen) to addr from eight goroutines and returns the
// peers; the test fails at once if one cannot be sent. what names the
// listener in an error.
func halfOpenFlood(ctx context.Context, t *testing.T, addr, what string) []*rdmacore.HalfOpen {
	t.Helper()
	peers := make([]*rdmacore.HalfOpen, haFlood)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < haFlood; i += 8 {
				h, err := rdmacore.DialHalfOpen(ctx, addr, "10.0.0.2", hpLinuxClientPD)
				if err != nil {
					t.Errorf("half-open peer %d%s: %v", i, what, err)
					return
				}
				peers[i] = h
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		closeHalfOpen(peers)
		t.FailNow()
	}
	return peers
}

// closeHalfOpen closes the peers not closed yet.
func closeHalfOpen(peers []*rdmacore.HalfOpen) {
	for _, h := range peers {
		if h != nil {
			_ = h.Close()
		}
	}
}
