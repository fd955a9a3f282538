//go:build e2eguest

package gonfsd_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/gonfsd"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The VM's addresses (e2e/README.md): rxe0 on 10.0.0.1 serves, the kernel
// client reaches it from 10.0.0.2 (rxe1).
const (
	serverAddr = "10.0.0.1"
	rdmaPort   = 20049
	bigSize    = 100 << 10
)

// linuxPrivateData is what the Linux client sends in its RDMA-CM connect
// (RFC 8797 §4): the identifier f6ab0e18, version 1, R set, 4096-byte send
// and receive sizes ((3+1)*1024).
var linuxPrivateData = []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03}

// kernelServer is a gonfsd Server in the guest and the kernel client's
// mount of it.
type kernelServer struct {
	t    *testing.T
	srv  *gonfsd.Server
	mnt  string
	opts string
	// mounted is true while mnt is mounted.
	mounted bool
}

// startKernelServer serves export with gonfsd on rdma-core at
// 10.0.0.1:port (and MOUNT on an ephemeral TCP port of 10.0.0.1) with
// binding (nil: nfs.Binding), logging at debug level to logPath. On
// failure the test log gets the dmesg tail, the kernel's rpcrdma
// tracepoints, the mount's mountstats, the server's counters and its log.
func startKernelServer(t *testing.T, export, mnt string, port int, binding transport.Binding, logPath string) *kernelServer {
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := gonfsd.Start(gonfsd.Config{
		FS:       gonfsd.NewDirFS(export),
		Provider: &rdmacore.Provider{},
		RDMAAddr: net.JoinHostPort(serverAddr, strconv.Itoa(port)),
		TCPAddr:  net.JoinHostPort(serverAddr, "0"),
		Binding:  binding,
		Logger:   logger,
	})
	require.NoError(t, err)
	ks := &kernelServer{t: t, srv: srv, mnt: mnt}
	ks.opts = fmt.Sprintf("proto=rdma,port=%d,vers=3,mountproto=tcp,mountport=%d,nolock,timeo=50",
		port, srv.TCPAddr().(*net.TCPAddr).Port)
	t.Cleanup(func() {
		assert.NoError(t, srv.Close())
		_ = logf.Close()
	})
	t.Cleanup(func() {
		if ks.mounted {
			_, _ = run("umount -f -l " + mnt)
		}
	})
	// The kernel's RPC-over-RDMA tracepoints, for the failure report.
	_, _ = run("echo > /sys/kernel/tracing/trace; echo 1 > /sys/kernel/tracing/events/rpcrdma/enable; echo 1 > /sys/kernel/tracing/events/sunrpc/rpc_call_status/enable")
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		out, _ := run("dmesg | tail -n 40")
		t.Logf("dmesg tail:\n%s", out)
		out, _ = run("grep -v '^#' /sys/kernel/tracing/trace | grep -v 'xprtrdma_post_recv\\|WR_FLUSH_ERR' | tail -n 150")
		t.Logf("rpcrdma trace tail:\n%s", out)
		out, _ = run("grep -A 12 ' " + mnt + " ' /proc/self/mountstats")
		t.Logf("mountstats:\n%s", out)
		for _, c := range srv.Calls() {
			t.Logf("calls %s %s: %d", c.Transport, c.ID, c.N)
		}
		for i, a := range srv.Accepted() {
			t.Logf("conn %d: %+v", i, a.Conn.Stats())
		}
		log, _ := os.ReadFile(logPath)
		t.Logf("server log (%s):\n%s", logPath, log)
	})
	return ks
}

// mount mounts the server with the kernel client over RDMA, MOUNT over TCP.
func (ks *kernelServer) mount() {
	t := ks.t
	t.Helper()
	sh(t, "mkdir -p "+ks.mnt+" && mount -t nfs -o "+ks.opts+" "+serverAddr+":/ "+ks.mnt)
	ks.mounted = true
	line := sh(t, "grep ' "+ks.mnt+" ' /proc/mounts")
	for _, o := range strings.Split(ks.opts, ",") {
		require.Contains(t, line, o, "mount options in /proc/mounts")
	}
}

func (ks *kernelServer) umount() {
	ks.t.Helper()
	sh(ks.t, "umount "+ks.mnt)
	ks.mounted = false
}

