//go:build e2eguest

package nfsdguest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// starveFor is how long TestStarved loads the mount (the host test sets
// it from $RPCRDMA_STARVE_FOR).
var starveFor = flag.Duration("starve-for", 45*time.Second, "how long TestStarved loads the mount")

// starvedMetrics is where the rdma-nfsd of TestStarved serves /metrics.
const starvedMetrics = "127.0.0.1:20053"

// starvedSlowOp is the operation length TestStarved reports: a call the
// server never answers holds its operation for the client's timeo (5 s)
// and then a reconnect.
const starvedSlowOp = 5 * time.Second

// TestStarved hunts the lost reply of issue 29: the kernel client, its
// attribute cache off (noac, actimeo=0), lists a directory that another
// worker keeps changing, stats its entries, and writes and reads back
// files, for -starve-for, while busy processes take every guest CPU (and
// the host test's busy goroutines the host's). Every call rdma-nfsd
// received must be answered: its rpcrdma_unanswered_total is 0 once the
// mount is gone, and the client never reconnected (connect_count 1).
// Calls, slow replies (answered later than transport.DefaultSlowReply)
// and the slowest operation are reported.
func TestStarved(t *testing.T) {
	requireGuest(t)
	export, mnt := t.TempDir(), "/mnt/rdma-nfsd-starved"
	startNfsd(t, export, mnt, "starved", "-metrics", starvedMetrics)
	mountWith(t, serverAddr+":/", mnt, mountOpts+",noac,actimeo=0")
	dir := filepath.Join(mnt, "dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	stopBusy := busyCPUs(t, 2*runtime.NumCPU())
	limit := *starveFor + 3*time.Minute
	watchdog := time.AfterFunc(limit, func() {
		t.Errorf("the load did not end in %v: unmounting by force (hang report below)", limit)
		_, _ = runFor(15*time.Second, "umount -f -l "+mnt)
		hung("TestStarved")
	})
	defer watchdog.Stop()

	var w starvedWork
	end := time.Now().Add(*starveFor)
	var wg sync.WaitGroup
	wg.Go(func() { w.churn(t, dir, end) })
	wg.Go(func() { w.list(t, dir, end) })
	for i := range 2 {
		wg.Go(func() { w.writeRead(t, filepath.Join(mnt, "data"+strconv.Itoa(i)), uint64(i), end) })
	}
	wg.Wait()
	stopBusy()
	x := xprt(t, mnt)
	umount(t, mnt)
	watchdog.Stop()

	m := waitIdleMetrics(t)
	t.Logf("RDMANFSD starved %v on %d guest CPUs with %d busy processes: %d operations (slowest %v, %d over %v); server: %.0f calls received, %.0f slow replies, %.0f unanswered; client: connect_count %d, sends %d",
		*starveFor, runtime.NumCPU(), 2*runtime.NumCPU(), w.ops.Load(), time.Duration(w.slowest.Load()), w.slow.Load(), starvedSlowOp,
		m["rpcrdma_recvs_total"], m["rpcrdma_slow_replies_total"], m["rpcrdma_unanswered_total"], x["connect_count"], x["sends"])
	if m["rpcrdma_unanswered_total"] != 0 {
		t.Errorf("rdma-nfsd left %.0f calls unanswered", m["rpcrdma_unanswered_total"])
	}
	if x["connect_count"] != 1 {
		t.Errorf("the client connected %d times: it gave up on a call and reconnected", x["connect_count"])
	}
	if w.ops.Load() == 0 || m["rpcrdma_recvs_total"] == 0 {
		t.Errorf("no load: %d operations, %.0f calls received", w.ops.Load(), m["rpcrdma_recvs_total"])
	}
}

// starvedWork counts the operations of TestStarved's workers.
type starvedWork struct {
	ops, slow, slowest atomic.Int64
}

// op runs f as one operation and counts it; an error fails t.
func (w *starvedWork) op(t *testing.T, what string, f func() error) bool {
	t0 := time.Now()
	err := f()
	d := time.Since(t0)
	w.ops.Add(1)
	for {
		s := w.slowest.Load()
		if int64(d) <= s || w.slowest.CompareAndSwap(s, int64(d)) {
			break
		}
	}
	if d > starvedSlowOp {
		w.slow.Add(1)
		t.Logf("RDMANFSD starved: %s took %v", what, d.Round(time.Millisecond))
	}
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return false
	}
	return true
}

