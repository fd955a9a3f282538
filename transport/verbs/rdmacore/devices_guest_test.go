//go:build e2eguest

package rdmacore_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// TestDevices: in the VM, Devices lists rxe0 and rxe1, each with one
// active Ethernet port whose path MTU rxe derives from the veth pair's
// MTU (1500: 1024), the address RDMA-CM binds to it and its RoCE v2 GID
// of that address on its veth.
func TestDevices(t *testing.T) {
	devs, err := rdmacore.Devices()
	require.NoError(t, err)
	byName := map[string]rdmacore.DeviceInfo{}
	for _, d := range devs {
		byName[d.Name] = d
	}
	for name, want := range map[string]struct{ addr, netdev string }{
		"rxe0": {serverIP, "veth0"},
		"rxe1": {clientIP, "veth1"},
	} {
		d, ok := byName[name]
		require.True(t, ok, "Devices lists %+v: no %s", devs, name)
		require.NoError(t, d.Err, name)
		require.Len(t, d.Ports, 1, name)
		p := d.Ports[0]
		t.Logf("%s: %+v", name, p)
		require.Equal(t, 1, p.Num)
		require.True(t, p.Active(), "%s port 1 is %s", name, p.State)
		require.Equal(t, "Ethernet", p.LinkLayer)
		require.Equal(t, 1024, p.ActiveMTU, "rxe on a 1500-byte veth")
		require.Equal(t, 4096, p.MaxMTU)
		ip := netip.MustParseAddr(want.addr)
		require.Contains(t, p.Addrs, ip, name)
		require.NotContains(t, p.Addrs, netip.MustParseAddr(map[string]string{serverIP: clientIP, clientIP: serverIP}[want.addr]), name)
		mapped := netip.AddrFrom16(ip.As16())
		require.True(t, slices.ContainsFunc(p.GIDs, func(g rdmacore.GID) bool {
			return g.GID == mapped && g.Type == "RoCE v2" && g.Netdev == want.netdev
		}), "%s has no RoCE v2 GID of %s on %s: %+v", name, ip, want.netdev, p.GIDs)
	}
}