// TestKernelClient mounts go-nfs, served by gonfsd on a *transport.Listener
// over rdma-core (rxe0) with nfs.Binding, with the kernel's NFSv3 client
// over RDMA, MOUNT over TCP: it lists, stats, writes a 3-byte and a 100 KiB
// file, syncs, remounts with cold caches, reads both back and compares them,
// then checks what went over which transport, what both sides negotiated
// and what each counted: the responder's Stats against the kernel's
// mountstats, which must agree.
func TestKernelClient(t *testing.T) {
	requireGuest(t)
	export := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(export, "hello.txt"), []byte("hello\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(export, "subdir"), 0o755))
	big := pattern(bigSize, 5)
	require.NoError(t, os.WriteFile("/tmp/pattern", big, 0o644))
	ks := startKernelServer(t, export, "/mnt/gonfs", rdmaPort, nil, "/tmp/gonfsd.log")
	mnt := ks.mnt

	// Mount, list, stat, write, sync.
	ks.mount()
	ls := sh(t, "ls -la "+mnt)
	require.Contains(t, ls, "hello.txt")
	require.Contains(t, ls, "subdir")
	require.Equal(t, "6 regular file\n", sh(t, "stat -c '%s %F' "+mnt+"/hello.txt"))
	require.Equal(t, "directory\n", sh(t, "stat -c '%F' "+mnt+"/subdir"))
	sh(t, "printf abc > "+mnt+"/f3 && sync")
	sh(t, "dd if=/tmp/pattern of="+mnt+"/f100k bs=100k count=1 && sync")
	require.Equal(t, "3 102400\n", sh(t, "stat -c '%s' "+mnt+"/f3 | tr '\\n' ' '; stat -c '%s' "+mnt+"/f100k"))
	// What the server stored, read from its file system directly.
	requireFile(t, filepath.Join(export, "f3"), []byte("abc"))
	requireFile(t, filepath.Join(export, "f100k"), big)
	// No hard link: go-nfs v0.0.4 decodes LINK's arguments as SYMLINK's,
	// and ln fails.
	writeStats := readMountStats(t, mnt)
	ks.umount()

	// Cold read: caches dropped, a new mount (a new RDMA connection).
	sh(t, "echo 3 > /proc/sys/vm/drop_caches")
	ks.mount()
	require.Equal(t, "abc", sh(t, "cat "+mnt+"/f3"))
	sh(t, "cmp "+mnt+"/f100k /tmp/pattern")
	sum := sha256.Sum256(big)
	require.Equal(t, hex.EncodeToString(sum[:])+"  "+mnt+"/f100k\n", sh(t, "sha256sum "+mnt+"/f100k"))
	require.Equal(t, "hello\n", sh(t, "cat "+mnt+"/hello.txt"))
	readStats := readMountStats(t, mnt)
	ks.umount()

	// The report: what the kernel negotiated and counted, what we counted.
	srv := ks.srv
	for _, ms := range []struct {
		phase string
		s     mountStats
	}{{"write", writeStats}, {"read", readStats}} {
		t.Logf("KCLIENT mountstats %s mount: xprt: rdma %s", ms.phase, ms.s.xprt)
		t.Logf("KCLIENT mountstats %s mount: ops %s", ms.phase, ms.s.opsString())
	}
	for _, r := range srv.ConnRequests() {
		t.Logf("KCLIENT connection request from %s: private data % x (%d bytes)", r.Remote, r.PrivateData[:min(8, len(r.PrivateData))], len(r.PrivateData))
	}
	for _, c := range srv.Calls() {
		t.Logf("KCLIENT calls over %s: %s x%d", c.Transport, c.ID, c.N)
	}
	accepted := srv.Accepted()
	var total transport.Stats
	for i, a := range accepted {
		st := a.Conn.Stats()
		t.Logf("KCLIENT conn %d negotiated: %+v", i, a.Negotiated)
		t.Logf("KCLIENT conn %d stats: %s", i, statsString(st))
		total = addStats(total, st)
	}

	// Private data (RFC 8797): the Linux client's, on every connection.
	reqs := srv.ConnRequests()
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		require.GreaterOrEqual(t, len(r.PrivateData), 8)
		require.Equal(t, linuxPrivateData, r.PrivateData[:8], "private data of the connection from %s", r.Remote)
	}
	require.GreaterOrEqual(t, len(accepted), 2, "one RDMA connection per mount")
	for i, a := range accepted {
		n := a.Negotiated
		assert.Equal(t, "found", n.PeerPrivateData, "conn %d", i)
		assert.Equal(t, 4096, n.SendInline, "conn %d", i)
		assert.Equal(t, 4096, n.RecvInline, "conn %d", i)
		assert.True(t, n.PeerR, "conn %d: the kernel client sets R", i)
		assert.True(t, n.SendWithInvalidate, "conn %d", i)
	}

	// Which RPCs went where: MOUNT over TCP only, NFS (and its NFSACL side
	// program) over RDMA only.
	for _, c := range srv.Calls() {
		switch c.ID.Prog {
		case nfs.ProgMount:
			assert.Equal(t, gonfsd.TCP, c.Transport, "%s went over %s", c.ID, c.Transport)
		case nfs.ProgNFS, nfs.ProgNFSACL:
			assert.Equal(t, gonfsd.RDMA, c.Transport, "%s went over %s", c.ID, c.Transport)
		}
	}
	mount3 := func(proc uint32) gonfsd.CallID { return gonfsd.CallID{Prog: nfs.ProgMount, Vers: 3, Proc: proc} }
	nfs3 := func(proc uint32) gonfsd.CallID { return gonfsd.CallID{Prog: nfs.ProgNFS, Vers: 3, Proc: proc} }
	assert.GreaterOrEqual(t, srv.Count(gonfsd.TCP, mount3(0)), uint64(2), "MOUNT NULL, one per mount")
	assert.GreaterOrEqual(t, srv.Count(gonfsd.TCP, mount3(1)), uint64(2), "MNT, one per mount")
	assert.GreaterOrEqual(t, srv.Count(gonfsd.RDMA, nfs3(0)), uint64(2), "NFS NULL over RDMA, one per mount")
	for _, p := range []uint32{1, 3, 6, 7, 8, 17, 19} { // GETATTR LOOKUP READ WRITE CREATE READDIRPLUS FSINFO
		assert.NotZero(t, srv.Count(gonfsd.RDMA, nfs3(p)), "%s over RDMA", nfs3(p))
	}

	// DDP: WRITE data pulled from the kernel's Read chunks, READ data
	// pushed into its Write chunks, replies by Send With Invalidate.
	assert.NotZero(t, total.ReadChunks, "Read chunks served")
	assert.GreaterOrEqual(t, total.RDMAReadBytes, uint64(bigSize), "bytes pulled by RDMA Read")
	assert.NotZero(t, total.WriteChunks, "Write chunks filled")
	assert.GreaterOrEqual(t, total.RDMAWriteBytes, uint64(bigSize), "bytes pushed by RDMA Write")
	assert.NotZero(t, total.RemoteInvalidations, "replies by Send With Invalidate")
	assert.Zero(t, total.ErrChunkSent+total.ErrVersSent+total.Dropped, "calls refused")

	// The kernel's own account.
	assert.NotZero(t, writeStats.field(t, "read_chunk_count"), "kernel: Read chunks (WRITE data)")
	assert.NotZero(t, readStats.field(t, "write_chunk_count"), "kernel: Write chunks (READ data)")
	for _, s := range []mountStats{writeStats, readStats} {
		assert.Zero(t, s.field(t, "bad_reply_count"), "kernel: bad replies")
		assert.Zero(t, s.field(t, "bad_xids"), "kernel: bad XIDs")
		assert.Zero(t, s.field(t, "failed_marshal_count"), "kernel: failed marshals")
	}
	assert.NotZero(t, writeStats.ops["WRITE"], "kernel: WRITE calls")
	assert.NotZero(t, readStats.ops["READ"], "kernel: READ calls after the remount")

	// Both accounts agree, call for call, when each mount kept its one
	// connection (rxe may fail a fast-register of the kernel client, which
	// then reconnects and retransmits: see e2e/README.md).
	if len(accepted) == 2 && writeStats.field(t, "connect_count") == 1 && readStats.field(t, "connect_count") == 1 {
		w, r := accepted[0].Conn.Stats(), accepted[1].Conn.Stats()
		// Each Read chunk of the kernel is one registered MR.
		assert.Equal(t, writeStats.field(t, "read_chunk_count"), w.ReadChunks, "Read chunks: kernel vs responder")
		// The kernel counts Write chunk MRs and the bytes the server
		// reported written into them (total_rdma_reply).
		assert.Equal(t, readStats.field(t, "write_chunk_count"), r.WriteChunks, "Write chunks: kernel vs responder")
		assert.Equal(t, readStats.field(t, "total_rdma_reply"), r.RDMAWriteBytes, "bytes RDMA-written: kernel vs responder")
		// Every READ reply carried its data in the Write chunk and
		// invalidated its one rkey remotely: the kernel invalidated
		// nothing itself.
		assert.Equal(t, r.WriteChunks, r.RemoteInvalidations, "READ replies by Send With Invalidate")
		assert.Zero(t, readStats.field(t, "local_inv_needed"), "kernel: local invalidations in the read mount")
		// Requests that the kernel sent and replies it received, against
		// the Receives and Sends of the responder.
		assert.Equal(t, writeStats.field(t, "sends"), w.Recvs, "calls of the write mount")
		assert.Equal(t, readStats.field(t, "sends"), r.Recvs, "calls of the read mount")
		assert.Equal(t, writeStats.field(t, "recvs"), w.Sends, "replies of the write mount")
		assert.Equal(t, readStats.field(t, "recvs"), r.Sends, "replies of the read mount")
	} else {
		t.Logf("KCLIENT the kernel reconnected (%d connections): per-connection cross-checks not applicable", len(accepted))
	}
}

