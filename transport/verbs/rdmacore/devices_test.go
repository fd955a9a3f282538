//go:build linux && cgo && !e2eguest

package rdmacore_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// TestDevicesHost: Devices lists the devices the kernel has
// (/sys/class/infiniband); on a host without any (the build hosts; the VM
// has rxe0 and rxe1: TestDevices) the list is empty and the error nil.
func TestDevicesHost(t *testing.T) {
	devs, err := rdmacore.Devices()
	require.NoError(t, err)
	var want, got []string
	for _, e := range rdmaDevices(t) {
		want = append(want, e.Name())
	}
	for _, d := range devs {
		got = append(got, d.Name)
		for _, p := range d.Ports {
			require.Contains(t, []string{"InfiniBand", "Ethernet"}, p.LinkLayer, "%s port %d", d.Name, p.Num)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, want, got)
}
