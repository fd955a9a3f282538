//go:build rpcrdmadebug

package transport

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"
)

// panicOf runs f and returns what it panicked with, as a string ("" if it
// returned).
func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = r.(string)
		}
	}()
	f()
	return ""
}

// TestLockCheck: in debug builds the lock order and ownership written at
// Conn are checked, each violation caught as a panic that says what was
// broken, and the order the Conn follows passes.
func TestLockCheck(t *testing.T) {
	c := newConn(Config{MaxRPCSize: 1 << 10}, cmpriv.Responder)

	// The written order: wmu, then mu.
	if msg := panicOf(func() {
		c.lockW()
		c.lock()
		c.failLocked(errors.New("x")) // needs mu: held
		c.unlock()
		c.unlockW()
	}); msg != "" {
		t.Fatalf("the lock order itself panicked: %s", msg)
	}

	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"wmu after mu", "BEFORE mu", func() {
			c.lock()
			defer c.unlock()
			c.lockW() // would break "lock wmu BEFORE mu"
		}},
		{"mu twice", "Conn.mu taken", func() {
			c.lock()
			defer c.unlock()
			c.lock() // would deadlock
		}},
		{"Locked without mu", "failLocked without its lock held", func() {
			c.failLocked(errors.New("x"))
		}},
		{"post under mu", "posting work requests", func() {
			c.lock()
			defer c.unlock()
			c.flush(nil, false)
		}},
		{"shutdown under mu", "shutting an endpoint down", func() {
			c.lock()
			defer c.unlock()
			c.shutdown(nil)
		}},
		{"unlock by another goroutine", "does not hold it", func() {
			c.lockW()
			defer c.unlockW()
			done := make(chan string)
			go func() { done <- panicOf(c.unlockW) }()
			panic(<-done)
		}},
	} {
		msg := panicOf(tc.f)
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: panic %q, want one containing %q", tc.name, msg, tc.want)
		}
	}

	// The goroutine owner check: a completion handled off the endpoint's
	// poll loop.
	ep := &endpoint{}
	ep.pollG.set()
	if msg := panicOf(func() { ep.pollG.check("here") }); msg != "" {
		t.Fatalf("the owner's check panicked: %s", msg)
	}
	got := make(chan string)
	go func() { got <- panicOf(func() { ep.pollG.check("handleCompletionLocked") }) }()
	if msg := <-got; !strings.Contains(msg, "handleCompletionLocked run on goroutine") {
		t.Errorf("check off the owner goroutine: panic %q", msg)
	}
	go func() {
		got <- panicOf(func() {
			c.lock()
			defer c.unlock()
			_ = c.handleCompletionLocked(ep, nil)
		})
	}()
	if msg := <-got; !strings.Contains(msg, "handleCompletionLocked run on goroutine") {
		t.Errorf("a completion off the poll loop: panic %q", msg)
	}
}
