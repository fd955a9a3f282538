//go:build e2eguest

package posixguest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
)

// The VM's addresses and ports (e2e/README.md): knfsd serves NFS over RDMA
// on 20049; rdma-nfsd on 20051, MOUNT over TCP on 20052 (rpcbind belongs
// to knfsd's rpc.mountd).
const (
	serverAddr = "10.0.0.1"
	knfsdPort  = 20049
	rdmaPort   = 20051
	tcpPort    = 20052
	binary     = "/host/rdma-nfsd"
	oursExport = "/srv/posix-rdma-nfsd"
	childPath  = "/tmp/posixguest-child"
	// rdmaNfsdLog is rdma-nfsd's log, which the diagnostics show.
	rdmaNfsdLog = "/tmp/rdma-nfsd-posix.log"
)

// mountOpts are the kernel client's options for both mounts (each adds its
// port): NFSv3 over RDMA, no NLM, no NFSACL (rdma-nfsd has none; the
// client would then apply the umask differently), timeo=50 as on every
// RDMA mount of the VM tests, and actimeo=0: no attribute caching, so that
// what a step does shows in the next stat on either server.
const mountOpts = "vers=3,proto=rdma,mountproto=tcp,nolock,noacl,timeo=50,actimeo=0"

// rdmaNfsdArgs is rdma-nfsd's command line for the comparison, in one
// place. Its identity flags say what knfsd's export says
// (rxevm-nfsd-start: rw,no_root_squash, anonymous ids 65534): root
// stays root, every other caller is itself.
func rdmaNfsdArgs(export string) []string {
	return []string{"-dir", export, "-provider", "rdmacore", "-addr", serverAddr,
		"-rdma-port", strconv.Itoa(rdmaPort), "-tcp-port", strconv.Itoa(tcpPort), "-rpcbind=false",
		"-squash", "no_root_squash", "-anonuid", "65534", "-anongid", "65534"}
}

// A side is one server's mount.
type side struct {
	name, source, opts, mnt string
}

var sides = []side{
	{"knfsd", serverAddr + ":/export", mountOpts + ",port=" + strconv.Itoa(knfsdPort), "/mnt/posix-knfsd"},
	{"rdma-nfsd", serverAddr + ":/", mountOpts + ",port=" + strconv.Itoa(rdmaPort) + ",mountport=" + strconv.Itoa(tcpPort), "/mnt/posix-rdma-nfsd"},
}

// Environment of a step's child process.
const (
	envStep = "POSIXGUEST_STEP"
	envRoot = "POSIXGUEST_ROOT"
)

// stepLimit bounds a step, its stats and its child: a call the server
// never answers would hang the hard mount for ever. A step that takes
// longer is reported with the kernel's RPC tasks and rdma-nfsd's log, and
// the mount is unmounted by force, which fails the calls it was retrying.
const stepLimit = 90 * time.Second

// stuckLimit is how long a hung step may stay blocked after the forced
// unmount before the test binary exits.
const stuckLimit = 30 * time.Second

// childTimeout kills a step's child that the forced unmount did not
// free.
const childTimeout = stepLimit + 30*time.Second

// slowStep is the duration above which a step's time is logged.
const slowStep = 2 * time.Second

func TestMain(m *testing.M) {
	if s := os.Getenv(envStep); s != "" {
		os.Exit(child(s, os.Getenv(envRoot)))
	}
	os.Exit(m.Run())
}

// outcome is what a step's child reports: "ok" or the errno's name, and
// what the operation read.
type outcome struct {
	Err string `json:"err"`
	Out string `json:"out,omitempty"`
}

// child runs step index (a string) under root with the identity it was
// started with, and prints its outcome as JSON.
func child(index, root string) int {
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= len(script) {
		fmt.Fprintf(os.Stderr, "posixguest: bad step %q\n", index)
		return 2
	}
	unix.Umask(0o022)
	var o outcome
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		o.Out, err = script[i].op(fd)
	}
	o.Err = errName(err)
	b, _ := json.Marshal(o)
	fmt.Println(string(b))
	return 0
}

// errName is "ok", the name of err's errno, or err's text.
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
		return "errno" + strconv.Itoa(int(e))
	}
	return err.Error()
}

