//go:build linux && cgo && !e2eguest

package rdmacore_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// rdmaDevices lists the host's RDMA devices.
func rdmaDevices(t *testing.T) []os.DirEntry {
	t.Helper()
	ents, err := os.ReadDir("/sys/class/infiniband")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return ents
}

// TestHostWithoutDevice: on a host without RDMA devices (the build hosts;
// the tests that use devices run in the VM), Listen and Dial fail with a
// clear error that matches verbs.ErrNotSupported. On a host with devices,
// listening on an address that none of them has fails.
func TestHostWithoutDevice(t *testing.T) {
	p := &rdmacore.Provider{}
	if devs := rdmaDevices(t); len(devs) > 0 {
		_, err := p.Listen("192.0.2.1:0") // TEST-NET-1: on no interface
		require.Error(t, err, "listening on an address no RDMA device has")
		return
	}
	ln, err := p.Listen("127.0.0.1:0")
	require.Nil(t, ln)
	require.ErrorIs(t, err, verbs.ErrNotSupported)
	require.Contains(t, err.Error(), "no RDMA device")
	c, err := p.Dial(context.Background(), "10.0.0.1:20049", nil)
	require.Nil(t, c)
	require.ErrorIs(t, err, verbs.ErrNotSupported)
	require.Contains(t, err.Error(), "no RDMA device")
}

// TestDialChecksArguments: Dial refuses what it can refuse before it
// looks for a device.
func TestDialChecksArguments(t *testing.T) {
	ctx := context.Background()
	p := &rdmacore.Provider{}
	_, err := p.Dial(ctx, "10.0.0.1:20049", &verbs.ConnOptions{PrivateData: make([]byte, 57)})
	require.ErrorIs(t, err, verbs.ErrPrivateDataTooLong)
	_, err = p.Dial(ctx, "10.0.0.1:20049", &verbs.ConnOptions{Caps: verbs.QueueCaps{MaxSGE: 1000}})
	require.ErrorIs(t, err, verbs.ErrNotSupported)
	_, err = p.Dial(ctx, "10.0.0.1", nil)
	require.ErrorContains(t, err, "missing port")
	_, err = (&rdmacore.Provider{LocalAddr: "10.0.0.2:1"}).Dial(ctx, "10.0.0.1:20049", nil)
	require.ErrorContains(t, err, "LocalAddr")
	_, err = p.Listen("10.0.0.1:port")
	require.ErrorContains(t, err, "bad port")
}
