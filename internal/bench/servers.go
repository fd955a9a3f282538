package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport"
)

// The VM's addresses and the ports the bench uses (e2e/README.md): rxe0
// on 10.0.0.1 serves, the clients use rxe1 on 10.0.0.2. rdma-nfsd takes
// the ports of the other rdma-nfsd tests, knfsd its own.
const (
	vmServerIP   = "10.0.0.1"
	vmClientIP   = "10.0.0.2"
	goRDMAPort   = 20051
	goTCPPort    = 20052
	goMetrics    = "127.0.0.1:20053"
	knfsdRDMA    = 20049
	knfsdExport  = "/export"
	goExportRoot = "/srv/rdma-nfsd"
)

// server is one side of the cells: started for each inline setting and
// read before and after each cell.
type server interface {
	name() string
	// start (re)starts the server offering inline bytes each way, with
	// remote invalidation unless noRI.
	start(ctx context.Context, inline int, noRI bool) error
	// rdmaAddr is where clients connect (host:port).
	rdmaAddr() string
	// export is the path clients mount and dir where its files are on the
	// server's disk.
	export() (path, dir string)
	// mountOpts are the options a kernel mount needs besides vers and
	// proto; proto is "rdma" or "tcp".
	mountOpts() string
	proto() string
	// snapshot reads the server's counters ("sends", "rdma_reads",
	// "rdma_writes", "remote_inv", "mallocs", "cpu_ns", "ctxsw": context
	// switches of its threads, ctxsw.go; what it cannot count is absent).
	snapshot() (map[string]uint64, error)
	// negotiated is the server's own account of the last connection's
	// settings ("" when it keeps none).
	negotiated() string
	stop()
}

// rdmaNfsd runs cmd/rdma-nfsd as a child process, as a user would.
type rdmaNfsd struct {
	label               string // ServerGo, or ServerGoB for the build compared
	bin, provider, addr string
	dir                 string // the export (a tmpfs in the VM)
	logPath             string
	cmd                 *exec.Cmd
	waited              chan struct{}
	metrics             string // -metrics (host:port; port 0 picks one)
	rdmaPort, tcpPort   int    // 0 picks one
	metricsURL, bound   string // what the running server reports
	boundMountTCP       string // MOUNT's TCP address, as the running server reports it
	// profileDir, if set, gets a CPU profile of each start (profileName).
	profileDir string
	starts     int
	extra      []string // more flags (Spec.ServerFlags)
	// csw counts the context switches of the running process's threads
	// (a new one at each start).
	csw *switchCounter
}

// errServerUsage: rdma-nfsd exited at start with status 2, its flags
// refused (-server-flags, -compare-flags); no cell can run, the run ends.
var errServerUsage = errors.New("rdma-nfsd refused its flags")

func newRdmaNfsd(bin, provider, addr, dir string) *rdmaNfsd {
	return &rdmaNfsd{label: ServerGo, bin: bin, provider: provider, addr: addr, dir: dir, metrics: goMetrics, rdmaPort: goRDMAPort, tcpPort: goTCPPort,
		logPath: filepath.Join(os.TempDir(), "rpcrdma-bench-rdma-nfsd.log")}
}

func (s *rdmaNfsd) name() string { return s.label }
func (s *rdmaNfsd) rdmaAddr() string {
	if s.bound != "" {
		return s.bound
	}
	return net.JoinHostPort(s.addr, strconv.Itoa(s.rdmaPort))
}
func (s *rdmaNfsd) export() (string, string) { return "/", s.dir }
func (s *rdmaNfsd) proto() string            { return "rdma" }

func (s *rdmaNfsd) mountOpts() string {
	return fmt.Sprintf("port=%d,mountport=%d,mountproto=tcp,nolock", s.rdmaPort, s.tcpPort)
}

