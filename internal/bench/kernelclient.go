package bench

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// kernelClient is the Linux NFSv3 client (xprtrdma) on rxe1. Its inline
// offer is set with /proc/sys/sunrpc/rdma_max_inline_read and
// rdma_max_inline_write before each mount.
type kernelClient struct {
	mnt   string
	proto string // of the current mount: "rdma" or "tcp"
	// server is the IPv4 address mount names the server by ("" is
	// vmServerIP).
	server string
}

const sunrpc = "/proc/sys/sunrpc/"

// readFileSize is the file the READ cells read at random offsets (and the
// span each WRITE worker writes over).
const readFileSize = 16 << 20

// mount mounts srv's export on k.mnt offering inline each way. noac makes
// every fstat a GETATTR; timeo=50 as in every RDMA mount of the VM tests
// (rxe in 6.1 now and then fails a fast-register, and xprtrdma resends
// after timeo).
func (k *kernelClient) mount(srv server, inline int) error {
	k.proto = srv.proto()
	if k.proto == "rdma" {
		if err := writeSysctl(sunrpc+"rdma_max_inline_read", inline); err != nil {
			return err
		}
		if err := writeSysctl(sunrpc+"rdma_max_inline_write", inline); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(k.mnt, 0o755); err != nil {
		return err
	}
	path, _ := srv.export()
	opts := "vers=3,proto=" + k.proto + ",noac," + srv.mountOpts()
	if k.proto == "rdma" {
		opts += ",timeo=50"
	}
	server := k.server
	if server == "" {
		server = vmServerIP
	}
	return sh(60*time.Second, "mount -t nfs -o "+opts+" "+server+":"+path+" "+k.mnt)
}

func (k *kernelClient) umount() error {
	if err := sh(60*time.Second, "umount "+k.mnt); err != nil {
		_ = sh(15*time.Second, "umount -f -l "+k.mnt)
		return err
	}
	return nil
}

// xprt reads the mount's "xprt: rdma" counters.
func (k *kernelClient) xprt() (map[string]uint64, string, error) {
	raw, err := os.ReadFile("/proc/self/mountstats")
	if err != nil {
		return nil, "", err
	}
	return parseXprt(string(raw), k.mnt)
}

// snapshot is the client's counters under the names fill expects.
func (k *kernelClient) snapshot() (map[string]uint64, error) {
	if k.proto == "tcp" {
		raw, err := os.ReadFile("/proc/self/mountstats")
		if err != nil {
			return nil, err
		}
		x, err := parseXprtTCP(string(raw), k.mnt)
		if err != nil {
			return nil, err
		}
		return map[string]uint64{"rpcs": x["sends"]}, nil
	}
	x, _, err := k.xprt()
	if err != nil {
		return nil, err
	}
	return map[string]uint64{"rpcs": x["sends"], "sends": x["sends"], "recvs": x["recvs"],
		"read_chunks": x["read_chunk_count"], "write_chunks": x["write_chunk_count"],
		"reply_chunks": x["reply_chunk_count"], "local_inv": x["local_inv_needed"]}, nil
}

// writeReadFile writes the readFileSize bytes of random data that READ
// cells read, in 1 MiB writes.
func writeReadFile(w io.Writer) error {
	buf := make([]byte, 1<<20)
	_, _ = crand.Read(buf)
	for off := 0; off < readFileSize; off += len(buf) {
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// prepare creates the files the cells of one mount use: the file READ
// cells read.
func (k *kernelClient) prepare() error {
	f, err := os.Create(filepath.Join(k.mnt, "rfile"))
	if err != nil {
		return err
	}
	if err := writeReadFile(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// alignedBuf returns n bytes of page-aligned memory (O_DIRECT).
func alignedBuf(n int) ([]byte, error) {
	size := (n + 4095) &^ 4095
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return b[:n], nil
}

// ops returns the operation of a kernel-client cell and what undoes its
// set-up: O_DIRECT pread and pwrite (one NFS READ or WRITE each), fstat on
// the noac mount (one GETATTR), and create+write+close of small files.
func (k *kernelClient) ops(c Cell) (opFunc, func(), error) {
	var fds []int
	var bufs [][]byte
	cleanup := func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		for _, b := range bufs {
			_ = unix.Munmap(b[:cap(b)])
		}
	}
	fail := func(err error) (opFunc, func(), error) { cleanup(); return nil, nil, err }
	rfile := filepath.Join(k.mnt, "rfile")
	for w := 0; w < c.InFlight; w++ {
		if c.Size > 0 {
			b, err := alignedBuf(c.Size)
			if err != nil {
				return fail(err)
			}
			_, _ = crand.Read(b)
			bufs = append(bufs, b)
		}
		var fd int
		var err error
		switch c.Workload {
		case WorkRead:
			fd, err = unix.Open(rfile, unix.O_RDONLY|unix.O_DIRECT, 0)
		case WorkWrite:
			fd, err = unix.Open(filepath.Join(k.mnt, fmt.Sprintf("wfile-%d", w)), unix.O_WRONLY|unix.O_CREAT|unix.O_DIRECT, 0o644)
		case WorkGetattr:
			fd, err = unix.Open(rfile, unix.O_RDONLY, 0)
		case WorkCreate:
			fd = -1
		default:
			return fail(fmt.Errorf("the kernel client has no %s workload", c.Workload))
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %w", c.Workload, err))
		}
		if fd >= 0 {
			fds = append(fds, fd)
		}
	}
	slots := max(1, readFileSize/max(c.Size, 1))
	switch c.Workload {
	case WorkRead:
		rngs := workerRands(c.InFlight)
		return func(w int) (int, error) {
			off := int64(rngs[w].IntN(slots)) * int64(c.Size)
			n, err := unix.Pread(fds[w], bufs[w], off)
			if err == nil && n != c.Size {
				err = fmt.Errorf("short read: %d of %d bytes", n, c.Size)
			}
			return n, err
		}, cleanup, nil
	case WorkWrite:
		next := make([]int64, c.InFlight)
		// The files go after the cell: a run writes up to
		// readFileSize per file and in flight, and the exports are
		// tmpfs in the VM's memory.
		removeFiles := func() {
			cleanup()
			for w := range c.InFlight {
				_ = os.Remove(filepath.Join(k.mnt, fmt.Sprintf("wfile-%d", w)))
			}
		}
		return func(w int) (int, error) {
			off := next[w] % int64(slots) * int64(c.Size)
			next[w]++
			n, err := unix.Pwrite(fds[w], bufs[w], off)
			if err == nil && n != c.Size {
				err = fmt.Errorf("short write: %d of %d bytes", n, c.Size)
			}
			return n, err
		}, removeFiles, nil
	case WorkGetattr:
		return func(w int) (int, error) {
			var st unix.Stat_t
			return 0, unix.Fstat(fds[w], &st)
		}, cleanup, nil
	}
	// WorkCreate: new files in a directory of the cell's own.
	dir := filepath.Join(k.mnt, fmt.Sprintf("create-%d-%d-%d", c.Inline, c.InFlight, time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fail(err)
	}
	var seq atomic.Uint64
	return func(w int) (int, error) {
		name := filepath.Join(dir, fmt.Sprintf("f%d", seq.Add(1)))
		fd, err := unix.Open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
		if err != nil {
			return 0, err
		}
		n, err := unix.Write(fd, bufs[w])
		if cerr := unix.Close(fd); err == nil {
			err = cerr
		}
		return n, err
	}, func() { cleanup(); _ = os.RemoveAll(dir) }, nil
}

// workerRands gives each worker its own generator (no lock between them).
func workerRands(n int) []*rand.Rand {
	rs := make([]*rand.Rand, n)
	for i := range rs {
		rs[i] = rand.New(rand.NewPCG(uint64(i)+1, 0x9e3779b97f4a7c15))
	}
	return rs
}

// sh runs a shell command in the guest with a time limit; its output is
// part of the error.
func sh(limit time.Duration, command string) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "-c", command).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", command, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// shOut runs a shell command and returns its output.
func shOut(limit time.Duration, command string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "-c", command).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", command, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// rxeCounters is where the kernel exposes the client device's counters
// (the same ones "rdma statistic" prints).
const rxeCounters = "/sys/class/infiniband/rxe1/ports/1/hw_counters/"

// rxeSnapshot reads the client device's packet counters: from sysfs, or
// from "rdma statistic" (a process start per read: slow under TCG).
func rxeSnapshot() (map[string]uint64, error) {
	sent, err1 := readSysctl(rxeCounters + "sent_pkts")
	rcvd, err2 := readSysctl(rxeCounters + "rcvd_pkts")
	if err1 == nil && err2 == nil {
		return map[string]uint64{"sent_pkts": sent, "rcvd_pkts": rcvd}, nil
	}
	out, err := shOut(10*time.Second, "rdma statistic show link rxe1/1")
	if err != nil {
		return nil, err
	}
	m, err := parseRxeStats(strings.TrimSpace(out))
	if err != nil {
		return nil, err
	}
	return map[string]uint64{"sent_pkts": m["sent_pkts"], "rcvd_pkts": m["rcvd_pkts"]}, nil
}
