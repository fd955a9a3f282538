package rdmacore_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// A Provider needs no set-up; LocalAddr picks the device Dial connects
// from. It is used through the verbs.Provider interface.
func ExampleProvider() {
	var p verbs.Provider = &rdmacore.Provider{LocalAddr: "10.0.0.2"}
	fmt.Println(p.Name())
	// Output: rdmacore
}
