//go:build e2eguest

package nfsdguest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/e2e/internal/nfsworkload"
	"github.com/go-rpcrdma/rpcrdma/internal/mountstats"
)

// The VM's addresses (e2e/README.md): rxe0 on 10.0.0.1 serves, the kernel
// client reaches it from 10.0.0.2 (rxe1). The ports leave knfsd's (2049,
// 20049) free.
const (
	serverAddr = "10.0.0.1"
	rdmaPort   = 20051
	tcpPort    = 20052
	binary     = "/host/rdma-nfsd"
)

// mountOpts is the kernel client's mount: NFSv3 over RDMA, MOUNT over TCP
// to rdma-nfsd's fixed port (there is no rpcbind to ask), hard (the
// default). timeo=50, as on every RDMA mount of the VM tests: rxe in 6.1
// now and then fails a fast-register of the kernel client, which recovers
// by reconnecting after an RPC timeout (e2e/README.md, Known limits); with
// the default 60 s a single such failure would cost a minute.
var mountOpts = "vers=3,proto=rdma,port=" + strconv.Itoa(rdmaPort) + ",mountport=" + strconv.Itoa(tcpPort) +
	",mountproto=tcp,nolock,timeo=50"

// serverPid is the pid of the running rdma-nfsd, for the hang report.
var serverPid atomic.Int32

// nfsd is /host/rdma-nfsd running as a child process, its output appended
// to a log file that the failure report shows.
type nfsd struct {
	*guesttest.RdmaNfsd
	t      *testing.T
	export string
}

// startNfsd runs rdma-nfsd exporting export on 10.0.0.1 with extra flags
// and waits until it serves. On failure the test log gets its log, the
// dmesg tail and the mountstats of mnt.
func startNfsd(t *testing.T, export, mnt, name string, extra ...string) *nfsd {
	t.Helper()
	// The kernel's RPC-over-RDMA tracepoints, for the hang report.
	if err := guesttest.EnableTrace(guesttest.ClientTraceEvents...); err != nil {
		t.Logf("tracing for the hang report: %v", err)
	}
	return launchNfsd(t, export, mnt, name, append([]string{"-tcp-port", strconv.Itoa(tcpPort), "-rpcbind=false"}, extra...)...)
}

// launchNfsd runs rdma-nfsd exporting export on 10.0.0.1, RDMA port
// 20051, with the flags args (no tracing, no default MOUNT port or rpcbind
// setting) and waits until it serves; with export "" args say what to
// export (-exports).
func launchNfsd(t *testing.T, export, mnt, name string, args ...string) *nfsd {
	t.Helper()
	s := &nfsd{RdmaNfsd: &guesttest.RdmaNfsd{Log: "/tmp/rdma-nfsd-" + name + ".log"}, t: t, export: export}
	s.Args = append([]string{"-provider", "rdmacore", "-addr", serverAddr, "-rdma-port", strconv.Itoa(rdmaPort)}, args...)
	if export != "" {
		// -dir export, all of it the client's: as knfsd's export here.
		s.Args = append([]string{"-dir", export, "-squash", "no_root_squash"}, s.Args...)
	}
	// Runs after StartRdmaNfsd's clean-up (which stops the server and
	// logs the end of its log if the test failed).
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		guesttest.LogKernelTail(t, 40)
		out, _ := run("grep -A 8 ' " + mnt + " ' /proc/self/mountstats")
		t.Logf("mountstats:\n%s", out)
	})
	guesttest.StartRdmaNfsd(t, s.RdmaNfsd)
	serverPid.Store(int32(s.Pid()))
	return s
}

// start runs the server (again) and waits until it serves.
func (s *nfsd) start() {
	s.t.Helper()
	s.Start(s.t)
	serverPid.Store(int32(s.Pid()))
}

// kill ends the server with SIGKILL: no clean shutdown.
func (s *nfsd) kill() {
	s.t.Helper()
	if err := s.Kill(); err != nil {
		s.t.Fatal(err)
	}
}

// acceptLines returns the server's "rpcrdma: accepted" log lines: each
// connection's negotiated settings.
func (s *nfsd) acceptLines() []string {
	log, _ := os.ReadFile(s.Log)
	var out []string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "rpcrdma: accepted") {
			out = append(out, l)
		}
	}
	return out
}

