package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test together.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRdmaNfsd runs the program on the soft provider: MNT over TCP gives the
// root handle, GETATTR over RPC-over-RDMA finds the exported directory, the
// metrics endpoint and SIGUSR1 report the connection with its negotiated
// settings, and cancelling the context (SIGTERM in main) ends it cleanly.
// startRun runs rdma-nfsd with args until ctx is done and returns its
// server once it serves, its log, and where run's error comes.
func startRun(t *testing.T, ctx context.Context, args ...string) (*server.Server, *syncBuffer, chan error) {
	t.Helper()
	logs := &syncBuffer{}
	ready := make(chan *server.Server, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, logs, func(s *server.Server) { ready <- s }) }()
	select {
	case srv := <-ready:
		return srv, logs, done
	case err := <-done:
		t.Fatalf("rdma-nfsd ended: %v\n%s", err, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("rdma-nfsd did not start")
	}
	return nil, nil, nil
}

func TestRdmaNfsd(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello"), []byte("hello"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, logs, done := startRun(t, ctx, "-dir", dir, "-addr", "127.0.0.1", "-rdma-port", "0", "-provider", "soft",
		"-rpcbind=false", "-metrics", "127.0.0.1:0", "-inline-send", "1024")
	rdmaAddr, tcpAddr := srv.Addrs()

	root := mountRoot(t, tcpAddr.String())

	c, err := transport.Dial(ctx, rdmaAddr.String(), &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
	require.NoError(t, err)
	defer c.Close()
	call := (&xdr.CallHeader{XID: 1, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcGetattr}).Append(nil)
	call = xdr.AppendOpaque(call, root)
	reply, err := c.Call(ctx, call, nil)
	require.NoError(t, err)
	r := okResults(t, reply, "GETATTR")
	ftype, _ := r.Uint32()
	require.EqualValues(t, 2, ftype, "NF3DIR")

	// The negotiated settings, in one log line per connection.
	waitFor(t, "the accept log line", func() bool {
		return regexp.MustCompile(`rpcrdma: accepted.*send_inline=1024`).MatchString(logs.String())
	})

	// The metrics endpoint.
	m := regexp.MustCompile(`expvar=(http://\S+)`).FindStringSubmatch(logs.String())
	require.NotNil(t, m, "metrics URL in the log:\n%s", logs.String())
	resp, err := http.Get(m[1])
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var vars struct {
		RdmaNfsd struct {
			Connections []struct {
				Remote string
				Stats  transport.Stats
			} `json:"connections"`
		} `json:"rdma_nfsd"`
	}
	require.NoError(t, json.Unmarshal(body, &vars), "%s", body)
	require.Len(t, vars.RdmaNfsd.Connections, 1)
	st := vars.RdmaNfsd.Connections[0].Stats
	require.Equal(t, 1024, st.Negotiated.SendInline)
	require.NotZero(t, st.Recvs)

	// SIGUSR1 logs the counters.
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR1))
	waitFor(t, "the SIGUSR1 report", func() bool {
		return regexp.MustCompile(`rdma-nfsd: connection" remote=`).MatchString(logs.String())
	})

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("rdma-nfsd did not shut down")
	}
}

