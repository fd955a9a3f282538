package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/go-rpcrdma/rpcrdma/internal/buildinfo"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// promHandler serves srv's metrics in the Prometheus text format
// (server.Server.Collector), its RDMA listeners' (listenerCollector),
// with the Go runtime's, the process's, and rdma_nfsd_build_info (1,
// labelled with the build).
func promHandler(srv *server.Server, provider verbs.Provider) http.Handler {
	reg := prometheus.NewRegistry()
	bi := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "rdma_nfsd_build_info",
		Help:        "Build info of the rdma-nfsd serving, in its labels (always 1).",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion},
	})
	build.Set(1)
	reg.MustRegister(srv.Collector(), newListenerCollector(srv, provider), build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// listenerMetric is one figure of an RDMA listener: its description and
// how to read it.
type listenerMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(l server.RDMAListener) float64
}

// listenerCollector reports each RDMA listener of the server
// (transport.ListenerStats and ListenerLimits), labelled with its address
// ("listener"), and the bytes the verbs provider holds registered.
type listenerCollector struct {
	srv        *server.Server
	meter      verbs.MemoryMeter // nil if the provider does not count
	provider   string
	metrics    []listenerMetric
	registered *prometheus.Desc
}

func newListenerCollector(srv *server.Server, provider verbs.Provider) *listenerCollector {
	c := &listenerCollector{srv: srv, provider: provider.Name(),
		registered: prometheus.NewDesc("rpcrdma_provider_registered_bytes",
			"Bytes of memory the verbs provider holds registered now (registered bytes), over all its connections and handshakes.", []string{"provider"}, nil),
	}
	c.meter, _ = provider.(verbs.MemoryMeter)
	gauge := func(name, help string, v func(l server.RDMAListener) float64) {
		c.metrics = append(c.metrics, listenerMetric{
			prometheus.NewDesc("rpcrdma_listener_"+name, help, []string{"listener"}, nil), prometheus.GaugeValue, v})
	}
	counter := func(name, help string, v func(l server.RDMAListener) float64) {
		c.metrics = append(c.metrics, listenerMetric{
			prometheus.NewDesc("rpcrdma_listener_"+name+"_total", help, []string{"listener"}, nil), prometheus.CounterValue, v})
	}
	gauge("handshakes", "Connection handshakes in progress.",
		func(l server.RDMAListener) float64 { return float64(l.Stats.Handshakes) })
	gauge("queued", "Connections established and queued, waiting to be served (with the handshakes, the accept backlog).",
		func(l server.RDMAListener) float64 { return float64(l.Stats.Queued) })
	gauge("backlog_limit", "Backlog limit: the most handshakes plus queued connections the listener holds (the -backlog flag).",
		func(l server.RDMAListener) float64 { return float64(l.Limits.Backlog) })
	gauge("connections", "Connections established and not yet closed.",
		func(l server.RDMAListener) float64 { return float64(l.Stats.Conns) })
	gauge("connections_limit", "Connections limit: the most handshakes plus connections (the -max-conns flag; 0 means no limit).",
		func(l server.RDMAListener) float64 { return float64(l.Limits.MaxConns) })
	gauge("call_bytes", "Call bytes: bytes of call data pulled by RDMA Read and held until the call is executed.",
		func(l server.RDMAListener) float64 { return float64(l.Stats.CallBytes) })
	gauge("call_bytes_limit", "Call bytes limit: the most bytes of call data the listener's connections hold at once.",
		func(l server.RDMAListener) float64 { return float64(l.Limits.Calls) })
	gauge("reply_bytes", "Reply bytes: bytes of replies staged for RDMA Write whose Send has not completed.",
		func(l server.RDMAListener) float64 { return float64(l.Stats.ReplyBytes) })
	gauge("reply_bytes_limit", "Reply bytes limit: the most bytes of staged replies the listener's connections hold at once.",
		func(l server.RDMAListener) float64 { return float64(l.Limits.Replies) })
	gauge("registered_bytes", "Registered bytes: bytes of the server's buffers the listener's connections hold registered for direct placement.",
		func(l server.RDMAListener) float64 { return float64(l.Stats.Registered) })
	gauge("registered_bytes_limit", "Registered bytes limit: the most bytes the listener's connections hold registered for direct placement.",
		func(l server.RDMAListener) float64 { return float64(l.Limits.Registered) })
	counter("accepted", "Connections accepted: established after their handshake.",
		func(l server.RDMAListener) float64 { return float64(l.Stats.Accepted) })
	counter("rejected_backlog", "Connection requests rejected because the backlog was full of established connections.",
		func(l server.RDMAListener) float64 { return float64(l.Stats.RejectedBacklog) })
	counter("rejected_cap", "Connection requests rejected because the connections were at their cap (the -max-conns flag).",
		func(l server.RDMAListener) float64 { return float64(l.Stats.RejectedCap) })
	counter("rejected_addr", "Connection requests rejected because they were sent to another address (addr) than the listener's.",
		func(l server.RDMAListener) float64 { return float64(l.Stats.RejectedAddr) })
	counter("handshake_timeouts", "Handshakes abandoned after the handshake timeout (10 seconds by default).",
		func(l server.RDMAListener) float64 { return float64(l.Stats.HandshakeTimeouts) })
	counter("handshake_failures", "Handshake failures other than timeouts: the peer went away, or setting up the connection failed.",
		func(l server.RDMAListener) float64 { return float64(l.Stats.HandshakeFailures) })
	counter("handshakes_evicted", "Handshakes evicted: abandoned to make room for a newer connection request.",
		func(l server.RDMAListener) float64 { return float64(l.Stats.HandshakesEvicted) })
	counter("handshakes_displaced", "Handshakes displaced: evicted for a connection request from another source address (one holding fewer handshakes in progress).",
		func(l server.RDMAListener) float64 { return float64(l.Stats.HandshakesDisplaced) })
	gauge("handshakes_limit", "Limit on handshakes in progress: what the handshake memory budget holds, at most -backlog.",
		func(l server.RDMAListener) float64 { return float64(l.Limits.Handshakes) })
	gauge("handshake_memory_limit_bytes", "Limit of registered memory for handshakes (those in progress and those ending): the handshake memory budget.",
		func(l server.RDMAListener) float64 { return float64(l.Limits.HandshakeMemory) })
	return c
}

func (c *listenerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
	ch <- c.registered
}

func (c *listenerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.srv.RDMAListeners() {
		name := l.Addr.String()
		for _, m := range c.metrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(l), name)
		}
	}
	if c.meter != nil {
		ch <- prometheus.MustNewConstMetric(c.registered, prometheus.GaugeValue, float64(c.meter.RegisteredBytes()), c.provider)
	}
}
