package bench

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/internal/mountstats"
)

// parseXprt returns the "xprt: rdma" numbers of the mount on mnt from the
// text of /proc/self/mountstats, and the line itself.
func parseXprt(stats, mnt string) (map[string]uint64, string, error) {
	x, line, err := mountstats.ParseXprtLine(stats, mnt)
	return x, line, err
}

// xprtTCPFields name the numbers of the "xprt: tcp" line (Linux 6.1,
// xs_tcp_print_stats).
var xprtTCPFields = []string{"srcport", "bind_count", "connect_count", "connect_time", "idle_time", "sends", "recvs",
	"bad_xids", "req_u", "bklog_u", "max_slots", "sending_u", "pending_u"}

// parseXprtTCP returns the "xprt: tcp" numbers of the mount on mnt.
func parseXprtTCP(mountstats, mnt string) (map[string]uint64, error) {
	in := false
	for _, l := range strings.Split(mountstats, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "device" {
			in = strings.Contains(l, " mounted on "+mnt+" ")
			continue
		}
		if !in || len(f) < 2+len(xprtTCPFields) || f[0] != "xprt:" || f[1] != "tcp" {
			continue
		}
		x := map[string]uint64{}
		for i, name := range xprtTCPFields {
			n, err := strconv.ParseUint(f[2+i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("mountstats of %s: field %s: %w", mnt, name, err)
			}
			x[name] = n
		}
		return x, nil
	}
	return nil, fmt.Errorf("mountstats: no TCP mount on %s", mnt)
}

// parseRxeStats reads the counters of one link from the output of
// "rdma statistic show link DEV/PORT" ("link rxe1/1 sent_pkts 35 ...").
func parseRxeStats(out string) (map[string]uint64, error) {
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != "link" {
		return nil, fmt.Errorf("rdma statistic: unexpected output %q", out)
	}
	m := map[string]uint64{}
	for i := 2; i+1 < len(f); i += 2 {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("rdma statistic: %s: %w", f[i], err)
		}
		m[f[i]] = n
	}
	return m, nil
}

// parseProcStatCPU returns utime+stime in clock ticks from the text of
// /proc/PID/stat (fields 14 and 15, counted after the command's closing
// parenthesis, which may itself contain spaces).
func parseProcStatCPU(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/PID/stat: no command field")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/PID/stat: %d fields after the command", len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/PID/stat: utime %q stime %q", f[11], f[12])
	}
	return u + s, nil
}
