//go:build e2eguest

package nfsdguest

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/go-rpcrdma/rpcrdma/internal/mountstats"
)

// metricsAddr is where the comparison's rdma-nfsd serves its metrics
// (-metrics): the server's own view of each workload's calls.
const metricsAddr = "127.0.0.1:20060"

// serverCalls is what rdma-nfsd's metrics say of some calls: per NFS
// procedure, the calls and the seconds from dispatch to the reply's
// hand-off to the transport (rdma_nfsd_call_duration_seconds), and how
// many calls the polling goroutine took inline and answered there or
// handed off (rdma_nfsd_inline_calls_total).
type serverCalls struct {
	count    map[string]uint64
	seconds  map[string]float64
	answered float64
	handed   float64
}

func newServerCalls() serverCalls {
	return serverCalls{count: map[string]uint64{}, seconds: map[string]float64{}}
}

// scrapeServer reads rdma-nfsd's metrics at addr.
func scrapeServer(t *testing.T, addr string) serverCalls {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("rdma-nfsd's metrics: %v", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("rdma-nfsd's metrics: %v", err)
	}
	sc := newServerCalls()
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	if mf := mfs["rdma_nfsd_call_duration_seconds"]; mf != nil {
		for _, m := range mf.GetMetric() {
			if label(m, "program") != "nfs" || m.GetHistogram().GetSampleCount() == 0 {
				continue
			}
			p := label(m, "procedure")
			sc.count[p] += m.GetHistogram().GetSampleCount()
			sc.seconds[p] += m.GetHistogram().GetSampleSum()
		}
	}
	if mf := mfs["rdma_nfsd_inline_calls_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			switch label(m, "outcome") {
			case "answered":
				sc.answered = m.GetCounter().GetValue()
			case "handed_off":
				sc.handed = m.GetCounter().GetValue()
			}
		}
	}
	if len(sc.count) == 0 {
		t.Fatalf("rdma-nfsd's metrics have no rdma_nfsd_call_duration_seconds of program nfs")
	}
	return sc
}

// add adds b - a to sc.
func (sc serverCalls) add(a, b serverCalls) serverCalls {
	for p, n := range b.count {
		sc.count[p] += n - a.count[p]
		sc.seconds[p] += b.seconds[p] - a.seconds[p]
	}
	sc.answered += b.answered - a.answered
	sc.handed += b.handed - a.handed
	return sc
}

// residence reports, per procedure of ops (the client's counts over the
// same repetitions), the client's round trip per call (mountstats' RTT:
// from the request's transmission to the reply's receipt), the server's
// time per call from dispatch to the reply's hand-off (rdma-nfsd's
// histogram), and what is left between them: both transports, both
// verbs stacks and the wake-ups on either side; then how the server
// took its calls.
func (sc serverCalls) residence(ops mountstats.Ops) string {
	var procs []string
	for p := range sc.count {
		if ops[strings.ToUpper(p)].Ops > 0 {
			procs = append(procs, p)
		}
	}
	slices.Sort(procs)
	var b strings.Builder
	for _, p := range procs {
		o := ops[strings.ToUpper(p)]
		rtt := float64(o.RTTMs) / float64(o.Ops)
		srv := 1e3 * sc.seconds[p] / float64(sc.count[p])
		fmt.Fprintf(&b, "%s RTT %.2f, server %.2f, between %.2f ms (%d calls); ", strings.ToUpper(p), rtt, srv, rtt-srv, sc.count[p])
	}
	fmt.Fprintf(&b, "inline: %.0f answered, %.0f handed off", sc.answered, sc.handed)
	return b.String()
}

// rttString lists each procedure's mean round trip (mountstats' RTT), in
// ms.
func rttString(ops mountstats.Ops) string {
	return ops.FormatMean(func(op mountstats.Op) float64 { return float64(op.RTTMs) / float64(op.Ops) })
}