// args are rdma-nfsd's flags for one setting.
func (s *rdmaNfsd) args(inline int, noRI bool) []string {
	a := []string{"-dir", s.dir, "-provider", s.provider, "-addr", s.addr,
		"-rdma-port", strconv.Itoa(s.rdmaPort), "-tcp-port", strconv.Itoa(s.tcpPort), "-rpcbind=false",
		"-inline-send", strconv.Itoa(inline), "-inline-recv", strconv.Itoa(inline), "-metrics", s.metrics}
	if noRI {
		a = append(a, "-no-remote-invalidate")
	}
	if hasFlag(s.bin, "-squash") {
		// The same identities as knfsd's export in the VM
		// (no_root_squash); a build compared from before -squash
		// served every call as root anyway.
		a = append(a, "-squash", "no_root_squash")
	}
	if s.profileDir != "" {
		a = append(a, "-cpuprofile", filepath.Join(s.profileDir, profileName(s.label, s.starts, inline, noRI)))
	}
	flags, _ := splitEnv(s.extra)
	return append(a, flags...)
}

// splitEnv separates the words of Spec.ServerFlags and CompareFlags of the
// form NAME=value (NAME in capitals, digits and underscores: GOMAXPROCS=1,
// GODEBUG=...), which go into rdma-nfsd's environment, from its flags.
func splitEnv(words []string) (flags, env []string) {
	for _, w := range words {
		if envWordRE.MatchString(w) {
			env = append(env, w)
			continue
		}
		flags = append(flags, w)
	}
	return flags, env
}

var envWordRE = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// profileName names the CPU profile of the n-th start of the server
// labelled label (rdma-nfsd or rdma-nfsd-b), which serves the cells of one
// inline setting.
func profileName(label string, n, inline int, noRI bool) string {
	ri := ""
	if noRI {
		ri = "-noRI"
	}
	return fmt.Sprintf("%s-%02d-inline%d%s.pprof", label, n, inline, ri)
}

func (s *rdmaNfsd) start(ctx context.Context, inline int, noRI bool) error {
	s.stop()
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(s.logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	s.starts++
	s.cmd = exec.Command(s.bin, s.args(inline, noRI)...)
	if _, env := splitEnv(s.extra); env != nil {
		s.cmd.Env = append(os.Environ(), env...)
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	s.waited = make(chan struct{})
	s.csw = &switchCounter{}
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(s.cmd, s.waited)
	deadline := time.Now().Add(30 * time.Second)
	for {
		log, _ := os.ReadFile(s.logPath)
		if m := metricsURLRE.FindSubmatch(log); m != nil {
			s.metricsURL = string(m[1])
			s.bound, s.boundMountTCP = "", ""
			if b := servingRE.FindSubmatch(log); b != nil {
				s.bound = string(b[1])
			}
			if b := mountTCPRE.FindSubmatch(log); b != nil {
				s.boundMountTCP = string(b[1])
			}
			return nil
		}
		select {
		case <-s.waited:
			code := s.cmd.ProcessState.ExitCode()
			s.cmd = nil
			log, _ = os.ReadFile(s.logPath) // all it wrote
			if code == 2 {
				first, _, _ := strings.Cut(strings.TrimSpace(string(log)), "\n")
				return fmt.Errorf("%w: %s", errServerUsage, first)
			}
			return fmt.Errorf("rdma-nfsd exited at start:\n%s", log)
		case <-ctx.Done():
			_ = s.cmd.Process.Kill()
			<-s.waited
			s.cmd = nil
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.cmd.Process.Kill() // not left holding its ports
			<-s.waited
			s.cmd = nil
			return fmt.Errorf("rdma-nfsd does not serve after 30 s:\n%s", log)
		}
	}
}

func (s *rdmaNfsd) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.waited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.waited
	}
	s.cmd = nil
}

