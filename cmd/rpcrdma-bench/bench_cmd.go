package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vm"
	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// benchFlags are the bench command's.
type benchFlags struct {
	quick                                        bool
	rounds                                       int
	d                                            time.Duration
	provider, inlines, sizes, inflight           string
	workloads, servers, clients                  string
	jsonOut, csvOut, mdOut, chartOut, consoleOut string
	profileOut, serverFlags, compare             string
	clientProfileOut                             string
	compareFlags                                 string
	mtu                                          int
	// -host and its flags (host.go).
	host, kernel bool
	device, addr string
}

func parseBench(args []string, stderr io.Writer) (Spec, benchFlags, error) {
	var f benchFlags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&f.quick, "quick", false, "the CI subset: 2, 4 and 64 KiB, 1 and 8 in flight, inline 1024 and 4096, 1 s cells")
	fs.DurationVar(&f.d, "d", 0, "duration of each cell (default 3s, 1s with -quick)")
	fs.IntVar(&f.rounds, "rounds", 0, "measure each cell this many times, inline settings in ABBA order (default 2)")
	fs.StringVar(&f.provider, "provider", "rdmacore", "rdmacore: in the VM over rxe (all peers); soft: here, over TCP (our peers only)")
	fs.StringVar(&f.inlines, "inline", "", "inline settings (default 1024,4096,16KiB,64KiB)")
	fs.StringVar(&f.sizes, "sizes", "", "READ and WRITE sizes (default 512,1KiB,2KiB,4KiB,8KiB,64KiB,1MiB)")
	fs.StringVar(&f.inflight, "inflight", "", "operations in flight (default 1,8,32)")
	fs.StringVar(&f.workloads, "workloads", "", "null,read,write,getattr,create (default all)")
	fs.StringVar(&f.servers, "servers", "", "rdma-nfsd,knfsd (default both)")
	fs.StringVar(&f.clients, "clients", "", "kernel,go (default both)")
	fs.StringVar(&f.jsonOut, "json", "", "write the report as JSON to FILE (- for stdout)")
	fs.StringVar(&f.csvOut, "csv", "", "write the results as CSV to FILE (- for stdout)")
	fs.StringVar(&f.mdOut, "md", "", "write the results as a Markdown table to FILE")
	fs.StringVar(&f.chartOut, "chart", "", "draw ops/s and RDMA operations per RPC against I/O size to FILE (.png or .svg)")
	fs.StringVar(&f.consoleOut, "console", "", "save the VM's console to FILE")
	fs.StringVar(&f.serverFlags, "server-flags", "", "more flags for rdma-nfsd, space-separated (e.g. \"-concurrent-calls 1\"); NAME=value words set its environment (GOMAXPROCS=1)")
	fs.StringVar(&f.profileOut, "server-profile", "", "write a CPU profile (pprof) of each start of rdma-nfsd (one per inline setting and round) into DIR")
	fs.StringVar(&f.clientProfileOut, "client-profile", "", "write a CPU profile (pprof) of the bench's own process during each Go client cell into DIR")
	fs.IntVar(&f.mtu, "mtu", 0, "MTU of the VM's veth pair (default 1500: rxe path MTU 1024; 9000: 4096, as RoCE with jumbo frames)")
	fs.StringVar(&f.compare, "compare", "", "also run rdma-nfsd built from git revision `REV` (as rdma-nfsd-b, alternating with this checkout's) and print each cell's ratio")
	fs.StringVar(&f.compareFlags, "compare-flags", "", "more flags for rdma-nfsd-b only; without -compare, rdma-nfsd-b is this checkout's rdma-nfsd run with them")
	fs.BoolVar(&f.host, "host", false, "run on this host's own RDMA device through rdma-core, without the VM: rdma-nfsd and the Go client (and the kernel client with -kernel)")
	fs.StringVar(&f.device, "device", "", "with -host: the RDMA device (default the first with an active port that has an IP address)")
	fs.StringVar(&f.addr, "addr", "", "with -host: the device's IP `address` rdma-nfsd listens on and the clients use (default its first, IPv4 first)")
	fs.BoolVar(&f.kernel, "kernel", false, "with -host: also measure the Linux kernel client (mount -o proto=rdma; needs root, the rpcrdma module and mount.nfs)")
	baseline := fs.Bool("baseline", false, "run perftest (ib_send_lat -e, ib_write_bw) on the same devices before every round, for the issue's goals")
	if err := cmdline.Parse(fs, args); err != nil {
		return Spec{}, f, err
	}
	s, err := benchSpec(f, fs.Args(), *baseline)
	if err == nil {
		s, err = hostSpec(s, f)
	}
	if err != nil {
		err = cmdline.Usage(err)
	}
	return s, f, err
}

