package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// Context switches of a server: rdma-nfsd's are those of every thread of
// its process (/proc/PID/task/TID/status: /proc/PID/status alone is the
// main thread's), knfsd's those of the kernel's nfsd threads (the tasks
// whose /proc/PID/comm is "nfsd"). A server's snapshot adds them up as
// "ctxsw" through a switchCounter.

// parseCtxSwitches returns voluntary_ctxt_switches plus
// nonvoluntary_ctxt_switches from the text of a /proc/PID/status file; a
// status that lacks either is an error.
func parseCtxSwitches(status string) (uint64, error) {
	var sum uint64
	var seen int
	for line := range strings.Lines(status) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "voluntary_ctxt_switches" && name != "nonvoluntary_ctxt_switches") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/status: %s: %w", name, err)
		}
		sum += n
		seen++
	}
	if seen != 2 {
		return 0, errors.New("/proc/PID/status: no voluntary_ctxt_switches and nonvoluntary_ctxt_switches lines")
	}
	return sum, nil
}

// gone reports whether err is how /proc answers for a task that has
// exited: its directory is gone (ENOENT), or it went between the open and
// the read (ESRCH).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// processTasks lists the task directories of process pid in proc (the
// root of /proc), "PID/task/TID".
func processTasks(proc fs.FS, pid int) ([]string, error) {
	dir := path.Join(strconv.Itoa(pid), "task")
	ents, err := fs.ReadDir(proc, dir)
	if err != nil {
		return nil, fmt.Errorf("tasks of process %d: %w", pid, err)
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, path.Join(dir, e.Name()))
	}
	return out, nil
}

// commTasks lists the processes of proc (the root of /proc) whose comm is
// comm, "PID" each; a process that exits while they are listed is left
// out.
func commTasks(proc fs.FS, comm string) ([]string, error) {
	ents, err := fs.ReadDir(proc, ".")
	if err != nil {
		return nil, fmt.Errorf("processes: %w", err)
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.ParseUint(e.Name(), 10, 32); err != nil || !e.IsDir() {
			continue
		}
		b, err := fs.ReadFile(proc, path.Join(e.Name(), "comm"))
		if gone(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimSuffix(string(b), "\n") == comm {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// taskSwitches reads the context switches of each task directory of
// proc (the root of /proc) in tasks, from its status file, by directory.
// A task that exited since it was listed is left out; any other error
// reading or parsing a status is returned.
func taskSwitches(proc fs.FS, tasks []string) (map[string]uint64, error) {
	out := make(map[string]uint64, len(tasks))
	for _, t := range tasks {
		b, err := fs.ReadFile(proc, path.Join(t, "status"))
		if gone(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		n, err := parseCtxSwitches(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		out[t] = n
	}
	return out, nil
}

// switchCounter turns the context switches of a changing set of tasks,
// read at successive snapshots, into a total that never falls: a task
// adds what it did since the last snapshot that saw it, a task seen for
// the first time all it did. A task that ends takes with it what it did
// since the last snapshot (Linux keeps no per-thread count of it that
// another process can read); its earlier switches stay in the total. The
// zero value is ready to use.
type switchCounter struct {
	last  map[string]uint64
	total uint64
}

// add folds one snapshot's counts (by task) into the total and returns
// it.
func (c *switchCounter) add(now map[string]uint64) uint64 {
	for t, n := range now {
		if prev, ok := c.last[t]; ok && n >= prev {
			c.total += n - prev
		} else {
			c.total += n // new, or a reused task ID
		}
	}
	c.last = now
	return c.total
}

// procSwitches reads the context switches of tasks of proc and folds
// them into c.
func procSwitches(proc fs.FS, tasks []string, c *switchCounter) (uint64, error) {
	counts, err := taskSwitches(proc, tasks)
	if err != nil {
		return 0, fmt.Errorf("context switches: %w", err)
	}
	return c.add(counts), nil
}