// expvarDoc is the part of rdma-nfsd's /debug/vars the bench reads.
type expvarDoc struct {
	Memstats struct{ Mallocs uint64 } `json:"memstats"`
	RdmaNfsd struct {
		Connections []struct {
			Remote string
			Stats  transport.Stats
		} `json:"connections"`
	} `json:"rdma_nfsd"`
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

func (s *rdmaNfsd) snapshot() (map[string]uint64, error) {
	if s.cmd == nil {
		return nil, errors.New("rdma-nfsd is not running")
	}
	resp, err := httpClient.Get(s.metricsURL)
	if err != nil {
		return nil, fmt.Errorf("rdma-nfsd metrics: %w", err)
	}
	defer resp.Body.Close()
	var doc expvarDoc
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("rdma-nfsd metrics: %w", err)
	}
	m := map[string]uint64{"mallocs": doc.Memstats.Mallocs}
	for _, c := range doc.RdmaNfsd.Connections {
		m["sends"] += c.Stats.Sends
		m["rdma_reads"] += c.Stats.RDMAReads
		m["rdma_writes"] += c.Stats.RDMAWrites
		m["remote_inv"] += c.Stats.RemoteInvalidations
		m["send_posts"] += c.Stats.SendPosts
	}
	pid := s.cmd.Process.Pid
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	ticks, err := parseProcStatCPU(string(stat))
	if err != nil {
		return nil, err
	}
	m["cpu_ns"] = ticks * uint64(time.Second/clockTicks)
	proc := os.DirFS("/proc")
	tasks, err := processTasks(proc, pid)
	if err != nil {
		return nil, fmt.Errorf("rdma-nfsd: %w", err)
	}
	if m["ctxsw"], err = procSwitches(proc, tasks, s.csw); err != nil {
		return nil, fmt.Errorf("rdma-nfsd: %w", err)
	}
	return m, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// metricsURLRE and servingRE find the metrics endpoint and the NFS over
// RDMA address in rdma-nfsd's start-up lines.
var (
	metricsURLRE = regexp.MustCompile(`rdma-nfsd: metrics" .*?(?:url|expvar)=(http://\S+)`) // url= before the Prometheus endpoint
	servingRE    = regexp.MustCompile(`rdma-nfsd: serving" .*nfs_rdma=(\S+)`)
	mountTCPRE   = regexp.MustCompile(`rdma-nfsd: serving" .*mount_tcp=(\S+)`)
)

// boundMount is the MOUNT service's TCP address the running server
// reported ("" before it did).
func (s *rdmaNfsd) boundMount() string { return s.boundMountTCP }

// acceptedRE picks the settings out of the transport's "rpcrdma:
// accepted" log line.
var acceptedRE = regexp.MustCompile(`peer_private_data=(\S+).*send_inline=(\d+) recv_inline=(\d+) send_with_invalidate=(\w+)`)

// negotiated returns the settings of the last connection accepted, from
// the log line the transport writes for each.
func (s *rdmaNfsd) negotiated() string {
	log, _ := os.ReadFile(s.logPath)
	var last string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "rpcrdma: accepted") {
			last = l
		}
	}
	m := acceptedRE.FindStringSubmatch(last)
	if m == nil {
		return ""
	}
	return fmt.Sprintf("send/recv %s/%s SWI=%s (peer private data %s)", m[2], m[3], m[4], m[1])
}

// acceptedLine is the transport's last "rpcrdma: accepted" line, whole.
func (s *rdmaNfsd) acceptedLine() string {
	log, _ := os.ReadFile(s.logPath)
	var last string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "rpcrdma: accepted") {
			last = strings.TrimSpace(l)
		}
	}
	return last
}

// knfsd is the kernel's NFS server, started once by rxevm-nfsd-start; its
// inline setting is svcrdma's max_req_size (4096 and up), read at each
// new connection. Make one with newKnfsd.
type knfsd struct {
	csw *switchCounter // of the nfsd threads
}

func newKnfsd() knfsd { return knfsd{csw: &switchCounter{}} }

