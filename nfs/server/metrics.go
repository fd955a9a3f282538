package server

import (
	"encoding/binary"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-rpcrdma/rpcrdma/internal/monotime"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Metrics (Server.Collector): per procedure, the calls answered by
// status and the time from a call's dispatch to its reply; the transport's
// counters summed over every connection the Server ever had (so they never
// go down); connections open; the duplicate request cache.

// callMetrics are the per-procedure figures. A call costs a counter's
// and a histogram's atomic updates: each procedure's duration observer
// and its counter for each status are resolved once.
type callMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	nfs      [nfs.ProcCommit + 1]procMetrics
	mount    [nfs.MountProcExport + 1]procMetrics
	other    procMetrics
}

// procMetrics are one procedure's.
type procMetrics struct {
	prog, proc string
	dur        prometheus.Observer
	// byStatus holds the counter of each status slot (statusSlot), made
	// at the status's first call.
	byStatus [statusSlots]atomic.Pointer[prometheus.Counter]
}

func newCallMetrics() *callMetrics {
	m := &callMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rdma_nfsd_calls_total",
			Help: "Calls answered, by program, procedure and status (the NFS or MOUNT status, or the RPC accept status or MSG_DENIED).",
		}, []string{"program", "procedure", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rdma_nfsd_call_duration_seconds",
			Help: "Call duration in seconds, from a call's dispatch to its reply's hand-off to the transport (a call executed on the connection's polling goroutine: from the poll that received it to the end of that poll's run of calls, whose replies are posted together), by program and procedure.",
			// 10 µs to about 10 s.
			Buckets: prometheus.ExponentialBuckets(10e-6, 4, 11),
		}, []string{"program", "procedure"}),
	}
	for p := range m.nfs {
		m.nfs[p].prog, m.nfs[p].proc = "nfs", procLabel(nfs.ProgNFS, uint32(p))
	}
	for p := range m.mount {
		m.mount[p].prog, m.mount[p].proc = "mount", procLabel(nfs.ProgMount, uint32(p))
	}
	m.other.prog, m.other.proc = "other", "other"
	for _, pm := range m.all() {
		pm.dur = m.duration.WithLabelValues(pm.prog, pm.proc)
	}
	return m
}

// all returns every procedure's metrics.
func (m *callMetrics) all() []*procMetrics {
	var all []*procMetrics
	for p := range m.nfs {
		all = append(all, &m.nfs[p])
	}
	for p := range m.mount {
		all = append(all, &m.mount[p])
	}
	return append(all, &m.other)
}

// pendingCall is a call dispatched and not yet answered.
type pendingCall struct {
	prog, proc uint32
	start      time.Time
}

// pendingCalls are a connection's calls between dispatch and reply, by
// XID (a transport delivers one call per XID at a time), but the one the
// polling goroutine executes (session.inline). A call that gets no reply
// (its connection ends first) stays until the session goes.
type pendingCalls struct {
	mu    sync.Mutex
	calls map[uint32]pendingCall
}

// begin notes that the call h is dispatched now.
func (p *pendingCalls) begin(h *xdr.CallHeader) {
	p.mu.Lock()
	if p.calls == nil {
		p.calls = make(map[uint32]pendingCall)
	}
	p.calls[h.XID] = pendingCall{prog: h.Prog, proc: h.Proc, start: monotime.Now()}
	p.mu.Unlock()
}

// end takes the call xid, which a reply answers.
func (p *pendingCalls) end(xid uint32) (pendingCall, bool) {
	p.mu.Lock()
	c, ok := p.calls[xid]
	delete(p.calls, xid)
	p.mu.Unlock()
	return c, ok
}

// observe counts the reply to c, timed at now (zero: read the clock).
func (m *callMetrics) observe(c pendingCall, reply []byte, now time.Time) {
	pm := m.count(c, reply)
	if now.IsZero() {
		now = monotime.Now()
	}
	pm.dur.Observe(now.Sub(c.start).Seconds())
}

