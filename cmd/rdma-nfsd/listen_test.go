package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestAddrFlag: -addr takes IP addresses, comma-separated or repeated
// (the first replaces the default), IPv6 with or without brackets; the
// default is 127.0.0.1 alone; a value that is not an IP address, or an
// address given twice, ends the program with status 2 and a message
// naming -addr.
func TestAddrFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"127.0.0.1"}},
		{[]string{"-addr", "10.0.0.1"}, []string{"10.0.0.1"}},
		{[]string{"-addr", "10.0.0.1, 192.168.1.5"}, []string{"10.0.0.1", "192.168.1.5"}},
		{[]string{"-addr", "10.0.0.1", "-addr", "fe80::1,[::1]"}, []string{"10.0.0.1", "fe80::1", "::1"}},
		{[]string{"-addr", "0.0.0.0"}, []string{"0.0.0.0"}},
	} {
		o, err := parse(append([]string{"-dir", "/x"}, tc.args...), io.Discard)
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.want, o.addr.list(), "%v", tc.args)
	}
	for _, bad := range []string{"", "nohost.example", "10.0.0.1,", "10.0.0.256", "[::1", "10.0.0.1:20049", "10.0.0.1,10.0.0.1"} {
		var errb bytes.Buffer
		status := mainStatus(t.Context(), []string{"-dir", t.TempDir(), "-provider", "soft", "-addr", bad}, &errb)
		require.Equal(t, 2, status, "-addr %q: %s", bad, errb.String())
		first, _, _ := strings.Cut(errb.String(), "\n")
		require.Contains(t, first, "-addr", "-addr %q: the message names the flag", bad)
	}
	var errb bytes.Buffer
	require.Equal(t, 0, mainStatus(t.Context(), []string{"-h"}, &errb))
	require.Regexp(t, `-addr value\n\s+IP addresses .*default 127\.0\.0\.1 only`, errb.String(), "-h documents the default")
}

// TestListenDefaultLoopback: without -addr, rdma-nfsd listens at
// 127.0.0.1 only: NFS/RDMA and MOUNT are not reachable at the host's
// other addresses (those of its interfaces, and 127.0.0.2, which a
// wildcard listener would answer).
func TestListenDefaultLoopback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, _, done := startRun(t, ctx, "-dir", t.TempDir(), "-rdma-port", "0", "-provider", "soft", "-rpcbind=false")
	var ports []string
	for _, a := range append(srv.RDMAAddrs(), srv.TCPAddrs()...) {
		h, p, err := net.SplitHostPort(a.String())
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1", h, "%s", a)
		ports = append(ports, p)
	}
	require.Len(t, ports, 2)
	others := []string{"127.0.0.2"}
	ifAddrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range ifAddrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			others = append(others, ipn.IP.String())
		}
	}
	t.Logf("addresses that must not answer: %v", others)
	for _, h := range others {
		for _, p := range ports {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(h, p), 5*time.Second)
			if err == nil {
				_ = c.Close()
			}
			require.Error(t, err, "something listens at %s", net.JoinHostPort(h, p))
		}
	}
	// While 127.0.0.1 serves.
	mountRoot(t, srv.TCPAddr().String())
	cancel()
	require.NoError(t, <-done)
}

// TestListenTwoAddrs: -addr 127.0.0.1,127.0.0.2 serves MOUNT and NFS over
// RDMA at both, on one port each, and /metrics names each listener.
func TestListenTwoAddrs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, logs, done := startRun(t, ctx, "-dir", t.TempDir(), "-addr", "127.0.0.1,127.0.0.2", "-rdma-port", "0",
		"-provider", "soft", "-rpcbind=false", "-metrics", "127.0.0.1:0")
	rdma, tcp := srv.RDMAAddrs(), srv.TCPAddrs()
	require.Len(t, rdma, 2)
	require.Len(t, tcp, 2)
	var labels []string
	for i, host := range []string{"127.0.0.1", "127.0.0.2"} {
		h, _, _ := net.SplitHostPort(tcp[i].String())
		require.Equal(t, host, h)
		root := mountRoot(t, tcp[i].String())
		require.NotEmpty(t, root, "MNT at %s", tcp[i])
		h, _, _ = net.SplitHostPort(rdma[i].String())
		require.Equal(t, host, h)
		c := dialNFS(t, rdma[i].String())
		_ = c.Close()
		labels = append(labels, rdma[i].String())
	}
	mfs := scrape(t, metricsURL(t, logs.String()))
	for _, l := range labels {
		require.Equal(t, 1.0, value(t, mfs, "rpcrdma_listener_accepted_total", l), "the listener %s", l)
	}
	cancel()
	require.NoError(t, <-done)
}

