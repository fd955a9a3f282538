package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// A run with Spec.Host (bench -host) measures this host's own RDMA device
// through rdma-core, without the VM: rdma-nfsd started here and bound to
// the device's address, our Go client in this process and, with -kernel,
// the Linux kernel client (mount -o proto=rdma), both connecting to that
// address, so that the traffic goes through the device's own loopback.
// The cells, counters and report are those of the VM mode, less what only
// the VM has (knfsd, rxe's packet counters, perftest).

// HostDevice is the RDMA port a -host run measures, as the report names
// it (Report.Device).
type HostDevice struct {
	Name      string `json:"name"`       // the device: "mlx5_0", "rxe0"
	Port      int    `json:"port"`       // from 1
	LinkLayer string `json:"link_layer"` // "InfiniBand" or "Ethernet"
	PathMTU   int    `json:"path_mtu"`   // the port's active MTU, bytes
	Addr      string `json:"addr"`       // where rdma-nfsd listens and the clients connect
}

// String names the port as the report's heading does.
func (d HostDevice) String() string {
	return fmt.Sprintf("%s port %d at %s (%s, active path MTU %d)", d.Name, d.Port, d.Addr, d.LinkLayer, d.PathMTU)
}

// errNoDevice begins the message of a -host run that found no device to
// run on.
var errNoDevice = errors.New("no RDMA device found")

// hostSpec applies the -host flags of f to s; without -host it refuses
// them. A -host run measures rdma-nfsd only, with the Go client and, with
// -kernel, the kernel client.
func (f *Flags) hostSpec(s Spec) (Spec, error) {
	if !f.host {
		for _, c := range []flagSet{{"-device", f.device != ""}, {"-addr", f.addr != ""}, {"-kernel", f.kernel}} {
			if c.set {
				return s, fmt.Errorf("%s: only with -host", c.name)
			}
		}
		return s, nil
	}
	for _, c := range []flagSet{
		{"-provider", f.provider != "rdmacore"}, {"-servers", f.servers != ""}, {"-clients", f.clients != ""},
		{"-mtu", f.mtu != 0}, {"-console", f.Console != ""}, {"-baseline", f.baseline},
		{"-compare", f.compare != ""}, {"-compare-flags", f.compareFlags != ""},
	} {
		if c.set {
			return s, fmt.Errorf("%s: not with -host (which runs rdma-nfsd with the Go client, and the kernel client with -kernel, on this host's device)", c.name)
		}
	}
	if f.addr != "" {
		ip, err := netip.ParseAddr(f.addr)
		if err != nil {
			return s, fmt.Errorf("-addr %q: not an IP address", f.addr)
		}
		if f.kernel && !ip.Is4() {
			return s, fmt.Errorf("-addr %s: -kernel needs an IPv4 address", f.addr)
		}
	}
	s.Host, s.Device, s.Addr = true, f.device, f.addr
	s.Servers, s.Clients = []string{ServerGo}, []string{ClientGo}
	if f.kernel {
		s.Clients = append(s.Clients, ClientKernel)
	}
	return s, nil
}

// flagSet says whether a flag was given.
type flagSet struct {
	name string
	set  bool
}

// pickHostDevice chooses the port a -host run measures among devs: the
// device named name ("" for any) and the address addr ("" for the port's
// first, IPv4 before IPv6; only IPv4 if ipv4, for the kernel client's
// cells), on the first active port that has it.
func pickHostDevice(devs []rdmacore.DeviceInfo, name, addr string, ipv4 bool) (HostDevice, error) {
	if len(devs) == 0 {
		return HostDevice{}, fmt.Errorf("%w: rdma-core lists none (load the device's driver, e.g. mlx5_ib, or add a Soft-RoCE device: rdma link add rxe0 type rxe netdev eth0)", errNoDevice)
	}
	var names []string
	for _, d := range devs {
		names = append(names, d.Name)
	}
	if name != "" {
		i := -1
		for j, d := range devs {
			if d.Name == name {
				i = j
			}
		}
		if i < 0 {
			return HostDevice{}, fmt.Errorf("%w: no device %q (this host has %s)", errNoDevice, name, strings.Join(names, ", "))
		}
		devs = devs[i : i+1]
	}
	var want netip.Addr
	if addr != "" {
		var err error
		if want, err = netip.ParseAddr(addr); err != nil {
			return HostDevice{}, fmt.Errorf("-addr %q: not an IP address", addr)
		}
		want = want.Unmap()
	}
	var seen []string // why each port was passed over
	for _, d := range devs {
		if d.Err != nil && len(d.Ports) == 0 {
			seen = append(seen, d.Err.Error())
			continue
		}
		for _, p := range d.Ports {
			where := fmt.Sprintf("%s port %d", d.Name, p.Num)
			if !p.Active() {
				seen = append(seen, where+" is "+p.State)
				continue
			}
			a, ok := portAddr(p, want)
			if ok && ipv4 && !a.Is4() {
				ok = false
			}
			if !ok {
				switch {
				case want.IsValid():
					seen = append(seen, fmt.Sprintf("%s has %s", where, addrList(p.Addrs)))
				case ipv4 && len(p.Addrs) > 0:
					seen = append(seen, fmt.Sprintf("%s has no IPv4 address, which -kernel needs (%s)", where, addrList(p.Addrs)))
				default:
					seen = append(seen, where+" has no IP address RDMA-CM binds (give its netdev one)")
				}
				continue
			}
			return HostDevice{Name: d.Name, Port: p.Num, LinkLayer: p.LinkLayer, PathMTU: p.ActiveMTU, Addr: a.String()}, nil
		}
	}
	what := "an active port with an IP address"
	if ipv4 {
		what = "an active port with an IPv4 address"
	}
	if want.IsValid() {
		what = "an active port with address " + want.String()
	}
	return HostDevice{}, fmt.Errorf("%w: no device has %s (%s)", errNoDevice, what, strings.Join(seen, "; "))
}