// count counts the reply to c by its status and returns c's procedure's
// metrics, for its duration (observe, or inlineCalls.InlineRunDone).
func (m *callMetrics) count(c pendingCall, reply []byte) *procMetrics {
	pm := &m.other
	switch {
	case c.prog == nfs.ProgNFS && c.proc < uint32(len(m.nfs)):
		pm = &m.nfs[c.proc]
	case c.prog == nfs.ProgMount && c.proc < uint32(len(m.mount)):
		pm = &m.mount[c.proc]
	}
	slot, name := statusSlot(c, reply)
	ctr := pm.byStatus[slot].Load()
	if ctr == nil {
		x := m.calls.WithLabelValues(pm.prog, pm.proc, name)
		pm.byStatus[slot].CompareAndSwap(nil, &x)
		ctr = pm.byStatus[slot].Load()
	}
	(*ctr).Inc()
	return pm
}

// Status slots: nfsstat3 and mountstat3 values below 100 as themselves,
// 10001 to 10008 after them, then the RPC outcomes without a status.
const (
	slotHigh      = 100 // NFS3ERR_BADHANDLE (10001) and after
	slotSuccess   = slotHigh + 8
	slotAccept    = slotSuccess + 1 // + accept_stat (1 to 5)
	slotDenied    = slotAccept + 6
	slotMalformed = slotDenied + 1
	slotUnknown   = slotMalformed + 1
	statusSlots   = slotUnknown + 1
)

// statusSlot names what reply answered c, and its slot: the procedure's
// status word (nfsstat3 or mountstat3) for an accepted, successful call
// that has one, else SUCCESS, the RPC's accept_stat, or MSG_DENIED.
func statusSlot(c pendingCall, reply []byte) (int, string) {
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	switch {
	case err != nil:
		return slotMalformed, "MALFORMED"
	case rh.Stat != xdr.MsgAccepted:
		return slotDenied, "MSG_DENIED"
	case rh.AcceptStat != xdr.AcceptSuccess:
		if rh.AcceptStat <= xdr.AcceptSystemErr {
			return slotAccept + int(rh.AcceptStat), rh.AcceptStat.String()
		}
		return slotUnknown, rh.AcceptStat.String()
	case c.proc == 0 || len(reply) < off+4 || c.prog == nfs.ProgMount && c.proc != nfs.MountProcMnt:
		// NULL, and MOUNT's DUMP, UMNT, UMNTALL and EXPORT: no status.
		return slotSuccess, "SUCCESS"
	}
	st := binary.BigEndian.Uint32(reply[off:])
	var slot int
	switch {
	case st < slotHigh:
		slot = int(st)
	case st >= 10001 && st <= 10008:
		slot = slotHigh + int(st-10001)
	default:
		slot = slotUnknown
	}
	if c.prog == nfs.ProgMount {
		return slot, nfs3.MountStatus(st).String()
	}
	return slot, nfs3.Status(st).String()
}

// collector is the Server's prometheus.Collector.
type collector struct {
	s *Server
	m *callMetrics

	transport  []*prometheus.Desc // one per counter of transportCounters a server keeps
	fields     []int              // their fields' indexes in transport.Stats
	conns      *prometheus.Desc
	versions   *prometheus.Desc
	drcHits    *prometheus.Desc
	drcEntries *prometheus.Desc
	inline     *prometheus.Desc
}

