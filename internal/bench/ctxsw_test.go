package bench

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// statusSample is a thread's /proc/PID/status (Linux 6.1), cut short
// after the lines the bench reads.
const statusSample = `Name:	rdma-nfsd
Umask:	0022
State:	S (sleeping)
Tgid:	4242
Ngid:	0
Pid:	4243
PPid:	4200
TracerPid:	0
Uid:	0	0	0	0
Gid:	0	0	0	0
FDSize:	64
Groups:	0
NStgid:	4242
NSpid:	4243
NSpgid:	4200
NSsid:	4100
VmPeak:	 1255680 kB
VmSize:	 1255680 kB
Threads:	7
SigQ:	0/7823
SigPnd:	0000000000000000
ShdPnd:	0000000000000000
Cpus_allowed:	3
Cpus_allowed_list:	0-1
Mems_allowed:	00000000,00000001
Mems_allowed_list:	0
voluntary_ctxt_switches:	1523
nonvoluntary_ctxt_switches:	77
`

// status is a minimal status text with the given counts.
func status(vol, nonvol string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("Name:\tx\nvoluntary_ctxt_switches:\t" + vol + "\nnonvoluntary_ctxt_switches:\t" + nonvol + "\n")}
}

func TestParseCtxSwitches(t *testing.T) {
	n, err := parseCtxSwitches(statusSample)
	if err != nil || n != 1600 {
		t.Errorf("= %d, %v; want 1523+77 = 1600", n, err)
	}
	for name, s := range map[string]string{
		"no lines":     "Name:\tx\nState:\tS (sleeping)\n",
		"one line":     "voluntary_ctxt_switches:\t3\n",
		"not a number": "voluntary_ctxt_switches:\t3\nnonvoluntary_ctxt_switches:\tx\n",
	} {
		if _, err := parseCtxSwitches(s); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// failFS fails opening one path with err, as /proc does for a task that
// exits between its open and its read (ESRCH).
type failFS struct {
	fs.FS
	path string
	err  error
}

func (f failFS) Open(name string) (fs.File, error) {
	if name == f.path {
		return nil, &fs.PathError{Op: "read", Path: name, Err: f.err}
	}
	return f.FS.Open(name)
}

// TestTaskSwitches: the context switches of every thread of a process
// are read; a thread listed whose status is gone (its directory without
// it, or ESRCH on the read) is left out; any other error is one.
func TestTaskSwitches(t *testing.T) {
	proc := fstest.MapFS{
		"4242/task/4242/status": &fstest.MapFile{Data: []byte(statusSample)},
		"4242/task/4243/status": status("10", "5"),
		"4242/task/4244":        &fstest.MapFile{Mode: fs.ModeDir}, // exited after the listing
		"4242/task/4245/status": status("1", "1"),
		"4242/status":           status("1", "0"), // the main thread's alone
	}
	tasks, err := processTasks(proc, 4242)
	want := []string{"4242/task/4242", "4242/task/4243", "4242/task/4244", "4242/task/4245"}
	if err != nil || !slices.Equal(tasks, want) {
		t.Fatalf("tasks %q, %v; want %q", tasks, err, want)
	}
	var c switchCounter
	n, err := procSwitches(proc, tasks, &c)
	if err != nil || n != 1600+15+2 {
		t.Errorf("sum %d, %v; want %d", n, err, 1600+15+2)
	}
	// ESRCH: the task went between the open and the read.
	got, err := taskSwitches(failFS{proc, "4242/task/4245/status", syscall.ESRCH}, tasks)
	if err != nil || len(got) != 2 || got["4242/task/4243"] != 15 {
		t.Errorf("with ESRCH: %v, %v", got, err)
	}
	if _, err := taskSwitches(failFS{proc, "4242/task/4245/status", syscall.EACCES}, tasks); !errors.Is(err, syscall.EACCES) {
		t.Errorf("EACCES: %v, want it returned", err)
	}
	bad := fstest.MapFS{"1/task/1/status": &fstest.MapFile{Data: []byte("Name:\tx\n")}}
	if _, err := taskSwitches(bad, []string{"1/task/1"}); err == nil {
		t.Error("a status without the counts: no error")
	}
	if _, err := processTasks(proc, 99); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("tasks of a process that is not there: %v", err)
	}
}

// TestCommTasks: knfsd's threads are the processes whose comm is nfsd;
// one that exits while /proc is read is left out.
func TestCommTasks(t *testing.T) {
	proc := fstest.MapFS{
		"1/comm":      &fstest.MapFile{Data: []byte("systemd\n")},
		"57/comm":     &fstest.MapFile{Data: []byte("nfsd\n")},
		"57/status":   status("300", "2"),
		"58/comm":     &fstest.MapFile{Data: []byte("nfsd\n")},
		"58/status":   status("40", "0"),
		"59":          &fstest.MapFile{Mode: fs.ModeDir}, // exited
		"60/comm":     &fstest.MapFile{Data: []byte("rdma-nfsd\n")},
		"61/comm":     &fstest.MapFile{Data: []byte("nfsdcld\n")},
		"self/comm":   &fstest.MapFile{Data: []byte("nfsd\n")},
		"sys/fs/nfsd": &fstest.MapFile{Data: []byte("nfsd\n")},
		"62":          &fstest.MapFile{Data: []byte("nfsd\n")}, // not a directory
	}
	tasks, err := commTasks(proc, "nfsd")
	if err != nil || !slices.Equal(tasks, []string{"57", "58"}) {
		t.Fatalf("tasks %q, %v; want 57 and 58", tasks, err)
	}
	var c switchCounter
	if n, err := procSwitches(proc, tasks, &c); err != nil || n != 342 {
		t.Errorf("sum %d, %v; want 342", n, err)
	}
	if _, err := commTasks(failFS{proc, "60/comm", syscall.EACCES}, "nfsd"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("EACCES on a comm: %v, want it returned", err)
	}
	if tasks, err := commTasks(failFS{proc, "57/comm", syscall.ESRCH}, "nfsd"); err != nil || !slices.Equal(tasks, []string{"58"}) {
		t.Errorf("ESRCH on a comm: %q, %v; want 58 alone", tasks, err)
	}
}

// TestSwitchCounter: the total grows by what each task did since it was
// last seen, never falls when a task ends, and counts a new task (or a
// reused task ID) whole.
func TestSwitchCounter(t *testing.T) {
	var c switchCounter
	for i, step := range []struct {
		now  map[string]uint64
		want uint64
	}{
		{map[string]uint64{"a": 10, "b": 5}, 15},
		{map[string]uint64{"a": 12, "b": 9, "c": 3}, 24}, // +2 +4, c new
		{map[string]uint64{"a": 20, "c": 3}, 32},         // b ended
		{map[string]uint64{"a": 20, "c": 1}, 33},         // c's ID reused
		{map[string]uint64{"a": 20, "b": 2}, 35},         // b's ID reused
		{map[string]uint64{}, 35},
	} {
		if got := c.add(step.now); got != step.want {
			t.Errorf("snapshot %d: total %d, want %d", i, got, step.want)
		}
	}
}

// TestProcessSwitches reads this test process's own threads in /proc:
// the sum over them is at least the main thread's alone, and it grows
// when threads sleep.
func TestProcessSwitches(t *testing.T) {
	proc := os.DirFS("/proc")
	tasks, err := processTasks(proc, os.Getpid())
	if err != nil || len(tasks) == 0 {
		t.Fatalf("tasks %q, %v", tasks, err)
	}
	main, err := os.ReadFile("/proc/self/status") // first: the counts only grow
	if err != nil {
		t.Fatal(err)
	}
	var c switchCounter
	before, err := procSwitches(proc, tasks, &c)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := parseCtxSwitches(string(main)); err != nil || n > before {
		t.Errorf("main thread %d (%v), all threads %d", n, err, before)
	}
	for range 20 {
		time.Sleep(time.Millisecond)
	}
	if tasks, err = processTasks(proc, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	after, err := procSwitches(proc, tasks, &c)
	if err != nil || after <= before {
		t.Errorf("context switches %d then %d (%v) over 20 sleeps", before, after, err)
	}
}