// TestListenerMetrics: /metrics, parsed with the Prometheus text
// parser, has each RDMA listener's gauges and counters: connections
// follow the connections opened and closed; the limits are the
// configured ones; the provider's registered bytes rise with the
// connections; counters never go down from one scrape to the next.
func TestListenerMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, logs, done := startRun(t, ctx, "-dir", t.TempDir(), "-rdma-port", "0", "-provider", "soft",
		"-rpcbind=false", "-metrics", "127.0.0.1:0", "-backlog", "32", "-max-conns", "50")
	url := metricsURL(t, logs.String())
	l := srv.RDMAAddr().String()

	last := map[string]float64{} // counters' values at the last scrape
	get := func() map[string]*dto.MetricFamily {
		mfs := scrape(t, url)
		for name, mf := range mfs {
			if mf.GetType() != dto.MetricType_COUNTER || !strings.HasPrefix(name, "rpcrdma_") {
				continue
			}
			for _, m := range mf.GetMetric() {
				key := name + m.String()
				require.GreaterOrEqual(t, m.GetCounter().GetValue(), last[key], "%s went down", key)
				last[key] = m.GetCounter().GetValue()
			}
		}
		return mfs
	}
	mfs := get()
	require.Equal(t, 0.0, value(t, mfs, "rpcrdma_listener_connections", l))
	require.Equal(t, 32.0, value(t, mfs, "rpcrdma_listener_backlog_limit", l))
	require.Equal(t, 50.0, value(t, mfs, "rpcrdma_listener_connections_limit", l))
	lim := srv.RDMAListeners()[0].Limits
	require.Positive(t, lim.Calls)
	require.Equal(t, float64(lim.Calls), value(t, mfs, "rpcrdma_listener_call_bytes_limit", l))
	require.Equal(t, float64(lim.Replies), value(t, mfs, "rpcrdma_listener_reply_bytes_limit", l))
	require.Equal(t, float64(lim.Registered), value(t, mfs, "rpcrdma_listener_registered_bytes_limit", l))
	for _, g := range []string{"handshakes", "queued", "call_bytes", "reply_bytes", "registered_bytes"} {
		require.Equal(t, 0.0, value(t, mfs, "rpcrdma_listener_"+g, l), g)
	}
	idleRegistered := value(t, mfs, "rpcrdma_provider_registered_bytes", "soft")

	const rounds, perRound = 5, 8
	for r := range rounds {
		var conns []*transport.Conn
		for range perRound {
			conns = append(conns, dialNFS(t, l))
		}
		waitFor(t, "the connections gauge", func() bool {
			return value(t, get(), "rpcrdma_listener_connections", l) == perRound
		})
		mfs = get()
		require.Equal(t, float64((r+1)*perRound), value(t, mfs, "rpcrdma_listener_accepted_total", l))
		require.Greater(t, value(t, mfs, "rpcrdma_provider_registered_bytes", "soft"), idleRegistered,
			"the connections' buffers are registered")
		for _, c := range conns {
			require.NoError(t, c.Close())
		}
		waitFor(t, "the connections to close", func() bool {
			return value(t, get(), "rpcrdma_listener_connections", l) == 0
		})
	}
	mfs = get()
	require.Equal(t, float64(rounds*perRound), value(t, mfs, "rpcrdma_listener_accepted_total", l))
	require.Zero(t, value(t, mfs, "rpcrdma_listener_rejected_cap_total", l))
	require.Zero(t, value(t, mfs, "rpcrdma_listener_rejected_addr_total", l))
	waitFor(t, "the registered bytes to fall back", func() bool {
		return value(t, get(), "rpcrdma_provider_registered_bytes", "soft") <= idleRegistered
	})
	cancel()
	require.NoError(t, <-done)
}

// dialNFS connects to rdma-nfsd at addr over the soft provider and makes
// one NFS NULL call.
func dialNFS(t *testing.T, addr string) *transport.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, addr, &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
	require.NoError(t, err, "dial %s", addr)
	_, err = c.Call(ctx, nullCall(), nil)
	require.NoError(t, err, "NULL at %s", addr)
	return c
}

func metricsURL(t *testing.T, logs string) string {
	t.Helper()
	m := regexp.MustCompile(`prometheus=(http://\S+)`).FindStringSubmatch(logs)
	require.NotNil(t, m, "the /metrics URL in the log:\n%s", logs)
	return m[1]
}

// scrape reads url with Prometheus's text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return mfs
}

// value returns the value of the metric name whose single label has the
// value label; the test fails if there is none.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name, label string) float64 {
	t.Helper()
	require.Contains(t, mfs, name)
	for _, m := range mfs[name].GetMetric() {
		if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s{%q}", name, label)
	return 0
}

// nullCall is an NFS NULL call.
func nullCall() []byte {
	return (&xdr.CallHeader{XID: 1, Prog: nfs.ProgNFS, Vers: 3, Proc: 0}).Append(nil)
}
