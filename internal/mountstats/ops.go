package mountstats

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Op is one procedure's line of the "per-op statistics" section of
// /proc/self/mountstats (rpc_clnt_show_stats / _print_rpc_iostats in
// net/sunrpc/stats.c, Linux 6.1): calls made, transmissions, major
// timeouts, bytes sent and received, and the cumulative queue, round-trip
// and execute times in milliseconds.
type Op struct {
	Ops, Trans, Timeouts, BytesSent, BytesRecv uint64
	QueueMs, RTTMs, ExecuteMs                  uint64
}

// Ops are a mount's per-procedure counts by procedure name (GETATTR,
// ACCESS, READDIRPLUS, ...).
type Ops map[string]Op

// ParseOps finds the mount on mnt in the text of /proc/self/mountstats and
// parses its per-op statistics.
func ParseOps(mountstats, mnt string) (Ops, error) {
	in, found, section := false, false, false
	ops := Ops{}
	for _, l := range strings.Split(mountstats, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "device" {
			if in {
				break
			}
			in = strings.Contains(l, " mounted on "+mnt+" ")
			found = found || in
			continue
		}
		if !in {
			continue
		}
		if strings.TrimSpace(l) == "per-op statistics" {
			section = true
			continue
		}
		if !section || len(f) < 9 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		var n [8]uint64
		for i := range n {
			v, err := strconv.ParseUint(f[1+i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("mountstats of %s: %s: %w", mnt, f[0], err)
			}
			n[i] = v
		}
		ops[strings.TrimSuffix(f[0], ":")] = Op{n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]}
	}
	if !found {
		return nil, fmt.Errorf("mountstats: no mount on %s", mnt)
	}
	if !section {
		return nil, fmt.Errorf("mountstats: the mount on %s has no per-op statistics", mnt)
	}
	return ops, nil
}

// Sub returns the growth of each procedure's numbers from before to o.
func (o Ops) Sub(before Ops) Ops {
	d := Ops{}
	for k, v := range o {
		b := before[k]
		d[k] = Op{sub(v.Ops, b.Ops), sub(v.Trans, b.Trans), sub(v.Timeouts, b.Timeouts),
			sub(v.BytesSent, b.BytesSent), sub(v.BytesRecv, b.BytesRecv),
			sub(v.QueueMs, b.QueueMs), sub(v.RTTMs, b.RTTMs), sub(v.ExecuteMs, b.ExecuteMs)}
	}
	return d
}

// Add adds d's numbers to o's.
func (o Ops) Add(d Ops) {
	for k, v := range d {
		a := o[k]
		o[k] = Op{a.Ops + v.Ops, a.Trans + v.Trans, a.Timeouts + v.Timeouts, a.BytesSent + v.BytesSent,
			a.BytesRecv + v.BytesRecv, a.QueueMs + v.QueueMs, a.RTTMs + v.RTTMs, a.ExecuteMs + v.ExecuteMs}
	}
}

func sub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}

// String lists the procedures that were called, by name: NAME=calls.
func (o Ops) String() string { return o.Format(func(op Op) uint64 { return op.Ops }) }

// Format lists the procedures that were called, by name, with the number
// value picks of each: NAME=value.
func (o Ops) Format(value func(Op) uint64) string {
	return o.format(func(op Op) string { return strconv.FormatUint(value(op), 10) })
}

// FormatMean lists the procedures that were called, by name, with value's
// figure of each to two decimals (a mean per call, say): NAME=1.25.
func (o Ops) FormatMean(value func(Op) float64) string {
	return o.format(func(op Op) string { return strconv.FormatFloat(value(op), 'f', 2, 64) })
}

func (o Ops) format(value func(Op) string) string {
	var names []string
	for k, v := range o {
		if v.Ops > 0 {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(value(o[k]))
	}
	return b.String()
}
