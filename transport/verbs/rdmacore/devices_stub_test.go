//go:build !(linux && cgo)

package rdmacore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// TestDevicesStub: without linux and cgo, Devices says it cannot list.
func TestDevicesStub(t *testing.T) {
	devs, err := rdmacore.Devices()
	require.Nil(t, devs)
	require.ErrorIs(t, err, verbs.ErrNotSupported)
	require.ErrorContains(t, err, "cgo")
}
