package bench

import (
	"runtime"
	"syscall"
)

// withProcess adds this process's CPU time ("cpu_ns": user and system,
// getrusage(RUSAGE_SELF)), context switches ("ctxsw": voluntary and
// involuntary, of every thread, those that ended included) and heap
// allocations ("mallocs": runtime.MemStats.Mallocs) to a client's
// counters: the Go clients run in the bench program, so these are their
// cost per RPC (and the bench loop's). ReadMemStats stops the world; it
// runs between the timed sections, never in one.
func withProcess(m map[string]uint64) map[string]uint64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		m["cpu_ns"] = uint64(ru.Utime.Nano() + ru.Stime.Nano())
		m["ctxsw"] = uint64(ru.Nvcsw + ru.Nivcsw)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m["mallocs"] = ms.Mallocs
	return m
}