// benchSpec is the Spec of the bench command's flags f, its arguments
// args (none) and -baseline.
func benchSpec(f benchFlags, args []string, baseline bool) (Spec, error) {
	if len(args) > 0 {
		return Spec{}, fmt.Errorf("unexpected arguments: %v", args)
	}
	s := fullSpec()
	if f.quick {
		s = quickSpec()
	}
	s.Provider = f.provider
	// 0 is the default; anything else, negative included, is Validate's.
	if f.d != 0 {
		s.Duration = f.d
	}
	if f.rounds != 0 {
		s.Rounds = f.rounds
	}
	var err error
	if f.inlines != "" {
		if s.Inlines, err = parseInts(f.inlines, parseSize); err != nil {
			return s, fmt.Errorf("-inline: %w", err)
		}
	}
	if f.sizes != "" {
		if s.Sizes, err = parseInts(f.sizes, parseSize); err != nil {
			return s, fmt.Errorf("-sizes: %w", err)
		}
	}
	if f.inflight != "" {
		if s.InFlight, err = parseInts(f.inflight, atoi); err != nil {
			return s, fmt.Errorf("-inflight: %w", err)
		}
	}
	if f.workloads != "" {
		s.Workloads = splitList(f.workloads)
	}
	if f.servers != "" {
		s.Servers = splitList(f.servers)
	}
	if f.clients != "" {
		s.Clients = splitList(f.clients)
	}
	s.Baseline = baseline
	s.MTU = f.mtu
	s.ServerFlags = strings.Fields(f.serverFlags)
	// Profiles are written in the VM's share, copied out after the run
	// (rdma-nfsd's, and the Go client's, which runs in the bench's guest
	// process); on soft, into the directory itself.
	if s.ServerProfile, err = profileDir("-server-profile", f.profileOut, s.Provider); err != nil {
		return s, err
	}
	if s.ClientProfile, err = profileDir("-client-profile", f.clientProfileOut, s.Provider); err != nil {
		return s, err
	}
	if s.Provider == "soft" {
		s.Servers, s.Clients, s.Baseline = []string{ServerGo}, []string{ClientGo}, false
	}
	s.Compare, s.CompareFlags = f.compare, strings.Fields(f.compareFlags)
	if s.comparing() {
		// B runs right after A (roundServers); Compare is resolved to a
		// commit by cmdBench.
		if i := slices.Index(s.Servers, ServerGo); i >= 0 {
			s.Servers = slices.Insert(s.Servers, i+1, ServerGoB)
		}
	}
	return s, s.Validate()
}

// Report is a whole run: where and when it ran, what it measured.
type Report struct {
	Date        string      `json:"date"`
	Host        string      `json:"host"`                  // the machine (CPU, cores, kernel)
	GuestKernel string      `json:"guest_kernel"`          // the VM's kernel package, "" on soft
	GuestClock  string      `json:"guest_clock,omitempty"` // the VM kernel's clocksource
	Provider    string      `json:"provider"`
	Spec        Spec        `json:"spec"`
	Load        string      `json:"host_load"`         // /proc/loadavg at the start and the end
	Results     []Result    `json:"results,omitempty"` // rounds merged
	Raw         []Result    `json:"raw,omitempty"`     // every round's result
	Baseline    *Baseline   `json:"baseline,omitempty"`
	Matrix      []MatrixRow `json:"matrix,omitempty"`
	Device      *hostDevice `json:"device,omitempty"` // the port of a -host run
	Seconds     float64     `json:"seconds"`
}

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	spec, f, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if spec.Compare != "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		if spec.Compare, err = resolveCommit(ctx, root, spec.Compare); err != nil {
			return err
		}
	}
	rep := Report{Date: t0.UTC().Format(time.RFC3339), Host: hostDescription(), Provider: spec.Provider, Spec: spec}
	prog := newProgress(stderr)
	load0 := loadAvg()
	if spec.Provider == "soft" {
		rep.Provider = "soft (TCP emulation on this machine: not RDMA)"
		if rep.Results, err = benchSoft(ctx, spec, prog, stderr); err != nil {
			return err
		}
	} else if f.host {
		dev, results, err := benchHost(ctx, spec, f, prog, stderr)
		if err != nil {
			return err
		}
		rep.Provider, rep.Device, rep.Results = hostProvider(dev), &dev, results
	} else {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		img, err := prepareHost(ctx, root, stderr)
		if err != nil {
			return err
		}
		rep.GuestKernel = guestKernel(img)
		rep.Provider = fmt.Sprintf("rdmacore (Soft-RoCE rxe in a qemu TCG VM: not hardware; path MTU %d)", spec.PathMTU())
		cells := spec.AllCells()
		run := &vmRun{mode: "bench", spec: spec, log: stderr, console: f.consoleOut, profileOut: f.profileOut, clientProfileOut: f.clientProfileOut,
			timeout: vmTimeout(len(cells)*spec.Rounds, spec.Duration, spec.Rounds*len(spec.Servers)*len(spec.Inlines)),
			onLine:  prog.guestLine}
		fmt.Fprintf(stderr, "%d cells × %d rounds of %v each\n", len(cells), spec.Rounds, spec.Duration)
		raw, err := run.run(ctx, img, root)
		prog.end()
		if err != nil {
			return err
		}
		if rep.Results, err = decodeLines[Result](raw); err != nil {
			return err
		}
		rep.Baseline, rep.GuestClock = run.baseline, run.clock
	}
	rep.Seconds = time.Since(t0).Seconds()
	rep.Load = load0 + " → " + loadAvg()
	rep.Raw, rep.Results = rep.Results, mergeRounds(rep.Results)
	fillRatios(rep.Results)
	return writeOutputs(rep, f, stdout)
}

