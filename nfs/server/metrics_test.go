package server_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/nfstest"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// scrape gathers reg in the Prometheus text format and parses it back
// with the text parser, as a Prometheus server would read /metrics.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	out, err := p.TextToMetricFamilies(&buf)
	require.NoError(t, err, "the text format does not parse:\n%s", buf.String())
	return out
}

// sample returns the value of the metric name with labels (a counter's,
// a gauge's, or a histogram's count), 0 if absent.
func sample(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	mf := mfs[name]
	if mf == nil {
		return 0
	}
next:
	for _, m := range mf.Metric {
		for _, l := range m.Label {
			if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// histogramSum returns the sum of the NFS procedure proc's durations.
func histogramSum(mfs map[string]*dto.MetricFamily, proc string) float64 {
	if mf := mfs["rdma_nfsd_call_duration_seconds"]; mf != nil {
		for _, m := range mf.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["program"] == "nfs" && labels["procedure"] == proc {
				return m.Histogram.GetSampleSum()
			}
		}
	}
	return 0
}

// TestMetrics: per-procedure counts equal the calls made, by status;
// the duration histogram counts them too; the transport counters, summed
// over every connection, never go down while 200 connections open and
// close; connections open are a gauge.
func TestMetrics(t *testing.T) {
	env := nfstest.Start(t, nil)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(env.Srv.Collector())
	ctx := callCtx(t)
	c := env.Exp.Client

	_, err := c.Getattr(ctx, env.Exp.Root) // the root in the open-file cache: the next run inline
	require.NoError(t, err)
	before := scrape(t, reg)
	getattr := map[string]string{"program": "nfs", "procedure": "getattr", "status": "NFS3_OK"}
	noent := map[string]string{"program": "nfs", "procedure": "lookup", "status": "NFS3ERR_NOENT"}
	g0, n0 := sample(before, "rdma_nfsd_calls_total", getattr), sample(before, "rdma_nfsd_calls_total", noent)
	h0 := sample(before, "rdma_nfsd_call_duration_seconds", map[string]string{"procedure": "getattr"})
	s0 := histogramSum(before, "getattr")
	answered := map[string]string{"outcome": "answered"}
	i0 := sample(before, "rdma_nfsd_inline_calls_total", answered)
	for range 25 {
		_, err := c.Getattr(ctx, env.Exp.Root)
		require.NoError(t, err)
	}
	for i := range 7 {
		_, _, err := c.Lookup(ctx, env.Exp.Root, fmt.Sprintf("missing-%d", i))
		require.Error(t, err)
	}
	after := scrape(t, reg)
	require.Equal(t, g0+25, sample(after, "rdma_nfsd_calls_total", getattr), "GETATTR NFS3_OK")
	require.Equal(t, n0+7, sample(after, "rdma_nfsd_calls_total", noent), "LOOKUP NFS3ERR_NOENT")
	require.Equal(t, h0+25, sample(after, "rdma_nfsd_call_duration_seconds", map[string]string{"procedure": "getattr"}), "GETATTR durations")
	// The root's GETATTRs run on the polling goroutine, timed from their
	// arrival (session.inline), not in pending.
	require.GreaterOrEqual(t, sample(after, "rdma_nfsd_inline_calls_total", answered)-i0, 25.0, "GETATTRs answered inline")
	require.Greater(t, histogramSum(after, "getattr"), s0, "GETATTR durations' sum")

	// Eight in flight: the poll loop runs several calls at a time and
	// times them at the run's end; every one is counted and timed when
	// its caller has the reply.
	var g errgroup.Group
	for range 8 {
		g.Go(func() error {
			for range 25 {
				if _, err := c.Getattr(ctx, env.Exp.Root); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	many := scrape(t, reg)
	require.Equal(t, g0+225, sample(many, "rdma_nfsd_calls_total", getattr), "GETATTR NFS3_OK, eight in flight")
	require.Equal(t, h0+225, sample(many, "rdma_nfsd_call_duration_seconds", map[string]string{"procedure": "getattr"}), "GETATTR durations, eight in flight")
	require.Greater(t, histogramSum(many, "getattr"), histogramSum(after, "getattr"), "GETATTR durations' sum, eight in flight")
	require.Equal(t, 1.0, sample(after, "rdma_nfsd_connections", map[string]string{"network": "rdma"}))
	wantV := "1"
	if nfstest.Version2 {
		wantV = "2"
	}
	require.Equal(t, 1.0, sample(after, "rdma_nfsd_rdma_connections", map[string]string{"version": wantV}), "the connection's RPC-over-RDMA version")
	require.NotZero(t, sample(after, "rpcrdma_recvs_total", nil))
	require.NotZero(t, sample(before, "rdma_nfsd_calls_total", map[string]string{"program": "mount", "procedure": "mnt", "status": "MNT3_OK"}), "the mount's MNT")

	// 200 connections, each one NULL call, then closed: no counter goes
	// down between scrapes, and the calls add up.
	prev := scrape(t, reg)
	null := map[string]string{"program": "nfs", "procedure": "null", "status": "SUCCESS"}
	nulls := sample(prev, "rdma_nfsd_calls_total", null)
	for i := range 200 {
		dctx, cancel := context.WithTimeout(context.Background(), nfstest.Guard)
		conn, err := transport.Dial(dctx, env.Srv.RDMAAddr().String(), &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
		cancel()
		require.NoError(t, err)
		require.NoError(t, conn.SetDeadline(time.Now().Add(nfstest.Guard)))
		h := xdr.CallHeader{XID: uint32(i + 1), Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcNull,
			Cred: xdr.OpaqueAuth{Flavor: xdr.FlavorNone}, Verf: xdr.OpaqueAuth{Flavor: xdr.FlavorNone}}
		require.NoError(t, conn.WriteMsg(h.Append(nil)))
		_, err = conn.ReadMsg(nil)
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		if i%20 == 19 {
			cur := scrape(t, reg)
			for name, mf := range cur {
				if mf.GetType() != dto.MetricType_COUNTER {
					continue
				}
				for _, m := range mf.Metric {
					labels := map[string]string{}
					for _, l := range m.Label {
						labels[l.GetName()] = l.GetValue()
					}
					require.GreaterOrEqual(t, m.Counter.GetValue(), sample(prev, name, labels), "%s%v went down", name, labels)
				}
			}
			prev = cur
		}
	}
	require.Equal(t, nulls+200, sample(prev, "rdma_nfsd_calls_total", null), "NULL calls of 200 connections")
}