// TestRdmaNfsdFlags: a missing -dir and a bad provider are errors.
func TestRdmaNfsdFlags(t *testing.T) {
	ctx := context.Background()
	require.ErrorContains(t, run(ctx, nil, io.Discard, nil), "-dir or -exports is required")
	require.ErrorContains(t, run(ctx, []string{"-dir", t.TempDir(), "-provider", "x"}, io.Discard, nil), "want rdmacore or soft")
	o, err := parse([]string{"-dir", "/x", "-poll-before-wait", "200us", "-poll-before-wait-max", "1ms"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 200*time.Microsecond, o.pollBeforeWait)
	require.Equal(t, time.Millisecond, o.pollBeforeWaitMax)

	o, err = parse([]string{"-dir", "/x"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, [3]any{"root_squash", uint(65534), uint(65534)}, [3]any{o.squash, o.anonUID, o.anonGID}, "knfsd's defaults")
	require.False(t, o.acceptV2, "version 1 only by default")
	o, err = parse([]string{"-dir", "/x", "-rpcrdma-v2"}, io.Discard)
	require.NoError(t, err)
	require.True(t, o.acceptV2)
	o, err = parse([]string{"-dir", "/x", "-squash", "all_squash", "-anonuid", "1000", "-anongid", "100"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, [3]any{"all_squash", uint(1000), uint(100)}, [3]any{o.squash, o.anonUID, o.anonGID})
	for _, bad := range [][]string{
		{"-squash", "root"}, {"-anonuid", "0"}, {"-anongid", "4294967295"}, {"-anonuid", "-1"},
	} {
		_, err := parse(append([]string{"-dir", "/x"}, bad...), io.Discard)
		require.ErrorContains(t, err, bad[0], "%v", bad)
	}
}

// mountRoot sends MOUNT3 MNT "/" over TCP (record marked) and returns the
// root file handle.
func mountRoot(t *testing.T, addr string) []byte {
	t.Helper()
	reply := mnt(t, addr, "/")
	fh, err := okResults(t, reply, "MNT").Opaque(64)
	require.NoError(t, err)
	return fh
}

// mnt sends MOUNT3 MNT of path over TCP (record marked) and returns the
// reply.
func mnt(t *testing.T, addr, path string) []byte {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	msg := (&xdr.CallHeader{XID: 7, Prog: nfs.ProgMount, Vers: 3, Proc: nfs.MountProcMnt}).Append(nil)
	msg = xdr.AppendOpaque(msg, []byte(path))
	_, err = nc.Write(binary.BigEndian.AppendUint32(nil, xdr.LastFragment|uint32(len(msg))))
	require.NoError(t, err)
	_, err = nc.Write(msg)
	require.NoError(t, err)
	reply, err := xdr.ReadRecord(nc, nil, 1<<20)
	require.NoError(t, err)
	return reply
}

// mntStatus is the mountstat3 of a MNT reply.
func mntStatus(t *testing.T, reply []byte) uint32 {
	t.Helper()
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	require.NoError(t, err)
	r := xdr.NewReader(reply[off:])
	st, err := r.Uint32()
	require.NoError(t, err)
	return st
}

// okResults checks that reply is an accepted, successful RPC reply whose
// results start with status 0 (NFS3_OK, MNT3_OK) and returns a reader of
// the rest.
func okResults(t *testing.T, reply []byte, what string) *xdr.Reader {
	t.Helper()
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	require.NoError(t, err)
	require.Equal(t, xdr.AcceptSuccess, rh.AcceptStat, what)
	r := xdr.NewReader(reply[off:])
	status, err := r.Uint32()
	require.NoError(t, err)
	require.Zero(t, status, "%s status", what)
	return &r
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("gave up waiting for %s", what)
}

// TestCPUProfile: -cpuprofile writes a pprof profile (gzip-compressed
// protocol buffer) by the time run returns after shutdown.
func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan *server.Server, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-dir", dir, "-addr", "127.0.0.1", "-rdma-port", "0", "-provider", "soft",
			"-rpcbind=false", "-cpuprofile", prof}, io.Discard, func(s *server.Server) { ready <- s })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	cancel()
	require.NoError(t, <-done)
	b, err := os.ReadFile(prof)
	require.NoError(t, err)
	require.Greater(t, len(b), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, b[:2], "a gzip-compressed profile")

	err = run(context.Background(), []string{"-dir", dir, "-provider", "soft", "-rpcbind=false",
		"-cpuprofile", filepath.Join(dir, "no", "such", "dir")}, io.Discard, nil)
	require.ErrorContains(t, err, "-cpuprofile")
}

