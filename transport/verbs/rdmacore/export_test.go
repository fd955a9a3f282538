//go:build linux && cgo

package rdmacore

import (
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// SetYieldThread replaces what a polling Wait calls to yield its OS
// thread, and returns the function that restores it. Call it before the
// connections it affects exist, and restore it once they are closed.
func SetYieldThread(f func()) (restore func()) {
	old := yieldThread
	yieldThread = f
	return func() { yieldThread = old }
}

// SpinLimit returns how long c's next Wait polls before it sleeps. Call it
// from the goroutine that Waits on c.
func SpinLimit(c verbs.Conn) time.Duration { return c.(*conn).spin.limit() }
