//go:build e2eguest

package gonfsd_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/gonfsd"
	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/internal/mountstats"
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
	if err := guesttest.EnableTrace(append(guesttest.ClientTraceEvents, "sunrpc/rpc_call_status")...); err != nil {
		t.Logf("tracing for the failure report: %v", err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		out, _ := run("dmesg | tail -n 40")
		t.Logf("dmesg tail:\n%s", out)
		out, _ = run("grep -v '^#' /sys/kernel/tracing/trace | grep -v 'WR_FLUSH_ERR' | tail -n 150")
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
	guesttest.Mount(t, serverAddr+":/", ks.mnt, ks.opts)
	ks.mounted = true
	line := guesttest.Sh(t, "grep ' "+ks.mnt+" ' /proc/mounts")
	for _, o := range strings.Split(ks.opts, ",") {
		require.Contains(t, line, o, "mount options in /proc/mounts")
	}
}

func (ks *kernelServer) umount() {
	ks.t.Helper()
	guesttest.Sh(ks.t, "umount "+ks.mnt)
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
	guesttest.RequireGuest(t)
	export := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(export, "hello.txt"), []byte("hello\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(export, "subdir"), 0o755))
	big := guesttest.Pattern(bigSize, 5)
	require.NoError(t, os.WriteFile("/tmp/pattern", big, 0o644))
	ks := startKernelServer(t, export, "/mnt/gonfs", rdmaPort, nil, "/tmp/gonfsd.log")
	mnt := ks.mnt

	// Mount, list, stat, write, sync.
	ks.mount()
	ls := guesttest.Sh(t, "ls -la "+mnt)
	require.Contains(t, ls, "hello.txt")
	require.Contains(t, ls, "subdir")
	require.Equal(t, "6 regular file\n", guesttest.Sh(t, "stat -c '%s %F' "+mnt+"/hello.txt"))
	require.Equal(t, "directory\n", guesttest.Sh(t, "stat -c '%F' "+mnt+"/subdir"))
	guesttest.Sh(t, "printf abc > "+mnt+"/f3 && sync")
	guesttest.Sh(t, "dd if=/tmp/pattern of="+mnt+"/f100k bs=100k count=1 && sync")
	require.Equal(t, "3 102400\n", guesttest.Sh(t, "stat -c '%s' "+mnt+"/f3 | tr '\\n' ' '; stat -c '%s' "+mnt+"/f100k"))
	// What the server stored, read from its file system directly.
	requireFile(t, filepath.Join(export, "f3"), []byte("abc"))
	requireFile(t, filepath.Join(export, "f100k"), big)
	// No hard link: go-nfs v0.0.4 decodes LINK's arguments as SYMLINK's,
	// and ln fails.
	writeStats := readMountStats(t, mnt)
	ks.umount()

	// Cold read: caches dropped, a new mount (a new RDMA connection).
	guesttest.Sh(t, "echo 3 > /proc/sys/vm/drop_caches")
	ks.mount()
	require.Equal(t, "abc", guesttest.Sh(t, "cat "+mnt+"/f3"))
	guesttest.Sh(t, "cmp "+mnt+"/f100k /tmp/pattern")
	sum := sha256.Sum256(big)
	require.Equal(t, hex.EncodeToString(sum[:])+"  "+mnt+"/f100k\n", guesttest.Sh(t, "sha256sum "+mnt+"/f100k"))
	require.Equal(t, "hello\n", guesttest.Sh(t, "cat "+mnt+"/hello.txt"))
	readStats := readMountStats(t, mnt)
	ks.umount()

	// The report: what the kernel negotiated and counted, what we counted.
	srv := ks.srv
	for _, ms := range []struct {
		phase string
		s     mountStats
	}{{"write", writeStats}, {"read", readStats}} {
		t.Logf("KCLIENT mountstats %s mount: xprt: rdma %s", ms.phase, ms.s.xprt)
		t.Logf("KCLIENT mountstats %s mount: ops %s", ms.phase, ms.s.ops)
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
	assert.NotZero(t, writeStats.xprt["read_chunk_count"], "kernel: Read chunks (WRITE data)")
	assert.NotZero(t, readStats.xprt["write_chunk_count"], "kernel: Write chunks (READ data)")
	for _, s := range []mountStats{writeStats, readStats} {
		assert.Zero(t, s.xprt["bad_reply_count"], "kernel: bad replies")
		assert.Zero(t, s.xprt["bad_xids"], "kernel: bad XIDs")
		assert.Zero(t, s.xprt["failed_marshal_count"], "kernel: failed marshals")
	}
	assert.NotZero(t, writeStats.ops["WRITE"], "kernel: WRITE calls")
	assert.NotZero(t, readStats.ops["READ"], "kernel: READ calls after the remount")

	// Both accounts agree, call for call, when each mount kept its one
	// connection (rxe may fail a fast-register of the kernel client, which
	// then reconnects and retransmits: see e2e/README.md).
	if len(accepted) == 2 && writeStats.xprt["connect_count"] == 1 && readStats.xprt["connect_count"] == 1 {
		w, r := accepted[0].Conn.Stats(), accepted[1].Conn.Stats()
		// Each Read chunk of the kernel is one registered MR.
		assert.Equal(t, writeStats.xprt["read_chunk_count"], w.ReadChunks, "Read chunks: kernel vs responder")
		// The kernel counts Write chunk MRs and the bytes the server
		// reported written into them (total_rdma_reply).
		assert.Equal(t, readStats.xprt["write_chunk_count"], r.WriteChunks, "Write chunks: kernel vs responder")
		assert.Equal(t, readStats.xprt["total_rdma_reply"], r.RDMAWriteBytes, "bytes RDMA-written: kernel vs responder")
		// Every READ reply carried its data in the Write chunk and
		// invalidated its one rkey remotely: the kernel invalidated
		// nothing itself.
		assert.Equal(t, r.WriteChunks, r.RemoteInvalidations, "READ replies by Send With Invalidate")
		assert.Zero(t, readStats.xprt["local_inv_needed"], "kernel: local invalidations in the read mount")
		// Requests that the kernel sent and replies it received, against
		// the Receives and Sends of the responder.
		assert.Equal(t, writeStats.xprt["sends"], w.Recvs, "calls of the write mount")
		assert.Equal(t, readStats.xprt["sends"], r.Recvs, "calls of the read mount")
		assert.Equal(t, writeStats.xprt["recvs"], w.Sends, "replies of the write mount")
		assert.Equal(t, readStats.xprt["recvs"], r.Sends, "replies of the read mount")
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
	guesttest.RequireGuest(t)
	export := t.TempDir()
	big := guesttest.Pattern(bigSize, 6)
	require.NoError(t, os.WriteFile(filepath.Join(export, "f3"), []byte("abc"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(export, "f100k"), big, 0o644))
	ks := startKernelServer(t, export, "/mnt/gonfs-null", rdmaPort+1, transport.NullBinding{}, "/tmp/gonfsd-null.log")

	ks.mount()
	require.Equal(t, "abc", guesttest.Sh(t, "cat "+ks.mnt+"/f3"))
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
	require.Equal(t, total.ErrChunkSent, ms.xprt["bad_reply_count"], "kernel: bad replies")
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
// after a minute.
func run(script string) (string, error) { return guesttest.RunFor(time.Minute, script) }

func requireFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, got, "%s on the server", path)
}

// mountStats is the kernel's account of one mount.
type mountStats struct {
	xprt mountstats.Xprt
	ops  mountstats.Ops
}

// readMountStats reads the block of mount point mnt in /proc/self/mountstats.
func readMountStats(t *testing.T, mnt string) mountStats {
	t.Helper()
	return mountStats{xprt: guesttest.ReadXprt(t, mnt), ops: guesttest.ReadOps(t, mnt)}
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
