//go:build rpcrdmadebug

package transport

import (
	"bytes"
	"fmt"
	"runtime"
	"sync/atomic"
)

// Debug builds (go build -tags rpcrdmadebug) check the lock order and the
// goroutine ownership written at Conn, as x/net/http2 checks its serve
// goroutine (serveG.check): a violation panics with what was broken,
// rather than deadlocking or racing later. Normal builds compile the
// checks to nothing (lockcheck.go).

// lockCheck notes which goroutine holds a mutex: acquired after Lock,
// releasing before Unlock.
type lockCheck struct {
	g atomic.Uint64 // the holder's goroutine ID; 0 when not held
}

func (l *lockCheck) acquired() { l.g.Store(curGoroutineID()) }

// releasing panics if another goroutine is the recorded holder. A mutex
// locked without acquired (by a test reaching into a Conn) has none.
func (l *lockCheck) releasing() {
	if g := l.g.Load(); g != 0 && g != curGoroutineID() {
		panic("rpcrdma: lock check: a lock released by a goroutine that does not hold it")
	}
	l.g.Store(0)
}

// mustHold panics unless the calling goroutine holds the mutex.
func (l *lockCheck) mustHold(what string) {
	if l.g.Load() != curGoroutineID() {
		panic(fmt.Sprintf("rpcrdma: lock check: %s without its lock held", what))
	}
}

// mustNotHold panics if the calling goroutine holds the mutex: what would
// deadlock on it or break the lock order.
func (l *lockCheck) mustNotHold(what string) {
	if l.g.Load() == curGoroutineID() {
		panic(fmt.Sprintf("rpcrdma: lock check: %s with a lock held that must not be", what))
	}
}

// goroutineLock notes the goroutine that owns some state, as x/net/http2's
// serveG: set by the owner, checked by the functions only it may run.
type goroutineLock struct {
	g atomic.Uint64
}

// set makes the calling goroutine the owner.
func (g *goroutineLock) set() { g.g.Store(curGoroutineID()) }

// check panics unless the calling goroutine is the owner.
func (g *goroutineLock) check(what string) {
	if id := curGoroutineID(); g.g.Load() != id {
		panic(fmt.Sprintf("rpcrdma: goroutine check: %s run on goroutine %d, not its owner %d", what, id, g.g.Load()))
	}
}

var goroutineSpace = []byte("goroutine ")

// stackBufs recycles curGoroutineID's buffers: runtime.Stack's buffer
// escapes, and a check must not allocate (the no-allocation tests run in
// debug builds too). A channel, not a sync.Pool, which drops items at
// random under the race detector.
var stackBufs = make(chan *[64]byte, 256)

// curGoroutineID returns the calling goroutine's ID, from its stack trace
// header ("goroutine 18 [running]:"), as x/net/http2's gotrack does. Slow:
// debug builds only.
func curGoroutineID() uint64 {
	var buf *[64]byte
	select {
	case buf = <-stackBufs:
	default:
		buf = new([64]byte)
	}
	b := buf[:runtime.Stack(buf[:], false)]
	if !bytes.HasPrefix(b, goroutineSpace) {
		panic("rpcrdma: no goroutine ID in the stack trace")
	}
	var n uint64
	for _, d := range b[len(goroutineSpace):] {
		if d < '0' || d > '9' {
			break
		}
		n = n*10 + uint64(d-'0')
	}
	select {
	case stackBufs <- buf:
	default:
	}
	return n
}