// TestKernelClientNullBinding is the control: the same server with
// transport.NullBinding, which cannot locate READ data in a reply. Small
// READs still work (the whole reply fits inline, with the Write chunk
// echoed empty), but the reply of a 100 KiB READ fits neither inline nor in
// a Reply chunk (the kernel offers none for READ): the responder answers
// RDMA_ERROR ERR_CHUNK, which Linux's rpcrdma_decode_error turns into EIO.
// This is what nfs.Binding is for.
func TestKernelClientNullBinding(t *testing.T) {
	requireGuest(t)
	export := t.TempDir()
	big := pattern(bigSize, 6)
	require.NoError(t, os.WriteFile(filepath.Join(export, "f3"), []byte("abc"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(export, "f100k"), big, 0o644))
	ks := startKernelServer(t, export, "/mnt/gonfs-null", rdmaPort+1, transport.NullBinding{}, "/tmp/gonfsd-null.log")

	ks.mount()
	require.Equal(t, "abc", sh(t, "cat "+ks.mnt+"/f3"))
	out, err := run("cat " + ks.mnt + "/f100k > /dev/null")
	t.Logf("$ cat %s/f100k\n%s", ks.mnt, out)
	require.Error(t, err, "a 100 KiB READ without an NFS binding")
	require.Contains(t, out, "Input/output error")
	ms := readMountStats(t, ks.mnt)
	ks.umount()
	errChunks, err := run("grep -c ' xprtrdma_err_chunk: ' /sys/kernel/tracing/trace")
	require.NoError(t, err, "the kernel traced no ERR_CHUNK")

	var total transport.Stats
	for _, a := range ks.srv.Accepted() {
		total = addStats(total, a.Conn.Stats())
	}
	t.Logf("KCLIENT NullBinding: cat of the 100 KiB file: %q; kernel traced %s ERR_CHUNK replies; responder: %s",
		strings.TrimSpace(out), strings.TrimSpace(errChunks), statsString(total))
	t.Logf("KCLIENT NullBinding: xprt: rdma %s", ms.xprt)
	require.NotZero(t, total.ErrChunkSent, "ERR_CHUNK answers")
	require.Equal(t, strconv.FormatUint(total.ErrChunkSent, 10), strings.TrimSpace(errChunks), "ERR_CHUNKs sent and received")
	require.Zero(t, total.WriteChunks, "Write chunks filled")
	// Linux 6.1 counts each RDMA_ERROR as a bad reply.
	require.Equal(t, total.ErrChunkSent, ms.field(t, "bad_reply_count"), "kernel: bad replies")
}

func requireGuest(t *testing.T) {
	if os.Getenv("RPCRDMA_IN_VM") != "1" {
		t.Fatal("not in the VM (RPCRDMA_IN_VM is not 1)")
	}
}

// statsString formats the counters of Stats that a responder uses.
func statsString(s transport.Stats) string {
	return fmt.Sprintf("recvs=%d sends=%d read_chunks=%d write_chunks=%d reply_chunks=%d rdma_reads=%d (%d B) "+
		"rdma_writes=%d (%d B) send_with_invalidate=%d err_chunk=%d err_vers=%d dropped=%d",
		s.Recvs, s.Sends, s.ReadChunks, s.WriteChunks, s.ReplyChunks, s.RDMAReads, s.RDMAReadBytes,
		s.RDMAWrites, s.RDMAWriteBytes, s.RemoteInvalidations, s.ErrChunkSent, s.ErrVersSent, s.Dropped)
}

// run runs a bash script with a time limit and returns its combined output.
// A command stuck on the mount (a hard mount retries forever) is killed
// after a minute; WaitDelay stops waiting for the output of its children.
func run(script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sh runs script, logs it and its output, and fails t if it fails.
func sh(t *testing.T, script string) string {
	t.Helper()
	out, err := run(script)
	t.Logf("$ %s\n%s", script, out)
	require.NoError(t, err, "%s", script)
	return out
}

func requireFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, got, "%s on the server", path)
}

