package guesttest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// Pattern returns n pseudo-random bytes that depend on seed: data moved to
// a wrong offset never compares equal.
func Pattern(n int, seed uint64) []byte {
	p := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// RequireData checks data moved by a test: on a mismatch it fails t with
// the lengths and the first differing offset instead of dumping both.
// msgAndArgs, if any, are a format and its arguments.
func RequireData(t testing.TB, want, got []byte, msgAndArgs ...any) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	msg := ""
	if len(msgAndArgs) > 0 {
		if f, ok := msgAndArgs[0].(string); ok {
			msg = ": " + fmt.Sprintf(f, msgAndArgs[1:]...)
		} else {
			msg = fmt.Sprintf(": %v", msgAndArgs)
		}
	}
	t.Fatalf("data differs: want %d bytes, got %d; first difference at offset %d%s", len(want), len(got), i, msg)
}
