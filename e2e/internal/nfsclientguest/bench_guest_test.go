//go:build e2eguest

package nfsclientguest

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// benchSize and randDur are the sizes of TestKnfsdVsKernel.
const (
	benchSize = 32 << 20
	randDur   = 4 * time.Second
	randJobs  = 16
	randBlock = 4096
)

// TestKnfsdVsKernel measures the Go client and the kernel's NFS client
// (mounted by rxevm-nfs-mount on the same export, same boot) on the same
// work: a sequential write of 32 MiB (to stable storage: COMMIT, fsync),
// a sequential read of it (the kernel's page cache dropped first), and 4
// KiB random reads with 16 in flight for 4 s (O_DIRECT for the kernel:
// one READ each; two rounds each, alternating, the best kept). It reports throughput, IOPS and the ratios; it checks
// the data both ways, not the ratios (TCG timing is noisy).
func TestKnfsdVsKernel(t *testing.T) {
	exp := mount(t, nil)
	ctx := testCtx(t)
	dir, local := scratch(t, "bench")
	sh(t, "mkdir -p /mnt/k && (mountpoint -q /mnt/k || rxevm-nfs-mount /mnt/k)")
	t.Cleanup(func() { _ = execCommand("umount /mnt/k") })
	data := pattern(benchSize, 5)

	// Go client: write, read, random reads.
	start := time.Now()
	f, err := exp.Create(ctx, dir+"/go")
	require.NoError(t, err)
	for off := 0; off < benchSize; off += 1 << 20 {
		_, err := f.Write(data[off : off+1<<20])
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	goWrite := time.Since(start)
	f, err = exp.Open(ctx, dir+"/go")
	require.NoError(t, err)
	// Into a buffer of the file's size, as os.ReadFile does for the
	// kernel client below.
	got := make([]byte, benchSize)
	start = time.Now()
	_, err = io.ReadFull(f, got)
	goRead := time.Since(start)
	require.NoError(t, err)
	requireData(t, data, got)
	fh := f.Handle()
	require.NoError(t, f.Close())
	goRand := func(ctx context.Context, buf []byte, off int64) error {
		_, _, err := exp.Client.Read(ctx, fh, uint64(off), buf)
		return err
	}

	// Kernel client on /mnt/k (same export, same file size).
	kpath := "/mnt/k/" + dir + "/kernel"
	start = time.Now()
	kf, err := os.OpenFile(kpath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	for off := 0; off < benchSize; off += 1 << 20 {
		_, err := kf.Write(data[off : off+1<<20])
		require.NoError(t, err)
	}
	require.NoError(t, kf.Sync())
	require.NoError(t, kf.Close())
	kWrite := time.Since(start)
	sh(t, "sync; echo 3 > /proc/sys/vm/drop_caches")
	start = time.Now()
	kgot, err := os.ReadFile(kpath)
	kRead := time.Since(start)
	require.NoError(t, err)
	requireData(t, data, kgot)
	disk, err := os.ReadFile(local + "/go")
	require.NoError(t, err)
	requireData(t, data, disk)
	kd, err := os.OpenFile(kpath, os.O_RDONLY|syscall.O_DIRECT, 0)
	require.NoError(t, err)
	defer kd.Close()
	kRand := func(_ context.Context, buf []byte, off int64) error {
		_, err := kd.ReadAt(buf, off)
		return err
	}
	// The host's load varies (other VMs, TCG): alternate the two clients
	// and keep each one's best round.
	var goIOPS, kIOPS float64
	for range 2 {
		goIOPS = max(goIOPS, randomReads(t, goRand))
		kIOPS = max(kIOPS, randomReads(t, kRand))
	}

	mibs := func(d time.Duration) float64 { return benchSize / (1 << 20) / d.Seconds() }
	report(t, "seq write 32 MiB: Go %.1f MiB/s, kernel %.1f MiB/s, ratio %.2f", mibs(goWrite), mibs(kWrite), mibs(goWrite)/mibs(kWrite))
	report(t, "seq read 32 MiB: Go %.1f MiB/s, kernel %.1f MiB/s, ratio %.2f", mibs(goRead), mibs(kRead), mibs(goRead)/mibs(kRead))
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