// mount mounts the server on mnt; umount is registered as a cleanup.
func mount(t *testing.T, mnt string) {
	t.Helper()
	mountWith(t, serverAddr+":/", mnt, mountOpts)
}

// umountLater unmounts mnt at the end of the test, by force if need be.
func umountLater(t *testing.T, mnt string) {
	t.Cleanup(func() { _, _ = run("umount " + mnt + " 2>/dev/null || umount -f -l " + mnt + " 2>/dev/null") })
}

func umount(t *testing.T, mnt string) {
	t.Helper()
	sh(t, "umount "+mnt)
}

func dropCaches(t *testing.T) {
	t.Helper()
	sh(t, "sync; echo 3 > /proc/sys/vm/drop_caches")
}

func xprt(t *testing.T, mnt string) mountstats.Xprt {
	t.Helper()
	return guesttest.ReadXprt(t, mnt)
}

// phaseLimit bounds each phase: a call the server never answers hangs a
// hard mount for ever, and the guest's test timeout would end the run with
// a stack trace and nothing else.
const phaseLimit = 2 * time.Minute

// phase runs f and logs how long it took as a report line. If f takes
// longer than phaseLimit, the kernel's and the server's state is printed,
// the test fails and mnt is unmounted by force, which fails the RPCs the
// hard mount was retrying (f then fails with EIO).
func phase(t *testing.T, name, mnt string, f func()) {
	t.Helper()
	t0 := time.Now()
	watchdog := time.AfterFunc(phaseLimit, func() {
		t.Errorf("%s did not end in %v: unmounting by force (hang report below)", name, phaseLimit)
		_, _ = runFor(15*time.Second, "umount -f -l "+mnt)
		hung(name)
	})
	defer watchdog.Stop()
	f()
	t.Logf("RDMANFSD %s: %.1f s", name, time.Since(t0).Seconds())
}

// hung prints what a hang report needs. It ends the server with SIGQUIT,
// whose goroutine dump (in the server's log) shows where its calls wait:
// the test has failed, and the phases after it fail too.
func hung(what string) {
	fmt.Printf("RDMANFSD HUNG: %s did not end in %v\n", what, phaseLimit)
	if pid := serverPid.Load(); pid > 0 {
		_ = syscall.Kill(int(pid), syscall.SIGUSR1) // its connections' counters, into its log
		time.Sleep(time.Second)
		_ = syscall.Kill(int(pid), syscall.SIGQUIT) // every goroutine's stack, into its log
		time.Sleep(2 * time.Second)
	}
	for _, c := range []string{
		"dmesg | tail -n 60",
		"mount -t debugfs none /sys/kernel/debug 2>/dev/null; cat /sys/kernel/debug/sunrpc/rpc_clnt/*/tasks",
		"grep -A 12 'fstype nfs' /proc/self/mountstats",
		"for f in /tmp/rdma-nfsd-*.log; do echo == $f; sed '/^SIGQUIT/,$d' $f | grep -v 'rpcrdma: accepted' | tail -n 60; done",
		"for f in /tmp/rdma-nfsd-*.log; do sed -n '/^SIGQUIT/,$p' $f | head -n 1500; done",
		"grep -v '^#' /sys/kernel/tracing/trace | tail -n 80",
	} {
		out, _ := runFor(15*time.Second, c)
		fmt.Printf("RDMANFSD HUNG $ %s\n%s\n", c, out)
	}
}

