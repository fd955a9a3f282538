package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestMetricNames: every metric of rdma-nfsd's own (rdma_nfsd_*,
// rpcrdma_*), scraped and parsed with the Prometheus text parser, is named
// for an operator, in lower-case words separated by '_' (no letter on its
// own, no word split in two: each word of the name, the namespace and the
// unit aside, is a word of its description), and described in plain
// words: a HELP text that names no Go identifier (CamelCase, or a package's
// name before one).
func TestMetricNames(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, _, done := startRun(t, ctx, "-dir", t.TempDir(), "-addr", "127.0.0.1", "-rdma-port", "0", "-provider", "soft", "-rpcbind=false")
	rdmaAddr, tcpAddr := srv.Addrs()
	root := mountRoot(t, tcpAddr.String())
	c, err := transport.Dial(ctx, rdmaAddr.String(), &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
	require.NoError(t, err)
	call := xdr.AppendOpaque((&xdr.CallHeader{XID: 1, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcGetattr}).Append(nil), root)
	_, err = c.Call(ctx, call, nil)
	require.NoError(t, err)

	rec := httptest.NewRecorder()
	promHandler(srv, &soft.Provider{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(rec.Body)
	require.NoError(t, err)
	ours := 0
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "rdma_nfsd_") && !strings.HasPrefix(name, "rpcrdma_") {
			continue // go_*, process_*: the Prometheus client library's
		}
		ours++
		require.NoError(t, checkMetric(name, mf.GetHelp()))
	}
	require.Greater(t, ours, 40, "the server's, the listener's and the provider's metrics")
	require.Contains(t, mfs, "rdma_nfsd_calls_total")
	require.Contains(t, mfs, "rpcrdma_listener_accepted_total")
	require.NoError(t, c.Close())
	cancel()
	require.NoError(t, <-done)

	// The checker refuses what it is for.
	for name, help := range map[string]string{
		"rpcrdma_bad_xi_ds_total":  "Replies whose XID matched no call.",
		"rpcrdma_sends_total":      "transport.Stats.Sends, summed over every connection.",
		"rpcrdma_listener_x_total": "x",
		"rpcrdma_Sends_total":      "Sends.",
		"rpcrdma_calls_total":      "",
		"rpcrdma_call_bytes_limit": "Bound on call bytes (limits.ListenerCalls).",
	} {
		require.Error(t, checkMetric(name, help), name)
	}
}

// checkMetric checks a metric's name and HELP text (TestMetricNames).
func checkMetric(name, help string) error {
	if !regexp.MustCompile(`^[a-z_]+$`).MatchString(name) {
		return fmt.Errorf("%s: not lower-case words and '_'", name)
	}
	if help == "" {
		return fmt.Errorf("%s: no HELP", name)
	}
	if id := regexp.MustCompile(`\b[A-Za-z]*[a-z][A-Z]\w*|\b[a-z]\w*\.[A-Z]\w*`).FindString(help); id != "" {
		return fmt.Errorf("%s: HELP names %q: %s", name, id, help)
	}
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`[a-z0-9]+`).FindAllString(strings.ToLower(help), -1) {
		words[w] = true
	}
	segs := strings.Split(name, "_")
	for i, s := range segs {
		switch {
		case len(s) < 2:
			return fmt.Errorf("%s: %q is no word", name, s)
		case i < 2 && (name == "rdma_nfsd_"+strings.Join(segs[2:], "_") || i == 0 && s == "rpcrdma"):
			// the namespace
		case i == 1 && segs[0] == "rpcrdma" && (s == "listener" || s == "provider"):
			// the subsystem
		case i == len(segs)-1 && (s == "total" || s == "bytes" || s == "seconds" || s == "info"):
			// the unit, or a counter's suffix
		case !words[s] && !words[strings.TrimSuffix(s, "s")] && !words[s+"s"]:
			return fmt.Errorf("%s: %q is not a word of its HELP: %s", name, s, help)
		}
	}
	return nil
}
