package verbstest_test

import (
	"fmt"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/verbstest"
)

// A provider's test runs the suite with an environment per subtest; the
// rdma-core provider's does the same in the VM with the rxe address.
func ExampleRun() {
	newEnv := func(*testing.T) verbstest.Env {
		return verbstest.Env{Client: &soft.Provider{}, Server: &soft.Provider{}, ListenAddr: "127.0.0.1:0"}
	}
	// In a test: verbstest.Run(t, newEnv)
	env := newEnv(nil)
	fmt.Println(env.Client.Name(), env.Server.Name(), env.ListenAddr)
	// Output: soft soft 127.0.0.1:0
}
