package mountstats

import (
	"fmt"
	"strconv"
	"strings"
)

// XprtFields name the 27 numbers of the "xprt: rdma" line of
// /proc/self/mountstats in Linux 6.1, in order (xprt_rdma_print_stats in
// net/sunrpc/xprtrdma/transport.c; the first is always 0, where socket
// transports print their source port).
var XprtFields = []string{"srcport", "bind_count", "connect_count", "connect_time", "idle_time", "sends", "recvs",
	"bad_xids", "req_u", "bklog_u", "read_chunk_count", "write_chunk_count", "reply_chunk_count",
	"total_rdma_request", "total_rdma_reply", "pullup_copy_count", "fixup_copy_count", "hardway_register_count",
	"failed_marshal_count", "bad_reply_count", "nomsg_call_count", "mrs_recycled", "mrs_orphaned",
	"mrs_allocated", "local_inv_needed", "empty_sendctx_q", "reply_waits_for_send"}

// Xprt is the kernel client's account of one RDMA mount: the numbers of
// its "xprt: rdma" line by the names of XprtFields.
type Xprt map[string]uint64

// ParseXprt finds the mount on mnt in the text of /proc/self/mountstats
// and parses its "xprt: rdma" line.
func ParseXprt(mountstats, mnt string) (Xprt, error) {
	x, _, err := ParseXprtLine(mountstats, mnt)
	return x, err
}

// ParseXprtLine is ParseXprt that also returns the line, trimmed.
func ParseXprtLine(mountstats, mnt string) (Xprt, string, error) {
	in, found := false, false
	for _, l := range strings.Split(mountstats, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "device" {
			in = strings.Contains(l, " mounted on "+mnt+" ")
			found = found || in
			continue
		}
		if !in || len(f) < 2 || f[0] != "xprt:" || f[1] != "rdma" {
			continue
		}
		if len(f)-2 != len(XprtFields) {
			return nil, "", fmt.Errorf("mountstats of %s: %d numbers in the xprt line, want %d (Linux 6.1): %q",
				mnt, len(f)-2, len(XprtFields), l)
		}
		x := Xprt{}
		for i, v := range f[2:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, "", fmt.Errorf("mountstats of %s: field %s: %w", mnt, XprtFields[i], err)
			}
			x[XprtFields[i]] = n
		}
		return x, strings.TrimSpace(l), nil
	}
	if !found {
		return nil, "", fmt.Errorf("mountstats: no mount on %s", mnt)
	}
	return nil, "", fmt.Errorf("mountstats: the mount on %s has no xprt: rdma line", mnt)
}

// Sub returns the growth of each counter from before to x (0 where a
// counter did not grow; idle_time and connect_time are not counters).
func (x Xprt) Sub(before Xprt) Xprt {
	d := Xprt{}
	for k, v := range x {
		if b := before[k]; v > b {
			d[k] = v - b
		} else {
			d[k] = 0
		}
	}
	return d
}

// String lists the fields in XprtFields order, name=value, leaving out
// srcport.
func (x Xprt) String() string {
	var b strings.Builder
	for _, k := range XprtFields[1:] {
		if v, ok := x[k]; ok {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s=%d", k, v)
		}
	}
	return b.String()
}