// An op runs in the child, relative to the mount's root (a descriptor),
// and returns what it read.
type op func(root int) (string, error)

// The deep directory chain: "@deep" in a path stands for deepLevels
// directories named deepName, more than PATH_MAX together.
const deepLevels = 18

var deepName = strings.Repeat("d", 250)

func components(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c == "@deep" {
			for range deepLevels {
				out = append(out, deepName)
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// walk opens the directories of p below root one component at a time
// (O_PATH: search permission is all it needs, as for a path lookup) and
// returns a descriptor of the last one, to be closed, and p's last
// component.
func walk(root int, p string) (int, string, error) {
	c := components(p)
	fd, err := unix.Dup(root)
	if err != nil {
		return -1, "", err
	}
	for _, d := range c[:len(c)-1] {
		nfd, err := unix.Openat(fd, d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, "", err
		}
		fd = nfd
	}
	return fd, c[len(c)-1], nil
}

// at runs f with the directory descriptor and last component of p.
func at(p string, f func(dir int, base string) (string, error)) op {
	return func(root int) (string, error) {
		d, b, err := walk(root, p)
		if err != nil {
			return "", err
		}
		defer unix.Close(d)
		return f(d, b)
	}
}

// at2 runs f with the directory descriptors and last components of p and q.
func at2(p, q string, f func(d1 int, b1 string, d2 int, b2 string) error) op {
	return func(root int) (string, error) {
		d1, b1, err := walk(root, p)
		if err != nil {
			return "", err
		}
		defer unix.Close(d1)
		d2, b2, err := walk(root, q)
		if err != nil {
			return "", err
		}
		defer unix.Close(d2)
		return "", f(d1, b1, d2, b2)
	}
}

// procPath names base in the directory d through /proc, for the calls
// that have no *at form (truncate, bind).
func procPath(d int, base string) string { return "/proc/self/fd/" + strconv.Itoa(d) + "/" + base }

func mkdir(p string, mode uint32) op {
	return at(p, func(d int, b string) (string, error) { return "", unix.Mkdirat(d, b, mode) })
}

func chmod(p string, mode uint32) op {
	return at(p, func(d int, b string) (string, error) { return "", unix.Fchmodat(d, b, mode, 0) })
}

// chown changes the owner and group of p itself (-1: unchanged).
func chown(p string, uid, gid int) op {
	return at(p, func(d int, b string) (string, error) {
		return "", unix.Fchownat(d, b, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// openWrite opens p with flags (and mode, for O_CREAT), writes data
// unless it is nil, then fsyncs and closes: a write error the client
// reports late shows at fsync or close.
func openWrite(p string, flags int, mode uint32, data []byte) op {
	return at(p, func(d int, b string) (string, error) {
		fd, err := unix.Openat(d, b, flags|unix.O_CLOEXEC, mode)
		if err != nil {
			return "", err
		}
		var werr error
		if data != nil {
			if _, werr = unix.Write(fd, data); werr == nil {
				werr = unix.Fsync(fd)
			}
		}
		cerr := unix.Close(fd)
		if werr != nil {
			return "", werr
		}
		return "", cerr
	})
}

func create(p string, mode uint32) op { return openWrite(p, unix.O_CREAT|unix.O_WRONLY, mode, nil) }

func createExcl(p string, mode uint32) op {
	return openWrite(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, mode, nil)
}

// write writes data at the start of the existing file p.
func write(p, data string) op { return openWrite(p, unix.O_WRONLY, 0, []byte(data)) }

// createWrite is open(O_CREAT|O_RDWR, mode), a write through that
// descriptor, fsync and close: the owner may write through a descriptor
// the create opened even if mode denies writing.
func createWrite(p string, mode uint32, data string) op {
	return openWrite(p, unix.O_CREAT|unix.O_RDWR, mode, []byte(data))
}

// createTruncate is open(O_CREAT|O_RDWR, mode) and ftruncate of that
// descriptor to size.
func createTruncate(p string, mode uint32, size int64) op {
	return at(p, func(d int, b string) (string, error) {
		fd, err := unix.Openat(d, b, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, mode)
		if err != nil {
			return "", err
		}
		terr := unix.Ftruncate(fd, size)
		cerr := unix.Close(fd)
		if terr != nil {
			return "", terr
		}
		return "", cerr
	})
}

// read returns up to 8 KiB of p's bytes, quoted.
func read(p string) op {
	return at(p, func(d int, b string) (string, error) {
		fd, err := unix.Openat(d, b, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", err
		}
		f := os.NewFile(uintptr(fd), b)
		defer f.Close()
		buf, err := io.ReadAll(io.LimitReader(f, 8<<10))
		return strconv.Quote(abbrev(string(buf))), err
	})
}

func readdir(p string) op {
	return at(p, func(d int, b string) (string, error) {
		fd, err := unix.Openat(d, b, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", err
		}
		f := os.NewFile(uintptr(fd), b)
		defer f.Close()
		names, err := f.Readdirnames(-1)
		sort.Strings(names)
		for i, n := range names {
			names[i] = abbrev(n)
		}
		return "[" + strings.Join(names, " ") + "]", err
	})
}

// lookup stats p (a LOOKUP and GETATTR as the step's identity).
func lookup(p string) op {
	return at(p, func(d int, b string) (string, error) {
		var st unix.Stat_t
		return "", unix.Fstatat(d, b, &st, unix.AT_SYMLINK_NOFOLLOW)
	})
}

func access(p string, mode uint32) op {
	return at(p, func(d int, b string) (string, error) { return "", unix.Faccessat(d, b, mode, 0) })
}

func mknod(p string, mode uint32, major, minor uint32) op {
	return at(p, func(d int, b string) (string, error) {
		return "", unix.Mknodat(d, b, mode, int(unix.Mkdev(major, minor)))
	})
}

func mkfifo(p string, mode uint32) op { return mknod(p, unix.S_IFIFO|mode, 0, 0) }

// bind binds a Unix stream socket to p (MKNOD of a socket).
func bind(p string) op {
	return at(p, func(d int, b string) (string, error) {
		s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(s)
		return "", unix.Bind(s, &unix.SockaddrUnix{Name: procPath(d, b)})
	})
}

func symlink(target, p string) op {
	return at(p, func(d int, b string) (string, error) { return "", unix.Symlinkat(target, d, b) })
}

func readlink(p string) op {
	return at(p, func(d int, b string) (string, error) {
		buf := make([]byte, 8192)
		n, err := unix.Readlinkat(d, b, buf)
		if err != nil {
			return "", err
		}
		return strconv.Quote(abbrev(string(buf[:n]))), nil
	})
}

func link(old, new string) op {
	return at2(old, new, func(d1 int, b1 string, d2 int, b2 string) error { return unix.Linkat(d1, b1, d2, b2, 0) })
}

func rename(old, new string) op {
	return at2(old, new, func(d1 int, b1 string, d2 int, b2 string) error { return unix.Renameat(d1, b1, d2, b2) })
}

func unlink(p string) op {
	return at(p, func(d int, b string) (string, error) { return "", unix.Unlinkat(d, b, 0) })
}

func rmdir(p string) op {
	return at(p, func(d int, b string) (string, error) { return "", unix.Unlinkat(d, b, unix.AT_REMOVEDIR) })
}

// utimes sets p's times to ts, or to the current time if ts is nil
// (utimensat with both UTIME_NOW is utimes(NULL)).
func utimes(p string, ts *[2]unix.Timespec) op {
	return at(p, func(d int, b string) (string, error) {
		t := [2]unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
		if ts != nil {
			t = *ts
		}
		return "", unix.UtimesNanoAt(d, b, t[:], 0)
	})
}

// truncate is truncate(2) of p (a path: the write permission checked on
// the file, no descriptor).
func truncate(p string, size int64) op {
	return at(p, func(d int, b string) (string, error) { return "", unix.Truncate(procPath(d, b), size) })
}

// mkdirChain creates the directories of "@deep" below p (mode 0755).
func mkdirChain(p string) op {
	return at(p+"/x", func(d int, _ string) (string, error) {
		fd, err := unix.Dup(d)
		if err != nil {
			return "", err
		}
		for range deepLevels {
			if err := unix.Mkdirat(fd, deepName, 0o755); err != nil {
				unix.Close(fd)
				return "", err
			}
			nfd, err := unix.Openat(fd, deepName, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				return "", err
			}
			fd = nfd
		}
		unix.Close(fd)
		return "", nil
	})
}

// seq runs ops in turn up to the first error; it reports the last output.
func seq(ops ...op) op {
	return func(root int) (string, error) {
		var out string
		for _, o := range ops {
			var err error
			if out, err = o(root); err != nil {
				return out, err
			}
		}
		return out, nil
	}
}

// abbrev shortens runs of 16 or more of the same byte to "c×n".
func abbrev(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		if j-i >= 16 {
			fmt.Fprintf(&b, "%c×%d", s[i], j-i)
		} else {
			b.WriteString(s[i:j])
		}
		i = j
	}
	return b.String()
}

// An ident is who a step runs as.
type ident struct {
	name     string
	uid, gid uint32
	groups   []uint32
}

// A step of the script.
type step struct {
	name  string
	as    ident
	op    op
	stat  []string          // paths stat'ed (as root, before and after)
	want  string            // knfsd's expected outcome ("ok", "EACCES"); "" unchecked
	times bool              // record ctime against mtime
	given *[2]unix.Timespec // record whether these times were stored
	sleep time.Duration     // before the step
}

func (s step) expect(want string) step           { s.want = want; return s }
func (s step) stats(paths ...string) step        { s.stat = append(s.stat, paths...); return s }
func (s step) after(d time.Duration) step        { s.sleep = d; return s }
func (s step) timeRel() step                     { s.times = true; return s }
func (s step) setTimes(ts [2]unix.Timespec) step { s.given = &ts; return s }

// lstat stats p (not following a final symbolic link) as this process.
func lstat(root int, p string) (*unix.Stat_t, error) {
	d, b, err := walk(root, p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(d)
	var st unix.Stat_t
	if err := unix.Fstatat(d, b, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return &st, nil
}

// settledStat is lstat of p, twice: the client's attribute cache may
// keep part of what an earlier reply said (once, on a busy host, knfsd's
// file showed the mtime of a WRITE with the ctime from before it); the
// second GETATTR, with no call in flight, settles it.
func settledStat(root int, p string) (*unix.Stat_t, error) {
	if _, err := lstat(root, p); err != nil {
		return nil, err
	}
	return lstat(root, p)
}

var typeNames = map[uint32]string{
	unix.S_IFREG: "reg", unix.S_IFDIR: "dir", unix.S_IFLNK: "lnk", unix.S_IFIFO: "fifo",
	unix.S_IFCHR: "chr", unix.S_IFBLK: "blk", unix.S_IFSOCK: "sock",
}

// describe normalises the stat of a path after a step: no inode numbers,
// no absolute times.
func describe(s step, pre *unix.Stat_t, post *unix.Stat_t, err error) string {
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return "absent"
		}
		return "stat " + errName(err)
	}
	st := post
	typ := typeNames[st.Mode&unix.S_IFMT]
	if typ == "" {
		typ = fmt.Sprintf("type%o", st.Mode&unix.S_IFMT)
	}
	out := fmt.Sprintf("%s %04o %d:%d", typ, st.Mode&0o7777, st.Uid, st.Gid)
	if typ != "dir" { // a directory's size is the file system's business (tmpfs: 20 bytes an entry)
		out += fmt.Sprintf(" s=%d", st.Size)
	}
	out += fmt.Sprintf(" n=%d", st.Nlink)
	if typ == "chr" || typ == "blk" {
		out += fmt.Sprintf(" rdev=%d,%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	if pre != nil {
		out += " c" + changed(pre.Ctim, st.Ctim) + " m" + changed(pre.Mtim, st.Mtim)
	}
	if s.times {
		out += " c" + rel(st.Ctim, st.Mtim) + "m"
	}
	if s.given != nil {
		if s.given[0].Nsec != unix.UTIME_OMIT {
			out += " a" + eqGiven(st.Atim, s.given[0])
		}
		if s.given[1].Nsec != unix.UTIME_OMIT {
			out += " m" + eqGiven(st.Mtim, s.given[1])
		}
	}
	return out
}

func changed(a, b unix.Timespec) string {
	if a == b {
		return "="
	}
	return "+"
}

func rel(a, b unix.Timespec) string {
	switch {
	case a.Sec > b.Sec || a.Sec == b.Sec && a.Nsec > b.Nsec:
		return ">"
	case a == b:
		return "="
	}
	return "<"
}

func eqGiven(a, given unix.Timespec) string {
	if a == given {
		return "=given"
	}
	return "≠given"
}

// result is a step's record on one side.
type result struct {
	err  string // "ok" or the errno
	text string // the whole record, compared between the sides
}

// runScript runs every step on the mount mnt and returns the records.
func runScript(t *testing.T, sd side) []result {
	t.Helper()
	rootfd, err := unix.Open(sd.mnt, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rootfd)
	out := make([]result, len(script))
	for i, s := range script {
		if s.sleep > 0 {
			time.Sleep(s.sleep)
		}
		var hung atomic.Bool
		watchdog := time.AfterFunc(stepLimit, func() {
			hung.Store(true)
			t.Logf("%s: step %q did not end in %v: the server does not answer? Unmounting by force.\n%s",
				sd.name, s.name, stepLimit, diagnostics())
			_, _ = guesttest.RunFor(15*time.Second, "umount -f -l "+sd.mnt)
			// A call stuck in the client's reconnect loop may outlive
			// the forced unmount: then end the test binary.
			time.AfterFunc(stuckLimit, func() {
				t.Logf("%s: step %q still blocked %v after the forced unmount: exiting", sd.name, s.name, stuckLimit)
				os.Exit(3)
			})
		})
		pre := make([]*unix.Stat_t, len(s.stat))
		for j, p := range s.stat {
			pre[j], _ = settledStat(rootfd, p)
		}
		t0 := time.Now()
		o := runChild(t, sd, i, s)
		if d := time.Since(t0); d > slowStep {
			t.Logf("%s: step %q took %.1f s", sd.name, s.name, d.Seconds())
		}
		rec := o.Err
		if o.Out != "" {
			rec += " " + o.Out
		}
		for j, p := range s.stat {
			st, err := settledStat(rootfd, p)
			rec += "; " + abbrev(p) + ": " + describe(s, pre[j], st, err)
		}
		out[i] = result{err: o.Err, text: rec}
		watchdog.Stop()
		if hung.Load() {
			t.Fatalf("%s: step %q hung (%s); the mount was unmounted by force", sd.name, s.name, rec)
		}
	}
	return out
}

// runChild runs step i in a child process as the step's identity.
func runChild(t *testing.T, sd side, i int, s step) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, childPath)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), envStep+"="+strconv.Itoa(i), envRoot+"="+sd.mnt)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
		Uid: s.as.uid, Gid: s.as.gid, Groups: s.as.groups}}
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("%s: step %q did not end in %v: the server does not answer?\n%s", sd.name, s.name, childTimeout, diagnostics())
	}
	var o outcome
	if err != nil || json.Unmarshal(b, &o) != nil {
		t.Fatalf("%s: step %q: the child failed: %v\nstdout: %s\nstderr: %s", sd.name, s.name, err, b, stderr.String())
	}
	return o
}