// portAddr is want if p has it, else (want not valid) p's first IPv4
// address, else its first.
func portAddr(p rdmacore.PortInfo, want netip.Addr) (netip.Addr, bool) {
	if want.IsValid() {
		for _, a := range p.Addrs {
			if a == want {
				return a, true
			}
		}
		return netip.Addr{}, false
	}
	for _, a := range p.Addrs {
		if a.Is4() {
			return a, true
		}
	}
	if len(p.Addrs) > 0 {
		return p.Addrs[0], true
	}
	return netip.Addr{}, false
}

func addrList(as []netip.Addr) string {
	if len(as) == 0 {
		return "no IP address"
	}
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// benchHost runs spec on this host's device (bench -host: Spec.Host, on
// Spec.Device and Spec.Addr): it returns the port it ran on and the
// results.
func benchHost(ctx context.Context, spec Spec, prog *progress, stderr io.Writer) (HostDevice, []Result, error) {
	devs, err := rdmacore.Devices()
	if err != nil {
		return HostDevice{}, nil, fmt.Errorf("%w: %w", errNoDevice, err)
	}
	kernel := has(spec.Clients, ClientKernel)
	dev, err := pickHostDevice(devs, spec.Device, spec.Addr, kernel)
	if err != nil {
		return dev, nil, err
	}
	if kernel {
		if err := kernelClientReady(); err != nil {
			return dev, nil, fmt.Errorf("-kernel: %w", err)
		}
	}
	tmp, err := os.MkdirTemp("", "rpcrdma-bench-host-")
	if err != nil {
		return dev, nil, err
	}
	defer os.RemoveAll(tmp)
	bin, err := hostServerBinary(ctx, tmp)
	if err != nil {
		return dev, nil, err
	}
	fmt.Fprintf(stderr, "on %s; rdma-nfsd: %s\n", dev, bin)
	r := &runner{spec: spec, label: fmt.Sprintf("rdmacore (%s, this host)", dev.Name),
		provider: &rdmacore.Provider{LocalAddr: dev.Addr},
		servers:  map[string]server{ServerGo: localNfsd(bin, "rdmacore", dev.Addr, tmp, spec)},
	}
	if kernel {
		r.kernel = &kernelClient{mnt: filepath.Join(tmp, "mnt"), server: dev.Addr}
		restore, err := saveInlineSysctls()
		if err != nil {
			return dev, nil, fmt.Errorf("-kernel: %w", err)
		}
		defer restore()
	}
	fmt.Fprintf(stderr, "%d cells × %d rounds of %v each\n", len(spec.AllCells()), spec.Rounds, spec.Duration)
	results, err := runHere(ctx, r, prog)
	return dev, results, err
}

// hostProvider is how a -host report names where it ran.
func hostProvider(d HostDevice) string {
	return "rdmacore on this host's " + d.String() + "; client and server on this host, through the device's loopback"
}

// kernelClientReady checks what the kernel client's cells need: root (to
// mount and to set the inline sysctls), the rpcrdma module (loaded with
// modprobe if need be) and mount.nfs.
func kernelClientReady() error {
	if os.Geteuid() != 0 {
		return errors.New("the kernel client's mounts need root")
	}
	if _, err := os.Stat("/sys/module/rpcrdma"); err != nil {
		if out, err := exec.Command("modprobe", "rpcrdma").CombinedOutput(); err != nil {
			return fmt.Errorf("the rpcrdma module is not loaded and modprobe rpcrdma failed: %w: %s", err, strings.TrimSpace(string(out)))
		}
	}
	for _, p := range []string{"/sbin/mount.nfs", "/usr/sbin/mount.nfs"} {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	if _, err := exec.LookPath("mount.nfs"); err != nil {
		return errors.New("mount.nfs not found (install nfs-common or nfs-utils)")
	}
	return nil
}

// saveInlineSysctls reads the kernel client's inline settings, which the
// kernel cells change before each mount, and returns what restores them.
func saveInlineSysctls() (restore func(), err error) {
	names := []string{sunrpc + "rdma_max_inline_read", sunrpc + "rdma_max_inline_write"}
	old := make([]uint64, len(names))
	for i, n := range names {
		if old[i], err = readSysctl(n); err != nil {
			return nil, err
		}
	}
	return func() {
		for i, n := range names {
			_ = writeSysctl(n, int(old[i]))
		}
	}, nil
}

// hostServerBinary finds the rdma-nfsd to run: the one next to this
// program, else one built from the go-rpcrdma checkout this runs in (into
// tmp), else the one in $PATH.
func hostServerBinary(ctx context.Context, tmp string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "rdma-nfsd")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(tmp, "rdma-nfsd")
		if err := goBuild(ctx, root, p, "./cmd/rdma-nfsd"); err != nil {
			return "", err
		}
		return p, nil
	}
	if p, err := exec.LookPath("rdma-nfsd"); err == nil {
		return p, nil
	}
	return "", errors.New("rdma-nfsd not found: put it next to rpcrdma-bench or in $PATH, or run from the go-rpcrdma checkout")
}