// xprtFields are the 27 numbers of the "xprt: rdma" line of
// /proc/self/mountstats (net/sunrpc/xprtrdma/transport.c,
// xprt_rdma_print_stats).
var xprtFields = []string{"srcport", "bind_count", "connect_count", "connect_time", "idle_time", "sends", "recvs",
	"bad_xids", "req_u", "bklog_u", "read_chunk_count", "write_chunk_count", "reply_chunk_count",
	"total_rdma_request", "total_rdma_reply", "pullup_copy_count", "fixup_copy_count", "hardway_register_count",
	"failed_marshal_count", "bad_reply_count", "nomsg_call_count", "mrs_recycled", "mrs_orphaned",
	"mrs_allocated", "local_inv_needed", "empty_sendctx_q", "reply_waits_for_send"}

// mountStats is the kernel's account of one mount.
type mountStats struct {
	xprt   string            // the xprt line, labelled
	fields map[string]uint64 // its numbers by name
	ops    map[string]uint64 // per-op statistics: operations sent
}

func (m mountStats) field(t *testing.T, name string) uint64 {
	t.Helper()
	v, ok := m.fields[name]
	require.True(t, ok, "mountstats has no %s", name)
	return v
}

func (m mountStats) opsString() string {
	var b strings.Builder
	for _, op := range []string{"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READ", "WRITE", "CREATE",
		"READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"} {
		if n := m.ops[op]; n > 0 {
			fmt.Fprintf(&b, "%s=%d ", op, n)
		}
	}
	return strings.TrimSpace(b.String())
}

