package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/vm"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

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
	Device      *HostDevice `json:"device,omitempty"` // the port of a -host run (Spec.Host)
	Seconds     float64     `json:"seconds"`
}

// RunOptions are where a run's side outputs go.
type RunOptions struct {
	// Console, if set, is the file the VM's console is saved to.
	Console string
	// ServerProfileOut and ClientProfileOut receive the CPU profiles the
	// spec asked for ("" leaves them).
	ServerProfileOut, ClientProfileOut string
	// Log gets the progress and set-up lines (nil: discarded).
	Log io.Writer
}

// Run measures spec: on the soft provider here, with Spec.Host on this
// host's own RDMA device (host.go), otherwise in one boot of the VM
// (installing the host packages and building the image if need be). It
// runs from the go-rpcrdma checkout, whose programs it builds; Spec.Host
// also runs without it, given an rdma-nfsd next to the program or in
// $PATH.
func Run(ctx context.Context, spec Spec, o RunOptions) (Report, error) {
	stderr := o.Log
	if stderr == nil {
		stderr = io.Discard
	}
	t0 := time.Now()
	if spec.Compare != "" {
		root, err := moduleRoot()
		if err != nil {
			return Report{}, err
		}
		if spec.Compare, err = resolveCommit(ctx, root, spec.Compare); err != nil {
			return Report{}, err
		}
	}
	rep := Report{Date: t0.UTC().Format(time.RFC3339), Host: hostDescription(), Provider: spec.Provider, Spec: spec}
	prog := newProgress(stderr)
	load0 := loadAvg()
	var err error
	if spec.Provider == "soft" {
		rep.Provider = "soft (TCP emulation on this machine: not RDMA)"
		if rep.Results, err = benchSoft(ctx, spec, prog, stderr); err != nil {
			return rep, err
		}
	} else if spec.Host {
		dev, results, err := benchHost(ctx, spec, prog, stderr)
		if err != nil {
			return rep, err
		}
		rep.Provider, rep.Device, rep.Results = hostProvider(dev), &dev, results
	} else {
		root, err := moduleRoot()
		if err != nil {
			return rep, err
		}
		img, err := prepareHost(ctx, root, stderr)
		if err != nil {
			return rep, err
		}
		rep.GuestKernel = guestKernel(img)
		rep.Provider = fmt.Sprintf("rdmacore (Soft-RoCE rxe in a qemu TCG VM: not hardware; path MTU %d)", spec.PathMTU())
		cells := spec.AllCells()
		run := &vmRun{mode: "bench", spec: spec, log: stderr, console: o.Console, profileOut: o.ServerProfileOut, clientProfileOut: o.ClientProfileOut,
			timeout: vmTimeout(len(cells)*spec.Rounds, spec.Duration, spec.Rounds*len(spec.Servers)*len(spec.Inlines)),
			onLine:  prog.guestLine}
		fmt.Fprintf(stderr, "%d cells × %d rounds of %v each\n", len(cells), spec.Rounds, spec.Duration)
		raw, err := run.run(ctx, img, root)
		prog.end()
		if err != nil {
			return rep, err
		}
		if rep.Results, err = decodeLines[Result](raw); err != nil {
			return rep, err
		}
		rep.Baseline, rep.GuestClock = run.baseline, run.clock
	}
	rep.Seconds = time.Since(t0).Seconds()
	rep.Load = load0 + " → " + loadAvg()
	rep.Raw, rep.Results = rep.Results, mergeRounds(rep.Results)
	fillRatios(rep.Results)
	return rep, nil
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
	srv := localNfsd(bin, "soft", "127.0.0.1", tmp, spec)
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
	r := &runner{spec: spec, label: "soft (TCP)", provider: &soft.Provider{}, servers: servers}
	fmt.Fprintf(stderr, "%d cells of %v each on the soft provider\n", len(spec.AllCells()), spec.Duration)
	return runHere(ctx, r, prog)
}

// localNfsd is rdma-nfsd run here (soft, -host) from bin with the
// provider, at addr, exporting tmp/export, its log in tmp, with spec's
// profile directory and flags.
func localNfsd(bin, provider, addr, tmp string, spec Spec) *rdmaNfsd {
	srv := newRdmaNfsd(bin, provider, addr, filepath.Join(tmp, "export"))
	srv.logPath = filepath.Join(tmp, "rdma-nfsd.log")
	srv.profileDir, srv.extra = spec.ServerProfile, spec.ServerFlags
	return srv
}

// runHere runs r's cells here, collects their results and reports each
// through prog.
func runHere(ctx context.Context, r *runner, prog *progress) ([]Result, error) {
	var results []Result
	r.emit = func(res Result) { results = append(results, res) }
	r.progress = func(done, total int, c Cell) { prog.cell(done, total, c.Label(), &results) }
	err := r.run(ctx)
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
