package soft_test

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/verbstest"
)

// TestConformance runs the verbs conformance suite against the software
// provider over TCP loopback.
func TestConformance(t *testing.T) {
	verbstest.Run(t, func(*testing.T) verbstest.Env {
		return verbstest.Env{Client: &soft.Provider{}, Server: &soft.Provider{}, ListenAddr: "127.0.0.1:0"}
	})
}