// diagnostics is the kernel's and rdma-nfsd's recent logs.
func diagnostics() string {
	out, _ := guesttest.RunFor(15*time.Second, "dmesg | tail -n 40; echo == RPC tasks; cat /sys/kernel/debug/sunrpc/rpc_clnt/*/tasks; "+
		"echo == rdma-nfsd log; tail -n 60 "+rdmaNfsdLog)
	return out
}

// copyChild copies the test binary to childPath, mode 0755: the
// unprivileged identities must be able to run it (the share at /host need
// not let them).
func copyChild(t *testing.T) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(childPath, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(childPath, 0o755); err != nil {
		t.Fatal(err)
	}
}

// Sanity bounds: the comparison must not pass trivially.
const (
	minOK    = 40 // steps that succeed on knfsd
	minErrno = 25 // steps that fail with an errno on knfsd
)

// sentinel is the step whose knfsd outcome proves that the identities
// switched: uid 1234 reading root's 0600 file.
const sentinel = "read/1234 root's 0600 file"

// TestPosix runs the script on knfsd's mount, then on rdma-nfsd's, and
// compares the records step by step.
func TestPosix(t *testing.T) {
	guesttest.RequireGuest(t, binary)
	checkScript(t)
	copyChild(t)
	guesttest.Sh(t, "rxevm-nfsd-start")
	guesttest.Sh(t, "ping -c 1 -W 2 -I 10.0.0.1 10.0.0.2 > /dev/null || true")
	guesttest.Sh(t, "mkdir -p "+oursExport+" && mount -t tmpfs -o size=64m,mode=1777 posix "+oursExport)
	guesttest.StartRdmaNfsd(t, &guesttest.RdmaNfsd{Binary: binary, Args: rdmaNfsdArgs(oursExport), Log: rdmaNfsdLog})

	results := map[string][]result{}
	for _, sd := range sides {
		guesttest.Mount(t, sd.source, sd.mnt, sd.opts)
		t0 := time.Now()
		results[sd.name] = runScript(t, sd)
		t.Logf("%s: %d steps in %.1f s", sd.name, len(script), time.Since(t0).Seconds())
		guesttest.Sh(t, "umount "+sd.mnt)
	}
	compare(t, results["knfsd"], results["rdma-nfsd"])
}

