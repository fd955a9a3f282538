package transport

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// softConfig returns a copy of cfg (nil: the zero Config) with the software
// provider when it names no provider: what the tests' helpers mean by "the
// defaults". Config.Provider has no default of its own.
func softConfig(cfg *Config) *Config {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Provider == nil {
		c.Provider = &soft.Provider{}
	}
	return &c
}

// TestNoProvider: Dial and Listen need a Config with a Provider; a nil
// Config or a nil Provider fails at once with ErrNoProvider wrapped in a
// *net.OpError naming the operation and the address.
func TestNoProvider(t *testing.T) {
	const addr = "127.0.0.1:0"
	for _, tc := range []struct {
		name string
		cfg  *Config
	}{
		{"nil config", nil},
		{"nil provider", &Config{Binding: testBinding{}, Credits: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, ErrNoProvider) {
					t.Fatalf("%s: err = %v, want ErrNoProvider", op, err)
				}
				var oe *net.OpError
				if !errors.As(err, &oe) {
					t.Fatalf("%s: err = %T (%v), want *net.OpError", op, err, err)
				}
				if oe.Op != op || oe.Net != "rdma" || oe.Addr == nil || oe.Addr.String() != addr {
					t.Fatalf("%s: OpError = {Op: %q, Net: %q, Addr: %v}", op, oe.Op, oe.Net, oe.Addr)
				}
			}
			l, err := Listen(addr, tc.cfg)
			if l != nil {
				_ = l.Close()
				t.Fatal("Listen returned a Listener")
			}
			check("listen", err)
			c, err := Dial(context.Background(), addr, tc.cfg)
			if c != nil {
				_ = c.Close()
				t.Fatal("Dial returned a Conn")
			}
			check("dial", err)
		})
	}
}
