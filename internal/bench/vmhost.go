package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// vmRun is one boot of the VM running the guest program
// (cmd/rpcrdma-bench-guest).
type vmRun struct {
	mode    string
	spec    Spec
	timeout time.Duration
	log     io.Writer         // progress and set-up lines (stderr)
	onLine  func(line string) // every guest line, as it comes
	console string            // file to save the console to ("" none)
	// profileOut, if set, gets the CPU profiles rdma-nfsd wrote into the
	// share's guestProfileDir, and clientProfileOut the Go client's
	// (clientProfileName).
	profileOut, clientProfileOut string

	baseline *Baseline // perftest's figures, when the spec asked for them
	// clock is the guest kernel's clocksource, as the guest read it.
	clock string
	// phases, if not nil, gets the build's, the guest's phases and the
	// VM's own overhead (qemu's start, the firmware, the power-off).
	phases *phases
}

// moduleRoot is the go-rpcrdma checkout the command runs from: the VM
// side is built from it.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w (the bench needs the go tool and the go-rpcrdma checkout)", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module: run it from the go-rpcrdma checkout")
	}
	if b, err := os.ReadFile(mod); err != nil || !bytes.Contains(b, []byte("module github.com/go-rpcrdma/rpcrdma")) {
		return "", fmt.Errorf("%s is not go-rpcrdma's go.mod: run it from the go-rpcrdma checkout", mod)
	}
	return filepath.Dir(mod), nil
}

// prepareHost installs the host packages the VM needs (idempotent) and
// builds or loads the VM image (downloaded once, cached).
func prepareHost(ctx context.Context, root string, log io.Writer) (*vm.Image, error) {
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, "sh", filepath.Join(root, "internal/vm/install-host-deps.sh"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("installing the host packages (internal/vm/install-host-deps.sh): %w", err)
	}
	img, err := vm.Build(ctx, vm.BuildOptions{Log: prefixWriter(log, "  vm: ")})
	if err != nil {
		return nil, fmt.Errorf("building the VM image: %w", err)
	}
	fmt.Fprintf(log, "host ready in %.1f s (VM image %s)\n", time.Since(t0).Seconds(), img.Dir)
	return img, nil
}

