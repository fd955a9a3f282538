package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestJSONLogs runs rdma-nfsd with -log-format json at debug level through
// a lifecycle (start, MNT admitted and refused, RDMA connections, calls
// of an unknown program and with garbage arguments, a connection closed,
// SIGUSR1, SIGHUP with a good and a bad file, shutdown) and parses every
// line as JSON: each key (nested ones by their path) has one JSON type
// across all messages, no value is a Go rendering of a struct ("{Field:"),
// addresses are "ip:port" strings, durations strings with a unit, and the
// SIGUSR1 and shutdown summaries count closed connections instead of
// listing them.
func TestJSONLogs(t *testing.T) {
	base, a, b, file, write := exportsDirs(t)
	write(a + " 127.0.0.1(rw,insecure,no_root_squash)\n" + b + " 10.0.0.0/8(rw)\n")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, logs, done := startRun(t, ctx, "-exports", file, "-addr", "127.0.0.1", "-rdma-port", "0", "-provider", "soft",
		"-rpcbind=false", "-metrics", "127.0.0.1:0", "-log-format", "json", "-log-level", "debug")
	rdmaAddr, tcpAddr := srv.Addrs()
	fh, err := okResults(t, mnt(t, tcpAddr.String(), a), "MNT").Opaque(64)
	require.NoError(t, err)
	require.EqualValues(t, 13, mntStatus(t, mnt(t, tcpAddr.String(), b)), "MNT3ERR_ACCES")
	require.EqualValues(t, 2, mntStatus(t, mnt(t, tcpAddr.String(), base)), "MNT3ERR_NOENT")

	dial := func() *transport.Conn {
		c, err := transport.Dial(ctx, rdmaAddr.String(), &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
		require.NoError(t, err)
		return c
	}
	open, closed := dial(), dial()
	defer open.Close()
	for _, c := range []*transport.Conn{open, closed} {
		call := xdr.AppendOpaque((&xdr.CallHeader{XID: 1, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcGetattr}).Append(nil), fh)
		_, err := c.Call(ctx, call, nil)
		require.NoError(t, err)
		_, err = c.Call(ctx, (&xdr.CallHeader{XID: 2, Prog: 100227, Vers: 3}).Append(nil), nil) // NFSACL: PROG_UNAVAIL
		require.NoError(t, err)
		_, err = c.Call(ctx, (&xdr.CallHeader{XID: 3, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcCreate}).Append(nil), nil)
		require.NoError(t, err, "GARBAGE_ARGS")
	}
	require.NoError(t, closed.Close())
	waitFor(t, "the closed connection's line", func() bool {
		return strings.Contains(logs.String(), `"msg":"nfs: connection closed","network":"rdma","remote":"`+closed.LocalAddr().String())
	})

	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR1))
	waitFor(t, "the SIGUSR1 report", func() bool { return strings.Contains(logs.String(), `"msg":"rdma-nfsd: connection"`) })
	write(a + " 127.0.0.1(rw,insecure)\n" + b + " 127.0.0.0/8(ro,insecure)\n")
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	waitFor(t, "the reload", func() bool { return strings.Contains(logs.String(), "rdma-nfsd: exports reloaded") })
	write(a + " 127.0.0.1(rw)\n" + b + " nohost.example(rw)\n")
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	waitFor(t, "the refusal", func() bool { return strings.Contains(logs.String(), "exports file refused") })
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("rdma-nfsd did not shut down")
	}

	types := map[string]map[string]string{} // key: JSON type: the first message with it
	msgs := map[string][]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "a line that is not JSON: %s", line)
		msgs[m["msg"].(string)] = append(msgs[m["msg"].(string)], m)
		walkJSON("", m, func(key string, v any) {
			if types[key] == nil {
				types[key] = map[string]string{}
			}
			if _, ok := types[key][jsonType(v)]; !ok {
				types[key][jsonType(v)] = m["msg"].(string)
			}
			if s, ok := v.(string); ok {
				require.NotRegexp(t, `\{[A-Z][A-Za-z0-9]*:|&\{`, s, "%s in %q: a Go struct's rendering", key, m["msg"])
			}
		})
	}
	for key, ts := range types {
		require.Len(t, ts, 1, "%s has several JSON types: %v", key, ts)
	}
	for _, msg := range []string{"rdma-nfsd: serving", "nfs: MOUNT", "nfs: MOUNT refused", "rpcrdma: accepted",
		"nfs: program unavailable", "nfs: connection closed", "rdma-nfsd: stats", "rdma-nfsd: connection",
		"rdma-nfsd: exports reloaded", "rdma-nfsd: exports file refused; the exports in force stay", "rdma-nfsd: shutting down"} {
		require.NotEmpty(t, msgs[msg], "no %q in the lifecycle", msg)
	}
	for key, want := range map[string]string{"remote": `^127\.0\.0\.1:[0-9]+$`, "duration": `^[0-9.]+(ns|µs|ms|s)$|^[0-9hm.]+s$`} {
		require.Contains(t, types, key)
		for _, ms := range msgs {
			for _, m := range ms {
				if v, ok := m[key]; ok {
					require.Regexp(t, want, v, "%s in %q", key, m["msg"])
				}
			}
		}
	}
	require.Contains(t, types, "stats.negotiated.send_inline")
	require.Contains(t, types, "listener.accepted")
	require.Contains(t, types, "drc.hits")

	// SIGUSR1 and the shutdown: each a summary counting the connections
	// closed, and a line for each open one only (at the shutdown, which
	// closes them, none).
	require.Len(t, msgs["rdma-nfsd: stats"], 2)
	usr1, shutdown := msgs["rdma-nfsd: stats"][0], msgs["rdma-nfsd: stats"][1]
	require.EqualValues(t, [2]any{1.0, 1.0}, [2]any{usr1["connections_open"], usr1["connections_closed"]}, "%v", usr1)
	require.EqualValues(t, [2]any{0.0, 2.0}, [2]any{shutdown["connections_open"], shutdown["connections_closed"]}, "%v", shutdown)
	require.Len(t, msgs["rdma-nfsd: connection"], 1, "the open connection, at SIGUSR1")
	require.Equal(t, open.LocalAddr().String(), msgs["rdma-nfsd: connection"][0]["remote"])
	keys := make([]string, 0, len(types))
	for k := range types {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("%d keys: %s", len(keys), strings.Join(keys, " "))
}

// walkJSON calls f with every leaf of a decoded JSON object, keyed by its
// path ("stats.negotiated.send_inline"); an array is a leaf.
func walkJSON(prefix string, v any, f func(key string, v any)) {
	m, ok := v.(map[string]any)
	if !ok {
		f(prefix, v)
		return
	}
	for k, x := range m {
		if prefix != "" {
			k = prefix + "." + k
		}
		walkJSON(k, x, f)
	}
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// TestSnakeCase: the keys of the figures logged (statsValue).
func TestSnakeCase(t *testing.T) {
	for name, want := range map[string]string{
		"BadXIDs": "bad_xids", "RDMAReadBytes": "rdma_read_bytes", "SendWithInvalidate": "send_with_invalidate",
		"Sends": "sends", "ErrVersSent": "err_vers_sent", "ReadChunksInPlace": "read_chunks_in_place",
		"PeerR": "peer_r", "HandshakesEvicted": "handshakes_evicted", "IDs": "ids", "Conns": "conns",
	} {
		require.Equal(t, want, snakeCase(name), name)
	}
}
