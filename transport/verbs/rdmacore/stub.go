//go:build !(linux && cgo)

package rdmacore

import (
	"context"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// providerState is empty: this build has no rdma-core.
type providerState struct{}

// errUnsupportedBuild is what every operation of this build returns.
var errUnsupportedBuild = fmt.Errorf("rdmacore: this build has no rdma-core (the provider needs linux and cgo with libibverbs and librdmacm): %w", verbs.ErrNotSupported)

// err returns why the provider cannot work.
func (providerState) err() error { return errUnsupportedBuild }

// Dial fails: this build has no rdma-core.
func (p *Provider) Dial(context.Context, string, *verbs.ConnOptions) (verbs.Conn, error) {
	return nil, p.state.err()
}

// Listen fails: this build has no rdma-core.
func (p *Provider) Listen(string) (verbs.Listener, error) {
	return nil, p.state.err()
}