// checkScript fails t on duplicate step names and on knownDifferences
// entries that name no step.
func checkScript(t *testing.T) {
	t.Helper()
	names := map[string]bool{}
	for _, s := range script {
		if names[s.name] {
			t.Fatalf("two steps named %q", s.name)
		}
		names[s.name] = true
	}
	if !names[sentinel] {
		t.Fatalf("the sentinel step %q is missing", sentinel)
	}
	for n := range knownDifferences {
		if !names[n] {
			t.Errorf("knownDifferences lists %q, which is no step of the script", n)
		}
	}
}

// compare prints the side-by-side table and fails t on a difference that
// knownDifferences does not list, or on a knfsd run that shows the
// identities did not switch.
func compare(t *testing.T, k, r []result) {
	t.Helper()
	width := 0
	for _, s := range script {
		width = max(width, len([]rune(s.name)))
	}
	var ok, errno, same, known, unknown int
	var nowMatch []string
	var ids []string
	for _, id := range []ident{root, u1234, u1235, u1236} {
		ids = append(ids, fmt.Sprintf("%s = uid %d gid %d groups %v", id.name, id.uid, id.gid, id.groups))
	}
	t.Logf("POSIXCMP identities: %s", strings.Join(ids, "; "))
	t.Logf("POSIXCMP %-*s | %s | %s | %s", width, "step (identity/operation)", "knfsd", "rdma-nfsd", "verdict")
	for i, s := range script {
		if k[i].err == "ok" {
			ok++
		} else if strings.HasPrefix(k[i].err, "E") {
			errno++
		}
		if s.want != "" && k[i].err != s.want {
			t.Errorf("knfsd: step %q gave %s, the script expects %s", s.name, k[i].err, s.want)
		}
		reason, listed := knownDifferences[s.name]
		verdict := "same"
		switch {
		case k[i].text == r[i].text && listed:
			verdict = "same (now matches: remove from knownDifferences)"
			nowMatch = append(nowMatch, s.name)
			same++
		case k[i].text == r[i].text:
			same++
		case listed:
			verdict = "DIFF known: " + reason
			known++
		default:
			verdict = "DIFF"
			unknown++
			t.Errorf("step %q differs: knfsd %s; rdma-nfsd %s", s.name, k[i].text, r[i].text)
		}
		name := s.name + strings.Repeat(" ", width-len([]rune(s.name)))
		t.Logf("POSIXCMP %s | %s | %s | %s", name, k[i].text, r[i].text, verdict)
	}
	t.Logf("POSIXCMP summary: %d steps: %d same, %d known differences, %d new differences; on knfsd %d ok, %d errno",
		len(script), same, known, unknown, ok, errno)
	for _, n := range nowMatch {
		t.Logf("POSIXCMP now matches: remove from knownDifferences: %q", n)
	}
	for i, s := range script {
		if s.name == sentinel && k[i].err != "EACCES" {
			t.Errorf("identity not applied by the test harness: on knfsd, %q gave %s, not EACCES", s.name, k[i].err)
		}
	}
	if ok < minOK || errno < minErrno {
		t.Errorf("the comparison is too easy: on knfsd %d steps ok (want >= %d), %d with an errno (want >= %d)",
			ok, minOK, errno, minErrno)
	}
}