// churn creates, renames and removes files in dir until end, keeping
// about 16 of them.
func (w *starvedWork) churn(t *testing.T, dir string, end time.Time) {
	for i := 0; time.Now().Before(end); i++ {
		f, g := filepath.Join(dir, fmt.Sprintf("f%d", i)), filepath.Join(dir, fmt.Sprintf("g%d", i))
		ok := w.op(t, "create "+f, func() error { return os.WriteFile(f, []byte(f), 0o644) }) &&
			w.op(t, "rename "+f, func() error { return os.Rename(f, g) })
		if ok && i >= 16 {
			old := filepath.Join(dir, fmt.Sprintf("g%d", i-16))
			ok = w.op(t, "remove "+old, func() error { return os.Remove(old) })
		}
		if !ok {
			return
		}
	}
}

// list lists dir and stats each entry until end; an entry removed
// between the two is no error.
func (w *starvedWork) list(t *testing.T, dir string, end time.Time) {
	for time.Now().Before(end) {
		var names []os.DirEntry
		if !w.op(t, "readdir "+dir, func() (err error) { names, err = os.ReadDir(dir); return err }) {
			return
		}
		for _, e := range names {
			p := filepath.Join(dir, e.Name())
			if !w.op(t, "stat "+p, func() error {
				if _, err := os.Lstat(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				return nil
			}) {
				return
			}
		}
	}
}

// writeRead writes path with 4 KiB to 1 MiB of data and reads it back
// until end.
func (w *starvedWork) writeRead(t *testing.T, path string, seed uint64, end time.Time) {
	r := rand.New(rand.NewPCG(seed, 29))
	for time.Now().Before(end) {
		data := make([]byte, 4096+r.IntN(1<<20-4096))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		var got []byte
		if !w.op(t, "write "+path, func() error { return os.WriteFile(path, data, 0o644) }) ||
			!w.op(t, "read "+path, func() (err error) { got, err = os.ReadFile(path); return err }) {
			return
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: read back %d bytes that differ from the %d written", path, len(got), len(data))
			return
		}
	}
}

// busyCPUs starts n busy processes and returns the function that ends
// them (also a cleanup).
func busyCPUs(t *testing.T, n int) (stop func()) {
	t.Helper()
	var cmds []*exec.Cmd
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		})
	}
	t.Cleanup(stop)
	for range n {
		c := exec.Command("bash", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatalf("starting a busy process: %v", err)
		}
		cmds = append(cmds, c)
	}
	return stop
}

// waitIdleMetrics waits until rdma-nfsd has no RDMA connection left (its
// calls' fate is then counted) and returns its counters and gauges
// without labels, and the connection gauge as
// rdma_nfsd_connections{network="rdma"}.
func waitIdleMetrics(t *testing.T) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := scrapeMetrics(t)
		if m[`rdma_nfsd_connections{network="rdma"}`] == 0 {
			return m
		}
		if time.Now().After(deadline) {
			t.Errorf("rdma-nfsd still has %.0f RDMA connections 30 s after the unmount", m[`rdma_nfsd_connections{network="rdma"}`])
			return m
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scrapeMetrics reads rdma-nfsd's /metrics as Prometheus does.
func scrapeMetrics(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + starvedMetrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := name
			if ls := m.GetLabel(); len(ls) == 1 {
				key += "{" + ls[0].GetName() + "=" + strconv.Quote(ls[0].GetValue()) + "}"
			} else if len(ls) > 1 {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