// Collector returns the Server's metrics for a prometheus.Registry: the
// calls answered per procedure and status and their durations, the
// transport's counters summed over every RDMA connection the Server had
// (rpcrdma_*_total, one per counter of transport.Stats that a responder
// keeps: transportCounters), the connections
// open by network and the RDMA ones by RPC-over-RDMA version, the duplicate request cache's hits and entries, and
// the calls the polling goroutines took, answered there or handed off.
// Counters never go down.
func (s *Server) Collector() prometheus.Collector {
	c := &collector{s: s, m: s.metrics,
		conns:      prometheus.NewDesc("rdma_nfsd_connections", "Connections open, by network: rdma, or tcp (MOUNT, and NFS when it is served over TCP too).", []string{"network"}, nil),
		drcHits:    prometheus.NewDesc("rdma_nfsd_drc_hits_total", "Retransmissions answered from the duplicate request cache (DRC hits) without executing them again.", nil, nil),
		drcEntries: prometheus.NewDesc("rdma_nfsd_drc_entries", "Replies kept in the duplicate request cache (DRC entries).", nil, nil),
		inline: prometheus.NewDesc("rdma_nfsd_inline_calls_total",
			"Calls over RDMA taken inline, by the goroutine that polled them, by outcome: answered there, or handed_off (they might have waited on the disk or for an identity thread).",
			[]string{"outcome"}, nil),
		versions: prometheus.NewDesc("rdma_nfsd_rdma_connections",
			"RDMA connections open, by the RPC-over-RDMA version they run: 1, 2 (with -rpcrdma-v2), or 0 until a connection's first message has said which.",
			[]string{"version"}, nil),
	}
	t := reflect.TypeFor[transport.Stats]()
	for _, tc := range transportCounters {
		f, ok := t.FieldByName(tc.field)
		if !ok || !tc.server || f.Type.Kind() != reflect.Uint64 {
			continue
		}
		c.fields = append(c.fields, f.Index[0])
		c.transport = append(c.transport, prometheus.NewDesc(tc.name,
			tc.help+" Summed over every RDMA connection the server had.", nil, nil))
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	c.m.calls.Describe(ch)
	c.m.duration.Describe(ch)
	for _, d := range c.transport {
		ch <- d
	}
	ch <- c.conns
	ch <- c.versions
	ch <- c.drcHits
	ch <- c.drcEntries
	ch <- c.inline
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.m.calls.Collect(ch)
	c.m.duration.Collect(ch)
	sum, open, versions := c.s.transportTotals()
	v := reflect.ValueOf(sum)
	for i, f := range c.fields {
		ch <- prometheus.MustNewConstMetric(c.transport[i], prometheus.CounterValue, float64(v.Field(f).Uint()))
	}
	for _, network := range []string{NetRDMA, NetTCP} {
		ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(open[network]), network)
	}
	for v, n := range versions {
		if n > 0 || v > 0 {
			ch <- prometheus.MustNewConstMetric(c.versions, prometheus.GaugeValue, float64(n), strconv.Itoa(v))
		}
	}
	d := c.s.drc.stats()
	ch <- prometheus.MustNewConstMetric(c.drcHits, prometheus.CounterValue, float64(d.Hits))
	ch <- prometheus.MustNewConstMetric(c.drcEntries, prometheus.GaugeValue, float64(d.Entries))
	ch <- prometheus.MustNewConstMetric(c.inline, prometheus.CounterValue, float64(c.s.inlineAnswered.Load()), "answered")
	ch <- prometheus.MustNewConstMetric(c.inline, prometheus.CounterValue, float64(c.s.inlineHandedOff.Load()), "handed_off")
}

// addStats adds every uint64 counter of b to a (the other fields of
// transport.Stats are not counters).
func addStats(a *transport.Stats, b transport.Stats) { addFields(a, b, reflect.Uint64) }

// addFields adds to each field of the struct *a whose kind is one of kinds
// (integer kinds) the same field of b.
func addFields[T any](a *T, b T, kinds ...reflect.Kind) {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b)
	for i := range va.NumField() {
		switch f := va.Field(i); {
		case !slices.Contains(kinds, f.Kind()):
		case f.CanInt():
			f.SetInt(f.Int() + vb.Field(i).Int())
		case f.CanUint():
			f.SetUint(f.Uint() + vb.Field(i).Uint())
		}
	}
}

// transportTotals sums the transport counters of every RDMA connection
// the Server had, and counts the connections open by network.
func (s *Server) transportTotals() (transport.Stats, map[string]int, [3]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := s.endedStats
	open := map[string]int{}
	var versions [3]int // RDMA connections by RPC-over-RDMA version, 0 undecided
	for ss := range s.sessions {
		open[ss.network]++
		if st, ok := ss.c.(interface{ Stats() transport.Stats }); ok {
			cs := st.Stats()
			addStats(&sum, cs)
			if v := cs.Negotiated.Version; v < uint32(len(versions)) {
				versions[v]++
			}
		}
	}
	return sum, open, versions
}

// procLabel is the procedure's name in RFC 1813, lower case ("getattr").
func procLabel(prog, proc uint32) string {
	name := nfs.ProcName(prog, 3, proc)
	if i := strings.IndexByte(name, ' '); i >= 0 {
		name = name[i+1:]
	}
	return strings.ToLower(name)
}
