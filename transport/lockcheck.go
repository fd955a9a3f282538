//go:build !rpcrdmadebug

package transport

// Normal builds: the lock-order and goroutine-owner checks of
// lockcheck_debug.go (build tag rpcrdmadebug) compile to nothing.

// lockCheck notes which goroutine holds a mutex (debug builds).
type lockCheck struct{}

func (*lockCheck) acquired()          {}
func (*lockCheck) releasing()         {}
func (*lockCheck) mustHold(string)    {}
func (*lockCheck) mustNotHold(string) {}

// goroutineLock notes the goroutine that owns some state (debug builds),
// as x/net/http2's serveG.
type goroutineLock struct{}

func (*goroutineLock) set()         {}
func (*goroutineLock) check(string) {}
