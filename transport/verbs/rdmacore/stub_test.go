//go:build !(linux && cgo)

package rdmacore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// TestStub: without linux and cgo the provider exists and says it cannot
// work.
func TestStub(t *testing.T) {
	p := &rdmacore.Provider{}
	require.Equal(t, "rdmacore", p.Name())
	ln, err := p.Listen("127.0.0.1:0")
	require.Nil(t, ln)
	require.ErrorIs(t, err, verbs.ErrNotSupported)
	require.ErrorContains(t, err, "cgo")
	c, err := p.Dial(context.Background(), "10.0.0.1:20049", nil)
	require.Nil(t, c)
	require.ErrorIs(t, err, verbs.ErrNotSupported)
}
