package server

import (
	"encoding/binary"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Metrics (Server.Collector): per procedure, the calls answered by
// status and the time from a call's dispatch to its reply; the transport's
// counters summed over every connection the Server ever had (so they never
// go down); connections open; the duplicate request cache.

// callMetrics are the per-procedure figures, resolved once per procedure
// so that a call costs a counter's and a histogram's atomic updates.
type callMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	nfsDur   [nfs.ProcCommit + 1]prometheus.Observer
	mountDur [nfs.MountProcExport + 1]prometheus.Observer
}

func newCallMetrics() *callMetrics {
	m := &callMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rdma_nfsd_calls_total",
			Help: "Calls answered, by program, procedure and status (nfsstat3, mountstat3, or the RPC accept_stat or MSG_DENIED).",
		}, []string{"program", "procedure", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rdma_nfsd_call_duration_seconds",
			Help: "Time from a call's dispatch to its reply's hand-off to the transport, by program and procedure.",
			// 10 µs to about 10 s.
			Buckets: prometheus.ExponentialBuckets(10e-6, 4, 11),
		}, []string{"program", "procedure"}),
	}
	for p := range m.nfsDur {
		m.nfsDur[p] = m.duration.WithLabelValues("nfs", procLabel(nfs.ProgNFS, uint32(p)))
	}
	for p := range m.mountDur {
		m.mountDur[p] = m.duration.WithLabelValues("mount", procLabel(nfs.ProgMount, uint32(p)))
	}
	return m
}

// procLabel is the procedure's name in RFC 1813, lower case ("getattr").
func procLabel(prog, proc uint32) string {
	name := nfs.ProcName(prog, 3, proc)
	if i := strings.IndexByte(name, ' '); i >= 0 && (prog == nfs.ProgNFS || prog == nfs.ProgMount) {
		name = name[i+1:]
	}
	return strings.ToLower(name)
}

// pendingCall is a call dispatched and not yet answered.
type pendingCall struct {
	prog, proc uint32
	start      time.Time
}

// pendingCalls are a connection's calls between dispatch and reply, by
// XID (a transport delivers one call per XID at a time). A call that gets
// no reply (its connection ends first) stays until the session goes.
type pendingCalls struct {
	mu    sync.Mutex
	calls map[uint32]pendingCall
}

// begin notes that the call h is dispatched.
func (p *pendingCalls) begin(h *xdr.CallHeader) {
	p.mu.Lock()
	if p.calls == nil {
		p.calls = make(map[uint32]pendingCall)
	}
	p.calls[h.XID] = pendingCall{prog: h.Prog, proc: h.Proc, start: time.Now()}
	p.mu.Unlock()
}

// end takes the call reply answers.
func (p *pendingCalls) end(reply []byte) (pendingCall, bool) {
	if len(reply) < 4 {
		return pendingCall{}, false
	}
	xid := binary.BigEndian.Uint32(reply)
	p.mu.Lock()
	c, ok := p.calls[xid]
	delete(p.calls, xid)
	p.mu.Unlock()
	return c, ok
}

// observe counts the reply to c.
func (m *callMetrics) observe(c pendingCall, reply []byte) {
	d := time.Since(c.start).Seconds()
	prog, proc := "other", "other"
	switch {
	case c.prog == nfs.ProgNFS && c.proc < uint32(len(m.nfsDur)):
		prog, proc = "nfs", procLabel(c.prog, c.proc)
		m.nfsDur[c.proc].Observe(d)
	case c.prog == nfs.ProgMount && c.proc < uint32(len(m.mountDur)):
		prog, proc = "mount", procLabel(c.prog, c.proc)
		m.mountDur[c.proc].Observe(d)
	}
	m.calls.WithLabelValues(prog, proc, replyStatus(c, reply)).Inc()
}

