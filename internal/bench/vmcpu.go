package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// vmCPUSnapshot reads the guest's CPU time from /proc/stat: "busy_ns" (user,
// nice, system, irq, softirq and steal of every CPU) and "total_ns" (busy,
// idle and iowait). Its growth over a cell is what the whole VM spent on it
// (client, server, rxe and the bench's own loop) and how close the VM's
// CPUs were to saturation: the question a pair's ratio to perftest leaves
// open (bounded by CPU, or by latency).
func vmCPUSnapshot() (map[string]uint64, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("/proc/stat: %w", err)
	}
	busy, total, err := parseSystemCPU(line)
	if err != nil {
		return nil, err
	}
	tick := uint64(time.Second / clockTicks)
	return map[string]uint64{"busy_ns": busy * tick, "total_ns": total * tick}, nil
}

// parseSystemCPU parses the aggregate "cpu" line of /proc/stat (proc(5):
// user nice system idle iowait irq softirq steal guest guest_nice, in ticks)
// into busy and total ticks. guest and guest_nice are already counted in
// user and nice, so they are left out.
func parseSystemCPU(line string) (busy, total uint64, err error) {
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, errors.New("/proc/stat: no aggregate cpu line")
	}
	var v [8]uint64
	for i := range v {
		if 1+i >= len(fields) {
			break // older kernels end before irq, softirq or steal
		}
		if v[i], err = strconv.ParseUint(fields[1+i], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
		}
	}
	user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	busy = user + nice + system + irq + softirq + steal
	return busy, busy + idle + iowait, nil
}