// cmdReport renders the JSON report of an earlier run.
func cmdReport(args []string, stdout, stderr io.Writer) error {
	var f benchFlags
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.csvOut, "csv", "", "write the results as CSV to FILE (- for stdout)")
	fs.StringVar(&f.mdOut, "md", "", "write the results as a Markdown table to FILE")
	fs.StringVar(&f.chartOut, "chart", "", "draw the chart to FILE (.png or .svg)")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cmdline.Usagef("report: want one JSON report file")
	}
	raw, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	return writeOutputs(rep, f, stdout)
}

// writeOutputs prints the table and writes the files asked for.
func writeOutputs(rep Report, f benchFlags, stdout io.Writer) error {
	fmt.Fprintf(stdout, "\n%s; %s; %s; load %s\n", rep.Provider, rep.Date, rep.Host, rep.Load)
	if rep.GuestKernel != "" {
		fmt.Fprintf(stdout, "guest kernel: %s%s\n", rep.GuestKernel, clockNote(rep.GuestClock))
	}
	writeTable(stdout, rep.Results)
	writeServerRatios(stdout, rep.Results)
	writeInlineRounds(stdout, rep.Raw)
	writeCompare(stdout, rep.Spec, rep.Raw)
	writeBaseline(stdout, rep.Baseline, rep.Results, rep.Raw)
	if f.jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFileOrStdout(f.jsonOut, append(b, '\n'), stdout); err != nil {
			return err
		}
	}
	if f.csvOut != "" {
		var b strings.Builder
		if err := writeCSV(&b, rep.Results); err != nil {
			return err
		}
		if err := writeFileOrStdout(f.csvOut, []byte(b.String()), stdout); err != nil {
			return err
		}
	}
	if f.mdOut != "" {
		var b strings.Builder
		writeMarkdown(&b, rep)
		if err := os.WriteFile(f.mdOut, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	if f.chartOut != "" {
		if err := drawChart(f.chartOut, rep); err != nil {
			return fmt.Errorf("-chart: %w", err)
		}
	}
	return nil
}

func writeFileOrStdout(name string, b []byte, stdout io.Writer) error {
	if name == "-" {
		_, err := stdout.Write(b)
		return err
	}
	return os.WriteFile(name, b, 0o644)
}

// decodeLines decodes one JSON value per line.
func decodeLines[T any](raw []byte) ([]T, error) {
	var out []T
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			return out, fmt.Errorf("results: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}

// benchSoft runs our peers on this machine over the soft provider:
// rdma-nfsd as a child process, our requester in this one.
func benchSoft(ctx context.Context, spec Spec, prog *progress, stderr io.Writer) ([]Result, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "rpcrdma-bench-soft-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "rdma-nfsd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/rdma-nfsd")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/rdma-nfsd: %w\n%s", err, b)
	}
	srv := newRdmaNfsd(bin, "soft", "127.0.0.1", filepath.Join(tmp, "export"))
	srv.logPath = filepath.Join(tmp, "rdma-nfsd.log")
	srv.profileDir, srv.extra = spec.ServerProfile, spec.ServerFlags
	servers := map[string]server{ServerGo: srv}
	if spec.comparing() {
		b := serverB(srv, spec)
		if spec.Compare != "" {
			if err := buildAtCommit(ctx, root, spec.Compare, b.bin, "./cmd/rdma-nfsd", nil); err != nil {
				return nil, err
			}
		}
		servers[ServerGoB] = b
	}
	var results []Result
	r := &runner{spec: spec, label: "soft (TCP)", provider: &soft.Provider{},
		servers: servers,
		emit:    func(res Result) { results = append(results, res) },
	}
	r.progress = func(done, total int, c Cell) {
		prog.cell(done, total, c.Label(), &results)
	}
	fmt.Fprintf(stderr, "%d cells of %v each on the soft provider\n", len(spec.AllCells()), spec.Duration)
	err = r.run(ctx)
	prog.end()
	return results, err
}

// hostDescription names the machine: CPU model, cores, kernel.
func hostDescription() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "unknown kernel"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d cores, %s", model, runtime.NumCPU(), kernel)
}

// loadAvg is the host's 1-minute load average: under TCG every figure
// depends on it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// guestKernel is the VM's kernel package ("linux-image-6.1.0-... version").
func guestKernel(img *vm.Image) string {
	if len(img.Packages) > 0 {
		return img.Packages[0]
	}
	return ""
}

// profileDir creates out, the directory of a profile flag (name), and
// returns where the profiling process writes into it: guestProfileDir in
// the VM, out itself (absolute) on soft; "" if out is "".
func profileDir(name, out, provider string) (string, error) {
	if out == "" {
		return "", nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if provider != "soft" {
		return guestProfileDir, nil
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return abs, nil
}