// readMountStats reads the block of mount point mnt in /proc/self/mountstats.
func readMountStats(t *testing.T, mnt string) mountStats {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/mountstats")
	require.NoError(t, err)
	m := mountStats{fields: map[string]uint64{}, ops: map[string]uint64{}}
	in := false
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "device" {
			in = strings.Contains(l, " mounted on "+mnt+" ")
			continue
		}
		if !in || len(f) < 2 {
			continue
		}
		switch {
		case f[0] == "xprt:" && f[1] == "rdma":
			var b strings.Builder
			for i, v := range f[2:] {
				n, err := strconv.ParseUint(v, 10, 64)
				require.NoError(t, err, "xprt line %q", l)
				if i < len(xprtFields) {
					m.fields[xprtFields[i]] = n
					fmt.Fprintf(&b, "%s=%d ", xprtFields[i], n)
				}
			}
			require.Len(t, f[2:], len(xprtFields), "xprt line %q", l)
			m.xprt = strings.TrimSpace(b.String())
		case strings.HasSuffix(f[0], ":") && strings.ToUpper(f[0]) == f[0] && len(f) >= 2:
			if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				m.ops[strings.TrimSuffix(f[0], ":")] = n
			}
		}
	}
	require.NotEmpty(t, m.xprt, "no xprt: rdma line for %s in mountstats:\n%s", mnt, raw)
	return m
}

// addStats sums the counters of two connections' Stats.
func addStats(a, b transport.Stats) transport.Stats {
	a.Sends += b.Sends
	a.Recvs += b.Recvs
	a.ReadChunks += b.ReadChunks
	a.WriteChunks += b.WriteChunks
	a.ReplyChunks += b.ReplyChunks
	a.RDMAReadBytes += b.RDMAReadBytes
	a.RDMAWriteBytes += b.RDMAWriteBytes
	a.RDMAReads += b.RDMAReads
	a.RDMAWrites += b.RDMAWrites
	a.RemoteInvalidations += b.RemoteInvalidations
	a.DirectPlacements += b.DirectPlacements
	a.ReadChunksInPlace += b.ReadChunksInPlace
	a.ErrVersSent += b.ErrVersSent
	a.ErrChunkSent += b.ErrChunkSent
	a.Dropped += b.Dropped
	return a
}