// TestWorkload runs the nfsworkload workload on the kernel's mount of
// rdma-nfsd: files of every size checked after a remount through the mount
// and on the server's disk, a 2,000-entry directory, the namespace
// operations, and a tree copied in and out. rdma-nfsd runs with
// -rpcrdma-v2: the kernel client, which speaks version 1, must see no
// difference (no bad reply, every byte right).
func TestWorkload(t *testing.T) {
	requireGuest(t)
	export, mnt := t.TempDir(), "/mnt/rdma-nfsd"
	s := startNfsd(t, export, mnt, "workload", "-rpcrdma-v2")
	mount(t, mnt)

	var sums nfsworkload.Sums
	phase(t, "Files (12 files, 0 B to 8 MiB)", mnt, func() {
		if err := os.Mkdir(filepath.Join(mnt, "files"), 0o755); err != nil {
			t.Fatal(err)
		}
		sums = nfsworkload.Files(t, filepath.Join(mnt, "files"), 1)
	})
	umount(t, mnt)
	dropCaches(t)
	mount(t, mnt)
	phase(t, "Verify after a remount with cold caches", mnt, func() {
		nfsworkload.Verify(t, filepath.Join(mnt, "files"), sums)
		nfsworkload.Verify(t, filepath.Join(export, "files"), sums)
	})
	phase(t, "BigDir 2000 entries", mnt, func() { nfsworkload.BigDir(t, mnt, 2000) })
	phase(t, "Namespace", mnt, func() { nfsworkload.Namespace(t, mnt) })
	src, back := filepath.Join(t.TempDir(), "tree"), filepath.Join(t.TempDir(), "tree")
	nfsworkload.MakeTree(t, src, 3)
	phase(t, "CopyTree in and out (48 files, 6 MiB or less)", mnt, func() {
		nfsworkload.CopyTree(t, src, filepath.Join(mnt, "tree"))
		nfsworkload.CopyTree(t, filepath.Join(mnt, "tree"), back)
		a, b := nfsworkload.TreeSums(t, src), nfsworkload.TreeSums(t, filepath.Join(export, "tree"))
		if len(a) != len(b) {
			t.Fatalf("the server holds %d files of the tree, want %d", len(b), len(a))
		}
		for name, sum := range a {
			if b[name] != sum {
				t.Fatalf("tree/%s differs on the server", name)
			}
		}
	})
	x := xprt(t, mnt)
	t.Logf("RDMANFSD workload mountstats: xprt: rdma %s", x)
	for _, l := range s.acceptLines() {
		t.Logf("RDMANFSD server: %s", l)
	}
	// failed_marshal_count is the client's own: it retries those calls. Logged above, not checked.
	for _, k := range []string{"bad_xids", "bad_reply_count"} {
		if x[k] != 0 {
			t.Errorf("kernel: %s = %d", k, x[k])
		}
	}
	umount(t, mnt)
}