// goBuild builds a main package of the module for the guest, with cgo
// (the rdma-core provider links libibverbs and librdmacm).
func goBuild(ctx context.Context, root, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// run builds the guest's programs into a fresh share, boots the VM and
// runs the guest side; it returns the result file's contents.
func (r *vmRun) run(ctx context.Context, img *vm.Image, root string) ([]byte, error) {
	share, err := os.MkdirTemp("", "rpcrdma-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(share)
	t0 := time.Now()
	// Both programs at once: from a cold build cache (a fresh machine)
	// each is mostly cgo and compiling on its own core.
	bins := []struct{ name, pkg string }{{"rpcrdma-bench-guest", "./cmd/rpcrdma-bench-guest"}, {"rdma-nfsd", "./cmd/rdma-nfsd"}}
	errs := make([]error, len(bins))
	var wg sync.WaitGroup
	for i, b := range bins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = goBuild(ctx, root, filepath.Join(share, b.name), b.pkg)
		}()
	}
	if r.spec.Compare != "" {
		errs = append(errs, buildAtCommit(ctx, root, r.spec.Compare, compareBin(filepath.Join(share, "rdma-nfsd")),
			"./cmd/rdma-nfsd", []string{"CGO_ENABLED=1"}))
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if r.phases != nil {
		r.phases.add("build", time.Since(t0))
	}
	spec, _ := json.Marshal(r.spec)
	if err := os.WriteFile(filepath.Join(share, "spec.json"), spec, 0o644); err != nil {
		return nil, err
	}
	if r.spec.ServerProfile != "" || r.spec.ClientProfile != "" {
		if err := os.Mkdir(filepath.Join(share, "profiles"), 0o777); err != nil {
			return nil, err
		}
		defer func() {
			if err := copyProfiles(filepath.Join(share, "profiles"), r.profileOut, r.clientProfileOut); err != nil {
				fmt.Fprintf(r.log, "-server-profile, -client-profile: %v\n", err)
			}
		}()
	}
	fmt.Fprintf(r.log, "built the guest programs in %.1f s; booting the VM (qemu TCG, Soft-RoCE)\n", time.Since(t0).Seconds())
	lw := &lineWriter{f: func(l string) {
		if rest, ok := tagged(l, tagPhase); ok && r.phases != nil && r.phases.guestLine(rest) {
			return
		}
		if r.onLine != nil {
			r.onLine(l)
		}
	}}
	command := "cd /host && ./rpcrdma-bench-guest -mode " + r.mode + " -spec /host/spec.json -out /host/results.jsonl -rdma-nfsd /host/rdma-nfsd"
	guest := 0.0
	if r.phases != nil {
		guest = r.phases.sum()
	}
	tVM := time.Now()
	status, console, err := vm.Run(ctx, vm.Options{Image: img, Share: share, Timeout: r.timeout, Console: lw, MTU: r.spec.MTU}, command)
	lw.flush()
	if r.phases != nil {
		// What the guest did not time: qemu's start and firmware before
		// the kernel, and the power-off.
		r.phases.add("qemu+power-off", time.Since(tVM)-time.Duration((r.phases.sum()-guest)*float64(time.Second)))
	}
	if r.console != "" {
		_ = os.WriteFile(r.console, console, 0o644)
	}
	if err != nil || status != 0 {
		tail := lastLines(string(console), 40)
		if err == nil {
			err = fmt.Errorf("the guest side exited with status %d", status)
		}
		return nil, fmt.Errorf("VM run: %w; console tail:\n%s", err, tail)
	}
	if b, err := os.ReadFile(filepath.Join(share, guestClockFile)); err == nil {
		r.clock = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(share, "baseline.json")); err == nil {
		r.baseline = new(Baseline)
		if err := json.Unmarshal(b, r.baseline); err != nil {
			return nil, fmt.Errorf("baseline.json: %w", err)
		}
	}
	return os.ReadFile(filepath.Join(share, "results.jsonl"))
}

// vmTimeout is a generous limit for a run of n cells of duration d.
func vmTimeout(n int, d time.Duration, mounts int) time.Duration {
	return 3*time.Minute + time.Duration(n)*(d+d/4+3*time.Second) + time.Duration(mounts)*20*time.Second
}

// lineWriter calls f for each complete line written to it.
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
	f   func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(w.buf[:i]), "\r")
		w.buf = w.buf[i+1:]
		if w.f != nil {
			w.f(line)
		}
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 && w.f != nil {
		w.f(strings.TrimRight(string(w.buf), "\r"))
	}
	w.buf = nil
}

// prefixWriter writes each line to w with a prefix.
func prefixWriter(w io.Writer, prefix string) io.Writer {
	return &lineWriter{f: func(l string) { fmt.Fprintf(w, "%s%s\n", prefix, l) }}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// tagged returns the rest of line after tag, which may follow kernel
// console noise on the same line.
func tagged(line, tag string) (string, bool) {
	i := strings.Index(line, tag)
	if i < 0 {
		return "", false
	}
	return line[i+len(tag):], true
}

// guestProfileDir is where rdma-nfsd and the Go client write their CPU
// profiles in the VM: the share's profiles directory.
const guestProfileDir = "/host/profiles"

// copyProfiles copies the profiles in dir (the share's) out: the Go
// client's (clientProfilePrefix) to clientOut, rdma-nfsd's to serverOut;
// those whose directory is "" stay.
func copyProfiles(dir, serverOut, clientOut string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		out := serverOut
		if strings.HasPrefix(e.Name(), clientProfilePrefix) {
			out = clientOut
		}
		if out == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