// replyStatus names what reply answered c: the procedure's status word
// (nfsstat3 or mountstat3) for an accepted, successful call that has one,
// else the RPC's accept_stat, or MSG_DENIED.
func replyStatus(c pendingCall, reply []byte) string {
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	switch {
	case err != nil:
		return "MALFORMED"
	case rh.Stat != xdr.MsgAccepted:
		return "MSG_DENIED"
	case rh.AcceptStat != xdr.AcceptSuccess:
		return rh.AcceptStat.String()
	case c.proc == 0 || len(reply) < off+4:
		return "SUCCESS" // NULL: no status
	}
	st := binary.BigEndian.Uint32(reply[off:])
	if c.prog == nfs.ProgMount {
		if c.proc != nfs.MountProcMnt {
			return "SUCCESS" // DUMP, UMNT, UMNTALL, EXPORT have none
		}
		return nfs3.MountStatus(st).String()
	}
	return nfs3.Status(st).String()
}

// collector is the Server's prometheus.Collector.
type collector struct {
	s *Server
	m *callMetrics

	transport  []*prometheus.Desc // one per uint64 field of transport.Stats
	fields     []int              // their indexes
	conns      *prometheus.Desc
	drcHits    *prometheus.Desc
	drcEntries *prometheus.Desc
}

// Collector returns the Server's metrics for a prometheus.Registry: the
// calls answered per procedure and status and their durations, the
// transport's counters summed over every RDMA connection the Server had
// (rpcrdma_*_total, one per counter of transport.Stats), the connections
// open by network, and the duplicate request cache's hits and entries.
// Counters never go down.
func (s *Server) Collector() prometheus.Collector {
	c := &collector{s: s, m: s.metrics,
		conns:      prometheus.NewDesc("rdma_nfsd_connections", "Connections open.", []string{"network"}, nil),
		drcHits:    prometheus.NewDesc("rdma_nfsd_drc_hits_total", "Retransmissions answered from the duplicate request cache.", nil, nil),
		drcEntries: prometheus.NewDesc("rdma_nfsd_drc_entries", "Entries in the duplicate request cache.", nil, nil),
	}
	t := reflect.TypeFor[transport.Stats]()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() != reflect.Uint64 {
			continue
		}
		c.fields = append(c.fields, i)
		c.transport = append(c.transport, prometheus.NewDesc("rpcrdma_"+snake(f.Name)+"_total",
			"transport.Stats."+f.Name+", summed over every RDMA connection the server had.", nil, nil))
	}
	return c
}

// snake turns a Go name into snake case ("RDMAReadBytes": "rdma_read_bytes").
func snake(name string) string {
	var b strings.Builder
	r := []rune(name)
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	c.m.calls.Describe(ch)
	c.m.duration.Describe(ch)
	for _, d := range c.transport {
		ch <- d
	}
	ch <- c.conns
	ch <- c.drcHits
	ch <- c.drcEntries
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.m.calls.Collect(ch)
	c.m.duration.Collect(ch)
	sum, open := c.s.transportTotals()
	v := reflect.ValueOf(sum)
	for i, f := range c.fields {
		ch <- prometheus.MustNewConstMetric(c.transport[i], prometheus.CounterValue, float64(v.Field(f).Uint()))
	}
	for _, network := range []string{NetRDMA, NetTCP} {
		ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(open[network]), network)
	}
	d := c.s.drc.stats()
	ch <- prometheus.MustNewConstMetric(c.drcHits, prometheus.CounterValue, float64(d.Hits))
	ch <- prometheus.MustNewConstMetric(c.drcEntries, prometheus.GaugeValue, float64(d.Entries))
}

// addStats adds every uint64 counter of b to a.
func addStats(a *transport.Stats, b transport.Stats) {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b)
	for i := range va.NumField() {
		if f := va.Field(i); f.Kind() == reflect.Uint64 {
			f.SetUint(f.Uint() + vb.Field(i).Uint())
		}
	}
}

// transportTotals sums the transport counters of every RDMA connection
// the Server had, and counts the connections open by network.
func (s *Server) transportTotals() (transport.Stats, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := s.endedStats
	open := map[string]int{}
	for ss := range s.sessions {
		open[ss.network]++
		if st, ok := ss.c.(interface{ Stats() transport.Stats }); ok {
			addStats(&sum, st.Stats())
		}
	}
	return sum, open
}