// TestBadFlags: a flag out of its range (or not a flag) ends the program
// with exit status 2 and a message naming the flag, one line of ours (the
// flag package adds the usage to its own), before it listens: -rdma-port
// and -tcp-port name a port in use, which listening would report instead.
// -h exits 0.
func TestBadFlags(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	_, port, _ := net.SplitHostPort(busy.Addr().String())
	base := []string{"-dir", t.TempDir(), "-addr", "127.0.0.1", "-rdma-port", port, "-tcp-port", port,
		"-provider", "soft", "-rpcbind=false"}
	for _, tc := range []struct {
		args []string
		name string // what the message must name
	}{
		{[]string{"-credits", "-5"}, "-credits -5"},
		{[]string{"-credits", "100000"}, "-credits 100000"},
		{[]string{"-inline-send", "100"}, "-inline-send 100"},
		{[]string{"-inline-send", "5000"}, "-inline-send 5000"},
		{[]string{"-inline-recv", "524288"}, "-inline-recv 524288"},
		{[]string{"-concurrent-calls", "-3"}, "-concurrent-calls -3"},
		{[]string{"-concurrent-calls", "5000"}, "-concurrent-calls 5000"},
		{[]string{"-max-rpc", "100"}, "-max-rpc 100"},
		{[]string{"-max-rpc", "-1"}, "-max-rpc -1"},
		{[]string{"-max-rpc", "1073741824"}, "-max-rpc 1073741824"},
		{[]string{"-backlog", "-1"}, "-backlog -1"},
		{[]string{"-backlog", "100000"}, "-backlog 100000"},
		{[]string{"-max-conns", "-1"}, "-max-conns -1"},
		{[]string{"-rdma-port", "-1"}, "-rdma-port -1"},
		{[]string{"-rdma-port", "65536"}, "-rdma-port 65536"},
		{[]string{"-tcp-port", "70000"}, "-tcp-port 70000"},
		{[]string{"-gc-percent", "-2"}, "-gc-percent -2"},
		{[]string{"-anonuid", "0"}, "-anonuid 0"},
		{[]string{"-anongid", "4294967295"}, "-anongid 4294967295"},
		{[]string{"-anonuid", "-1"}, "-anonuid"},
		{[]string{"-squash", "root"}, "-squash"},
		{[]string{"-provider", "x"}, "-provider"},
		{[]string{"-log-level", "loud"}, "-log-level"},
		{[]string{"-credits", "many"}, "-credits"},
		{[]string{"-frobnicate"}, "-frobnicate"},
		{[]string{"-exports", "/etc/exports"}, "-dir and -exports"},
		{[]string{"-log-format", "xml"}, "-log-format"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		var errb bytes.Buffer
		status := mainStatus(t.Context(), append(append([]string(nil), base...), tc.args...), &errb)
		require.Equal(t, 2, status, "%v: %s", tc.args, errb.String())
		first, _, _ := strings.Cut(errb.String(), "\n")
		require.Contains(t, first, tc.name, "%v: the first line names the flag", tc.args)
		require.NotContains(t, errb.String(), "address already in use", "%v: nothing listens", tc.args)
		if !strings.Contains(errb.String(), "Usage") {
			require.Equal(t, 1, strings.Count(errb.String(), "\n"), "%v: one line: %q", tc.args, errb.String())
			require.True(t, strings.HasPrefix(first, "rdma-nfsd: "), first)
		}
	}
	for _, args := range [][]string{{"-h"}, {"-help"}, append(base, "-h")} {
		var errb bytes.Buffer
		require.Equal(t, 0, mainStatus(t.Context(), args, &errb), "%v", args)
		require.Contains(t, errb.String(), "-concurrent-calls", "%v prints the usage", args)
	}
	// Listening on a port in use is a failure, not the command line's.
	var errb bytes.Buffer
	require.Equal(t, 1, mainStatus(t.Context(), base, &errb), errb.String())
	require.Contains(t, errb.String(), "address already in use")
}

// TestRdmaNfsdExports: -exports serves the directories of an exports file
// with their client rules; /metrics is Prometheus's text format; SIGHUP
// re-reads the file, and a bad one is refused with the exports in force
// kept; -exports excludes the per-export flags; -version exits 0.
func TestRdmaNfsdExports(t *testing.T) {
	base, a, b, file, write := exportsDirs(t)
	write(a + " 127.0.0.1(rw,insecure,no_root_squash)\n" + b + " 10.0.0.0/8(rw)\n")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, logs, done := startRun(t, ctx, "-exports", file, "-addr", "127.0.0.1", "-rdma-port", "0", "-provider", "soft",
		"-rpcbind=false", "-metrics", "127.0.0.1:0", "-log-format", "json")
	_, tcpAddr := srv.Addrs()
	require.Zero(t, mntStatus(t, mnt(t, tcpAddr.String(), a)), "MNT of an export admitting 127.0.0.1")
	require.EqualValues(t, 13, mntStatus(t, mnt(t, tcpAddr.String(), b)), "MNT3ERR_ACCES for an export that does not")
	require.EqualValues(t, 2, mntStatus(t, mnt(t, tcpAddr.String(), base)), "MNT3ERR_NOENT for a path no export holds")

	// /metrics, parsed as Prometheus parses it.
	m := regexp.MustCompile(`"prometheus":"(http://[^"]+)"`).FindStringSubmatch(logs.String())
	require.NotNil(t, m, "the /metrics URL in the log:\n%s", logs.String())
	resp, err := http.Get(m[1])
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	count := func(name string, labels map[string]string) float64 {
		for _, m := range mfs[name].GetMetric() {
			match := true
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					match = false
				}
			}
			if match {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
		return 0
	}
	require.Equal(t, 1.0, count("rdma_nfsd_calls_total", map[string]string{"procedure": "mnt", "status": "MNT3_OK"}))
	require.Equal(t, 1.0, count("rdma_nfsd_calls_total", map[string]string{"procedure": "mnt", "status": "MNT3ERR_ACCES"}))
	require.Equal(t, 1.0, count("rdma_nfsd_build_info", nil))
	require.Contains(t, mfs, "go_goroutines")

	// SIGHUP: b now admits 127.0.0.1.
	write(a + " 127.0.0.1(rw,insecure)\n" + b + " 127.0.0.0/8(ro,insecure)\n")
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	waitFor(t, "the reload", func() bool { return strings.Contains(logs.String(), "rdma-nfsd: exports reloaded") })
	require.Zero(t, mntStatus(t, mnt(t, tcpAddr.String(), b)), "MNT after the rule admits 127.0.0.1")

	// A bad file: refused with its line, the exports in force stay.
	write(a + " 127.0.0.1(rw)\n" + b + " nohost.example(rw)\n")
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	waitFor(t, "the refusal", func() bool { return strings.Contains(logs.String(), "exports:2:") })
	require.Contains(t, logs.String(), "exports file refused")
	require.Zero(t, mntStatus(t, mnt(t, tcpAddr.String(), b)), "MNT under the exports in force")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("rdma-nfsd did not shut down")
	}

	var errb bytes.Buffer
	require.Equal(t, 2, mainStatus(t.Context(), []string{"-exports", file, "-squash", "all_squash"}, &errb))
	require.Contains(t, errb.String(), "-squash: with -exports")
	require.Equal(t, 0, mainStatus(t.Context(), []string{"-version"}, io.Discard))
}

// mainStatus serves with the command line args as main does until ctx is
// done and returns the exit status, having reported an error on stderr
// (cmdline.Status).
func mainStatus(ctx context.Context, args []string, stderr io.Writer) int {
	return cmdline.Status("rdma-nfsd", run(ctx, args, stderr, nil), stderr)
}