func (knfsd) name() string             { return ServerKnfsd }
func (knfsd) rdmaAddr() string         { return net.JoinHostPort(vmServerIP, strconv.Itoa(knfsdRDMA)) }
func (knfsd) export() (string, string) { return knfsdExport, knfsdExport }
func (knfsd) mountOpts() string        { return fmt.Sprintf("port=%d,nolock", knfsdRDMA) }
func (knfsd) negotiated() string       { return "" }
func (knfsd) stop()                    {}
func (knfsd) proto() string            { return "rdma" }

// knfsdTCP is knfsd mounted over TCP (port 2049). Make one with
// newKnfsdTCP.
type knfsdTCP struct{ knfsd }

func newKnfsdTCP() knfsdTCP { return knfsdTCP{newKnfsd()} }

func (knfsdTCP) name() string                           { return ServerKnfsdTCP }
func (knfsdTCP) proto() string                          { return "tcp" }
func (knfsdTCP) mountOpts() string                      { return "port=2049,nolock" }
func (knfsdTCP) start(context.Context, int, bool) error { return nil }
func (knfsdTCP) rdmaAddr() string                       { return "" }

const svcRDMA = "/proc/sys/sunrpc/svc_rdma/"

func (knfsd) start(_ context.Context, inline int, noRI bool) error {
	if noRI {
		return errors.New("knfsd always accepts remote invalidation: no R-off setting")
	}
	// svcrdma accepts 4096 and up; below that, the client's smaller
	// offer decides (RFC 8797: each direction is the smaller of the two).
	return writeSysctl(svcRDMA+"max_req_size", max(inline, 4096))
}

// snapshot reads svcrdma's global counters: rdma_stat_read and
// rdma_stat_write count the RDMA Read and Write contexts knfsd posts (one
// per chunk segment with rxe's SGE limits); and the nfsd threads' context
// switches.
func (k knfsd) snapshot() (map[string]uint64, error) {
	m := map[string]uint64{}
	for key, file := range map[string]string{"rdma_reads": "rdma_stat_read", "rdma_writes": "rdma_stat_write"} {
		n, err := readSysctl(svcRDMA + file)
		if err != nil {
			return nil, err
		}
		m[key] = n
	}
	if err := k.addSwitches(m); err != nil {
		return nil, err
	}
	return m, nil
}

// snapshot of knfsd over TCP: the nfsd threads' context switches (the
// svcrdma counters are RDMA's).
func (k knfsdTCP) snapshot() (map[string]uint64, error) {
	m := map[string]uint64{}
	if err := k.addSwitches(m); err != nil {
		return nil, err
	}
	return m, nil
}

// addSwitches sets m["ctxsw"] to the context switches of the kernel's
// nfsd threads, and leaves it out when there are none.
func (k knfsd) addSwitches(m map[string]uint64) error {
	proc := os.DirFS("/proc")
	tasks, err := commTasks(proc, "nfsd")
	if err != nil {
		return fmt.Errorf("knfsd: %w", err)
	}
	if len(tasks) == 0 {
		return nil
	}
	if m["ctxsw"], err = procSwitches(proc, tasks, k.csw); err != nil {
		return fmt.Errorf("knfsd: %w", err)
	}
	return nil
}

func writeSysctl(path string, v int) error {
	if err := os.WriteFile(path, []byte(strconv.Itoa(v)+"\n"), 0o644); err != nil {
		return fmt.Errorf("sysctl: %w", err)
	}
	return nil
}

func readSysctl(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("sysctl: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sysctl %s: %w", path, err)
	}
	return n, nil
}

// hasFlag reports whether the program bin lists flag in its -h output
// (a build compared from an older revision may lack it); the answer is
// kept per program.
func hasFlag(bin, flag string) bool {
	key := bin + "\x00" + flag
	if v, ok := flagCache.Load(key); ok {
		return v.(bool)
	}
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	has := strings.Contains(string(out), "\n  "+flag+" ")
	flagCache.Store(key, has)
	return has
}

var flagCache sync.Map
