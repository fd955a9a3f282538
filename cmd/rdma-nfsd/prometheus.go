package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/go-rpcrdma/rpcrdma/internal/buildinfo"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// promHandler serves srv's metrics in the Prometheus text format
// (server.Server.Collector), with the Go runtime's, the process's, and
// rdma_nfsd_build_info (1, labelled with the build).
func promHandler(srv *server.Server) http.Handler {
	reg := prometheus.NewRegistry()
	bi := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "rdma_nfsd_build_info",
		Help:        "The build of rdma-nfsd serving (always 1).",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion},
	})
	build.Set(1)
	reg.MustRegister(srv.Collector(), build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
