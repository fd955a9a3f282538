package bench

import (
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// TestHostSpec: -host measures rdma-nfsd with the Go client, and the
// kernel client with -kernel; the VM's own flags are refused with it, its
// own flags without it.
func TestHostSpec(t *testing.T) {
	s, f, err := parseBench([]string{"-host", "-quick"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !f.host || f.kernel || strings.Join(s.Servers, ",") != ServerGo || strings.Join(s.Clients, ",") != ClientGo {
		t.Errorf("-host: servers %v, clients %v", s.Servers, s.Clients)
	}
	for _, c := range s.AllCells() {
		if c.Server != ServerGo || c.Client != ClientGo {
			t.Errorf("-host runs cell %s", c.Label())
		}
	}
	s, f, err = parseBench([]string{"-host", "-kernel", "-device", "rxe0", "-addr", "10.0.0.1", "-workloads", "read"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.device != "rxe0" || f.addr != "10.0.0.1" || strings.Join(s.Clients, ",") != ClientGo+","+ClientKernel {
		t.Errorf("-host -kernel: %+v, clients %v", f, s.Clients)
	}
	kernelCells := 0
	for _, c := range s.AllCells() {
		if c.Client == ClientKernel {
			kernelCells++
		}
	}
	if kernelCells == 0 {
		t.Error("-host -kernel has no kernel client cell")
	}
	// Profiles are written here, where rdma-nfsd and the Go client run:
	// into the directories themselves, made absolute.
	t.Chdir(t.TempDir())
	s, _, err = parseBench([]string{"-host", "-server-profile", "sp", "-client-profile", "cp"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for flag, got := range map[string]string{"sp": s.ServerProfile, "cp": s.ClientProfile} {
		want, _ := filepath.Abs(flag)
		if got != want {
			t.Errorf("-host profile %s written to %q, want %q", flag, got, want)
		}
		if fi, err := os.Stat(want); err != nil || !fi.IsDir() {
			t.Errorf("-host profile directory %s: %v", want, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-device", "rxe0"}, "-device: only with -host"},
		{[]string{"-addr", "10.0.0.1"}, "-addr: only with -host"},
		{[]string{"-kernel"}, "-kernel: only with -host"},
		{[]string{"-host", "-mtu", "9000"}, "-mtu: not with -host"},
		{[]string{"-host", "-servers", "knfsd"}, "-servers: not with -host"},
		{[]string{"-host", "-clients", "kernel"}, "-clients: not with -host"},
		{[]string{"-host", "-provider", "soft"}, "-provider: not with -host"},
		{[]string{"-host", "-baseline"}, "-baseline: not with -host"},
		{[]string{"-host", "-console", "x"}, "-console: not with -host"},
		{[]string{"-host", "-compare", "HEAD"}, "-compare: not with -host"},
		{[]string{"-host", "-addr", "rxe0"}, `-addr "rxe0": not an IP address`},
		{[]string{"-host", "-kernel", "-addr", "fd00::1"}, "-kernel needs an IPv4 address"},
	} {
		_, _, err := parseBench(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.args, err, tc.want)
		}
	}
}

// TestPickHostDevice: the port a -host run measures, and why none fits.
func TestPickHostDevice(t *testing.T) {
	a := netip.MustParseAddr
	devs := []rdmacore.DeviceInfo{
		{Name: "mlx5_0", Ports: []rdmacore.PortInfo{
			{Num: 1, State: "DOWN", LinkLayer: "InfiniBand", ActiveMTU: 4096, Addrs: []netip.Addr{a("192.168.7.1")}},
		}},
		{Name: "mlx5_1", Err: errors.New("rdmacore: mlx5_1: ibv_open_device: permission denied")},
		{Name: "mlx5_2", Ports: []rdmacore.PortInfo{
			{Num: 1, State: "ACTIVE", LinkLayer: "Ethernet", ActiveMTU: 1024},
			{Num: 2, State: "ACTIVE", LinkLayer: "Ethernet", ActiveMTU: 4096, Addrs: []netip.Addr{a("fd00::2"), a("10.1.0.2"), a("10.2.0.2")}},
		}},
	}
	v6only := []rdmacore.DeviceInfo{{Name: "rxe0", Ports: []rdmacore.PortInfo{
		{Num: 1, State: "ACTIVE", LinkLayer: "Ethernet", ActiveMTU: 1024, Addrs: []netip.Addr{a("fd00::1")}},
	}}}
	for _, tc := range []struct {
		devs       []rdmacore.DeviceInfo
		name, addr string
		ipv4       bool // -kernel
		want       HostDevice
		err        string
	}{
		{devs: devs, want: HostDevice{Name: "mlx5_2", Port: 2, LinkLayer: "Ethernet", PathMTU: 4096, Addr: "10.1.0.2"}},
		{devs: devs, name: "mlx5_2", addr: "10.2.0.2", want: HostDevice{Name: "mlx5_2", Port: 2, LinkLayer: "Ethernet", PathMTU: 4096, Addr: "10.2.0.2"}},
		{devs: devs, addr: "fd00::2", want: HostDevice{Name: "mlx5_2", Port: 2, LinkLayer: "Ethernet", PathMTU: 4096, Addr: "fd00::2"}},
		{devs: nil, err: "no RDMA device found: rdma-core lists none"},
		{devs: devs, name: "rxe0", err: `no RDMA device found: no device "rxe0" (this host has mlx5_0, mlx5_1, mlx5_2)`},
		{devs: devs, name: "mlx5_0", err: "no RDMA device found: no device has an active port with an IP address (mlx5_0 port 1 is DOWN)"},
		{devs: devs, name: "mlx5_1", err: "permission denied"},
		{devs: devs, addr: "192.168.7.1", err: "mlx5_2 port 1 has no IP address; mlx5_2 port 2 has fd00::2, 10.1.0.2, 10.2.0.2"},
		{devs: devs[2:], name: "mlx5_2", addr: "10.9.9.9", err: "no device has an active port with address 10.9.9.9"},
		// -kernel: an IPv4 address only.
		{devs: devs, ipv4: true, want: HostDevice{Name: "mlx5_2", Port: 2, LinkLayer: "Ethernet", PathMTU: 4096, Addr: "10.1.0.2"}},
		{devs: v6only, ipv4: true, err: "no device has an active port with an IPv4 address (rxe0 port 1 has no IPv4 address, which -kernel needs (fd00::1))"},
		{devs: v6only, want: HostDevice{Name: "rxe0", Port: 1, LinkLayer: "Ethernet", PathMTU: 1024, Addr: "fd00::1"}},
	} {
		got, err := pickHostDevice(tc.devs, tc.name, tc.addr, tc.ipv4)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, errNoDevice) {
				t.Errorf("%s %s: %v, %v; want an error with %q", tc.name, tc.addr, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %s: %+v, %v; want %+v", tc.name, tc.addr, got, err, tc.want)
		}
	}
	d := HostDevice{Name: "rxe0", Port: 1, LinkLayer: "Ethernet", PathMTU: 1024, Addr: "10.0.0.1"}
	if got, want := hostProvider(d), "rdmacore on this host's rxe0 port 1 at 10.0.0.1 (Ethernet, active path MTU 1024)"; !strings.HasPrefix(got, want) {
		t.Errorf("hostProvider: %q; want it to begin %q", got, want)
	}
}
