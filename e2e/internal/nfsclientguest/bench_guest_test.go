//go:build e2eguest

package nfsclientguest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
)

// benchSize and randDur are the sizes of TestKnfsdVsKernel.
const (
	benchSize = 32 << 20
	randDur   = 4 * time.Second
	randJobs  = 16
	randBlock = 4096
)

// benchRounds is how many times TestKnfsdVsKernel measures each client on
// each workload, alternating, keeping each one's best: the host's load
// (other VMs, TCG) varies more than the clients differ.
const benchRounds = 2

// TestKnfsdVsKernel measures the Go client and the kernel's NFS client
// (mounted by rxevm-nfs-mount on the same export, same boot) on the same
// work: a sequential write of 32 MiB (to stable storage: COMMIT, fsync),
// a sequential read of it into a buffer of its size (the kernel's page
// cache dropped first), and 4 KiB random reads with 16 in flight for 4 s
// (O_DIRECT for the kernel: one READ each). Each measurement runs
// benchRounds times, the two clients alternating, and the best of each is
// kept. It reports throughput, IOPS and the ratios; it checks the data
// both ways, not the ratios (TCG timing is noisy).
func TestKnfsdVsKernel(t *testing.T) {
	exp := mount(t, nil)
	ctx := testCtx(t)
	dir, local := scratch(t, "bench")
	guesttest.Sh(t, "mkdir -p /mnt/k && (mountpoint -q /mnt/k || rxevm-nfs-mount /mnt/k)")
	t.Cleanup(func() { _, _ = guesttest.Run("umount /mnt/k") })
	data := guesttest.Pattern(benchSize, 5)
	kpath := "/mnt/k/" + dir + "/kernel"

	goWrite := func() time.Duration {
		start := time.Now()
		f, err := exp.Create(ctx, dir+"/go")
		require.NoError(t, err)
		for off := 0; off < benchSize; off += 1 << 20 {
			_, err := f.Write(data[off : off+1<<20])
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
		return time.Since(start)
	}
	kWrite := func() time.Duration {
		start := time.Now()
		kf, err := os.OpenFile(kpath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		require.NoError(t, err)
		for off := 0; off < benchSize; off += 1 << 20 {
			_, err := kf.Write(data[off : off+1<<20])
			require.NoError(t, err)
		}
		require.NoError(t, kf.Sync())
		require.NoError(t, kf.Close())
		return time.Since(start)
	}
	got := make([]byte, benchSize)
	goRead := func() time.Duration {
		clear(got)
		f, err := exp.Open(ctx, dir+"/go")
		require.NoError(t, err)
		start := time.Now()
		_, err = io.ReadFull(f, got)
		d := time.Since(start)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		guesttest.RequireData(t, data, got)
		return d
	}
	kRead := func() time.Duration {
		guesttest.Sh(t, "sync; echo 3 > /proc/sys/vm/drop_caches")
		start := time.Now()
		kgot, err := os.ReadFile(kpath)
		d := time.Since(start)
		require.NoError(t, err)
		guesttest.RequireData(t, data, kgot)
		return d
	}
	best := func(a, b time.Duration) time.Duration {
		if a == 0 || b < a {
			return b
		}
		return a
	}
	var gw, kw, gr, kr time.Duration
	for range benchRounds {
		gw, kw = best(gw, goWrite()), best(kw, kWrite())
		gr, kr = best(gr, goRead()), best(kr, kRead())
	}
	disk, err := os.ReadFile(local + "/go")
	require.NoError(t, err)
	guesttest.RequireData(t, data, disk)

	fh, _, err := exp.Lookup(ctx, dir+"/go", true)
	require.NoError(t, err)
	goRand := func(ctx context.Context, buf []byte, off int64) error {
		_, _, err := exp.Client.Read(ctx, fh, uint64(off), buf)
		return err
	}
	kd, err := os.OpenFile(kpath, os.O_RDONLY|syscall.O_DIRECT, 0)
	require.NoError(t, err)
	defer kd.Close()
	kRand := func(_ context.Context, buf []byte, off int64) error {
		_, err := kd.ReadAt(buf, off)
		return err
	}
	var goIOPS, kIOPS float64
	for range benchRounds {
		goIOPS = max(goIOPS, randomReads(t, goRand))
		kIOPS = max(kIOPS, randomReads(t, kRand))
	}

	// Where the Go client's time goes: one more pass of each workload
	// under the CPU profiler, read on the host (e2e's TestNFSClientKnfsd
	// prints go tool pprof -top of each: its samples against the wall
	// time show how busy the client's own process was).
	for _, p := range []struct {
		name string
		run  func() string
	}{
		{"write", func() string {
			return fmt.Sprintf("seq write 32 MiB: %.1f MiB/s", benchSize/(1<<20)/goWrite().Seconds())
		}},
		{"read", func() string { return fmt.Sprintf("seq read 32 MiB: %.1f MiB/s", benchSize/(1<<20)/goRead().Seconds()) }},
		{"random", func() string { return fmt.Sprintf("random 4 KiB reads x16: %.0f IOPS", randomReads(t, goRand)) }},
	} {
		f, err := os.Create("/host/goclient-" + p.name + ".pprof")
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
		what := p.run()
		pprof.StopCPUProfile()
		require.NoError(t, f.Close())
		report(t, "profiled Go %s (goclient-%s.pprof)", what, p.name)
	}

	mibs := func(d time.Duration) float64 { return benchSize / (1 << 20) / d.Seconds() }
	report(t, "seq write 32 MiB: Go %.1f MiB/s, kernel %.1f MiB/s, ratio %.2f", mibs(gw), mibs(kw), mibs(gw)/mibs(kw))
	report(t, "seq read 32 MiB: Go %.1f MiB/s, kernel %.1f MiB/s, ratio %.2f", mibs(gr), mibs(kr), mibs(gr)/mibs(kr))
	report(t, "random 4 KiB reads x16: Go %.0f IOPS, kernel %.0f IOPS, ratio %.2f", goIOPS, kIOPS, goIOPS/kIOPS)
}

// randomReads runs randJobs readers of randBlock bytes at random aligned
// offsets for randDur and returns the reads per second.
func randomReads(t *testing.T, read func(context.Context, []byte, int64) error) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), randDur)
	defer cancel()
	var ops atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, randJobs)
	start := time.Now()
	for range randJobs {
		wg.Go(func() {
			buf := alignedBuf(randBlock)
			for ctx.Err() == nil {
				off := rand.Int64N(benchSize/randBlock) * randBlock
				if err := read(ctx, buf, off); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return float64(ops.Load()) / time.Since(start).Seconds()
}

// alignedBuf returns n bytes aligned to 4096, as O_DIRECT wants.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := int(4096 - uintptr(unsafe.Pointer(&b[0]))%4096)
	return b[off%4096 : off%4096+n]
}