// TestRestart kills rdma-nfsd with SIGKILL in the middle of a 64 MiB cp on
// the hard mount and starts it again: cp must complete, the file must hold
// every byte, and handles from before the restart must still work (no
// ESTALE: the DirHandler's handles survive the process).
func TestRestart(t *testing.T) {
	requireGuest(t)
	export, mnt := t.TempDir(), "/mnt/rdma-nfsd-restart"
	s := startNfsd(t, export, mnt, "restart")
	mount(t, mnt)

	const size = 64 << 20
	local := filepath.Join(t.TempDir(), "big")
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < len(data); i += 8 {
		v := rng.Uint64()
		for k := range 8 {
			data[i+k] = byte(v >> (8 * k))
		}
	}
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(data)
	want := hex.EncodeToString(h[:])
	data = nil
	// A file and a directory whose handles the client holds across the
	// restart.
	sh(t, "mkdir "+mnt+"/keep && echo before > "+mnt+"/keep/before.txt")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp := exec.CommandContext(ctx, "cp", local, mnt+"/big")
	cp.WaitDelay = 5 * time.Second
	var cpOut strings.Builder
	cp.Stdout, cp.Stderr = &cpOut, &cpOut
	t0 := time.Now()
	if err := cp.Start(); err != nil {
		t.Fatal(err)
	}
	cpDone := make(chan error, 1)
	go func() { cpDone <- cp.Wait() }()

	// Kill once a quarter of the file reached the server.
	var at int64
	for {
		if fi, err := os.Stat(filepath.Join(export, "big")); err == nil && fi.Size() >= size/4 {
			at = fi.Size()
			break
		}
		select {
		case err := <-cpDone:
			t.Fatalf("cp finished (%v) before a quarter of the file reached the server: no restart in the middle", err)
		default:
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.kill()
	tKill := time.Now()
	t.Logf("RDMANFSD restart: SIGKILL after %.1f s of cp, %d MiB on the server", tKill.Sub(t0).Seconds(), at>>20)
	time.Sleep(2 * time.Second)
	select {
	case err := <-cpDone:
		t.Fatalf("cp ended while the server was down: %v: %s", err, cpOut.String())
	default:
	}
	s.start()
	tUp := time.Now()
	watchdog := time.AfterFunc(phaseLimit, func() {
		_, _ = runFor(15*time.Second, "umount -f -l "+mnt)
		hung("cp across the restart")
	})
	defer watchdog.Stop()
	if err := <-cpDone; err != nil {
		t.Fatalf("cp across the restart: %v: %s", err, cpOut.String())
	}
	tDone := time.Now()
	t.Logf("RDMANFSD restart: server down %.1f s; cp completed %.1f s after the restart (%.1f s in all)",
		tUp.Sub(tKill).Seconds(), tDone.Sub(tUp).Seconds(), tDone.Sub(t0).Seconds())

	// Every byte, as the server holds it and through the mount with cold
	// caches; the handles from before the restart still work.
	if got := fileSum(t, filepath.Join(export, "big")); got != want {
		t.Fatalf("the server's copy: sha256 %s, want %s", got, want)
	}
	if got := strings.TrimSpace(sh(t, "cat "+mnt+"/keep/before.txt; ls "+mnt+"/keep")); got != "before\nbefore.txt" {
		t.Fatalf("a file and a directory from before the restart: %q", got)
	}
	dropCaches(t)
	if got := fileSum(t, filepath.Join(mnt, "big")); got != want {
		t.Fatalf("the file through the mount: sha256 %s, want %s", got, want)
	}
	sh(t, "echo after > "+mnt+"/keep/after.txt && cat "+mnt+"/keep/after.txt")
	x := xprt(t, mnt)
	t.Logf("RDMANFSD restart mountstats: xprt: rdma %s", x)
	if x["connect_count"] < 2 {
		t.Errorf("kernel: connect_count %d, want a reconnection", x["connect_count"])
	}
	if out, _ := run("dmesg | grep -ci 'stale'"); strings.TrimSpace(out) != "0" {
		t.Errorf("dmesg mentions stale handles: %s", out)
	}
	umount(t, mnt)
}

// xprtCase is one configuration of rdma-nfsd and what its mount must show.
type xprtCase struct {
	name  string
	flags []string
}

// TestMountstats proves what was negotiated with the kernel's own counters
// (the "xprt: rdma" line of mountstats), one fresh server and mount per
// configuration: with the default 4096-byte inline sizes a 1 KiB O_DIRECT
// write and read need no chunks; with rdma-nfsd offering 1024 the same I/O
// needs a Read chunk (WRITE) and a Write chunk (READ); READs of 64 KiB
// (a Write chunk each) are answered with Send With Invalidate, so the
// client invalidates nothing itself, unless rdma-nfsd runs with
// -no-remote-invalidate, when the client invalidates each READ's MR
// locally (local_inv_needed).
func TestMountstats(t *testing.T) {
	requireGuest(t)
	const reads = 8
	k1 := make([]byte, 1024)
	for i := range k1 {
		k1[i] = byte(i*7 + 3)
	}
	local := filepath.Join(t.TempDir(), "k1")
	if err := os.WriteFile(local, k1, 0o644); err != nil {
		t.Fatal(err)
	}
	small := map[string]mountstats.Xprt{}
	big := map[string]mountstats.Xprt{}
	for _, c := range []xprtCase{
		{"default", nil},
		{"inline1024", []string{"-inline-send", "1024", "-inline-recv", "1024"}},
		{"no-remote-invalidate", []string{"-no-remote-invalidate"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			export, mnt := t.TempDir(), "/mnt/rdma-nfsd-"+c.name
			bigData := make([]byte, reads*64<<10)
			for i := range bigData {
				bigData[i] = byte(i / 4096)
			}
			if err := os.WriteFile(filepath.Join(export, "big"), bigData, 0o644); err != nil {
				t.Fatal(err)
			}
			s := startNfsd(t, export, mnt, c.name, c.flags...)
			mount(t, mnt)
			sh(t, "ls "+mnt+" > /dev/null")

			x0 := xprt(t, mnt)
			sh(t, "dd if="+local+" of="+mnt+"/small bs=1024 count=1 oflag=direct 2>&1")
			dropCaches(t)
			sh(t, "dd if="+mnt+"/small of=/dev/null bs=1024 count=1 iflag=direct 2>&1")
			x1 := xprt(t, mnt)
			sh(t, "dd if="+mnt+"/big of=/dev/null bs=64k count="+strconv.Itoa(reads)+" iflag=direct 2>&1")
			x2 := xprt(t, mnt)
			small[c.name], big[c.name] = x1.Sub(x0), x2.Sub(x1)
			requireFile(t, filepath.Join(export, "small"), k1)
			t.Logf("RDMANFSD mountstats %s: 1 KiB write+read: %s", c.name, chunkString(small[c.name]))
			t.Logf("RDMANFSD mountstats %s: %d x 64 KiB reads: %s", c.name, reads, chunkString(big[c.name]))
			for _, l := range s.acceptLines() {
				t.Logf("RDMANFSD server %s: %s", c.name, l)
			}
			if x2["connect_count"] != 1 {
				t.Logf("RDMANFSD mountstats %s: the client reconnected (connect_count %d)", c.name, x2["connect_count"])
			}
			umount(t, mnt)
		})
	}
	if d, ok := small["default"]; ok {
		for _, k := range []string{"read_chunk_count", "write_chunk_count", "reply_chunk_count"} {
			if d[k] != 0 {
				t.Errorf("default (4096): 1 KiB write and read used chunks: %s = %d", k, d[k])
			}
		}
		if d["sends"] == 0 {
			t.Errorf("default: no calls counted for the small I/O")
		}
	}
	if d, ok := small["inline1024"]; ok {
		if d["read_chunk_count"] == 0 {
			t.Errorf("inline 1024: the 1 KiB WRITE went without a Read chunk: %s", chunkString(d))
		}
		if d["write_chunk_count"] == 0 {
			t.Errorf("inline 1024: the 1 KiB READ went without a Write chunk: %s", chunkString(d))
		}
	}
	if d, ok := big["default"]; ok {
		if d["write_chunk_count"] < reads {
			t.Errorf("default: %d Write chunks for %d 64 KiB READs", d["write_chunk_count"], reads)
		}
		// 0 unless rxe made the client reconnect.
		if d["local_inv_needed"] > 1 {
			t.Errorf("R set: the client invalidated locally %d times in %d READs", d["local_inv_needed"], reads)
		}
	}
	if d, ok := big["no-remote-invalidate"]; ok {
		if d["local_inv_needed"] < reads {
			t.Errorf("R clear: the client invalidated locally %d times in %d READs, want each", d["local_inv_needed"], reads)
		}
	}
}

func chunkString(d mountstats.Xprt) string {
	var b strings.Builder
	for _, k := range []string{"sends", "read_chunk_count", "write_chunk_count", "reply_chunk_count",
		"total_rdma_request", "total_rdma_reply", "local_inv_needed", "connect_count"} {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + strconv.FormatUint(d[k], 10))
	}
	return b.String()
}

func requireGuest(t *testing.T) {
	t.Helper()
	guesttest.RequireGuest(t, binary)
}

func requireFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s on the server: %d bytes differ from the %d written", path, len(got), len(want))
	}
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// run runs a bash script with a time limit (guesttest.ShLimit: a command
// stuck on the hard mount is killed) and returns its combined output.
func run(script string) (string, error) { return guesttest.Run(script) }

// runFor runs a bash script with the time limit d.
func runFor(d time.Duration, script string) (string, error) { return guesttest.RunFor(d, script) }

// sh runs script, logs it and its output, and fails t if it fails.
func sh(t *testing.T, script string) string {
	t.Helper()
	return guesttest.Sh(t, script)
}

// TestExercise runs the random read/write/truncate exerciser for 30 s on a
// fresh server and mount (last, with a watchdog). It once hung the hard
// mount: a READ at end of file offered a Write chunk, and the responder
// panicked under its lock on the empty result (fixed in transport,
// TestEmptyResultWithWriteChunk).
func TestExercise(t *testing.T) {
	requireGuest(t)
	export, mnt := t.TempDir(), "/mnt/rdma-nfsd-exercise"
	startNfsd(t, export, mnt, "exercise", "-log-level", "debug")
	mount(t, mnt)
	phase(t, "Exercise 30 s", mnt, func() {
		ops := nfsworkload.Exercise(t, mnt, 30*time.Second, 2)
		t.Logf("RDMANFSD Exercise: %d operations in 30 s", ops)
	})
	t.Logf("RDMANFSD exercise mountstats: xprt: rdma %s", xprt(t, mnt))
}
