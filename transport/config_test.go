package transport

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
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

// TestConfigCheck: every field of Config with a value out of its range
// makes Check, Dial and Listen fail with a *ConfigError naming the field
// (errors.Is ErrConfig), wrapped by Dial and Listen in a *net.OpError;
// nothing is clamped. The zero Config, the documented meanings of 0 and of
// negative values, and the ends of each range are accepted.
func TestConfigCheck(t *testing.T) {
	minus5 := int32(-5)
	for _, tc := range []struct {
		field string // after "Config."
		set   func(*Config)
	}{
		{"InlineSend", func(c *Config) { c.InlineSend = 100 }},
		{"InlineSend", func(c *Config) { c.InlineSend = -4096 }},
		{"InlineSend", func(c *Config) { c.InlineSend = 5000 }},
		{"InlineSend", func(c *Config) { c.InlineSend = 512 << 10 }},
		{"InlineRecv", func(c *Config) { c.InlineRecv = 1023 }},
		{"InlineRecv", func(c *Config) { c.InlineRecv = 256<<10 + 1024 }},
		{"Credits", func(c *Config) { c.Credits = 100000 }},
		{"Credits", func(c *Config) { c.Credits = MaxCredits + 1 }},
		{"Credits", func(c *Config) { c.Credits = uint32(minus5) }}, // what -credits -5 gives as a uint32
		{"GrantPolicy.Max", func(c *Config) { c.GrantPolicy.Max = MaxCredits + 1 }},
		{"Limits.MaxReadChunks", func(c *Config) { c.Limits = chunks.DefaultLimits; c.Limits.MaxReadChunks = -1 }},
		{"Limits.MaxWriteChunks", func(c *Config) { c.Limits = chunks.DefaultLimits; c.Limits.MaxWriteChunks = -1 }},
		{"Limits.MaxSegments", func(c *Config) { c.Limits = chunks.DefaultLimits; c.Limits.MaxSegments = -1 }},
		{"Limits.MaxChunkLength", func(c *Config) { c.Limits = chunks.DefaultLimits; c.Limits.MaxChunkLength = -1 }},
		{"Limits.MaxChunkLength", func(c *Config) { c.Limits = chunks.DefaultLimits; c.Limits.MaxChunkLength = 1 << 32 }},
		{"MaxRPCSize", func(c *Config) { c.MaxRPCSize = 100 }},
		{"MaxRPCSize", func(c *Config) { c.MaxRPCSize = -1 }},
		{"MaxRPCSize", func(c *Config) { c.MaxRPCSize = MaxRPCSizeMax + 1 }},
		{"Memory.Calls", func(c *Config) { c.Memory.Calls = 4096 }},
		{"Memory.Calls", func(c *Config) { c.Memory.Calls = -1 }},
		{"Memory.Replies", func(c *Config) { c.MaxRPCSize = 1 << 20; c.Memory.Replies = 1<<20 - 1 }},
		{"Memory.ListenerCalls", func(c *Config) { c.Memory.Calls = 16 << 20; c.Memory.ListenerCalls = 8 << 20 }},
		{"Memory.ListenerReplies", func(c *Config) { c.Memory.ListenerReplies = 2 * DefaultMaxRPCSize }},
		{"Memory.Registered", func(c *Config) { c.Memory.Registered = -1 }},
		{"Memory.ListenerRegistered", func(c *Config) { c.Memory.ListenerRegistered = 2 * DefaultMaxRPCSize }},
		{"Reconnect.Backoff", func(c *Config) { c.Reconnect.Backoff = -time.Second }},
		{"Reconnect.Backoff", func(c *Config) { c.Reconnect.Backoff = 10 * time.Second }},
		{"Reconnect.Backoff", func(c *Config) { c.Reconnect.Backoff, c.Reconnect.MaxBackoff = time.Second, time.Millisecond }},
		{"Reconnect.MaxBackoff", func(c *Config) { c.Reconnect.MaxBackoff = -1 }},
	} {
		cfg := Config{Provider: &soft.Provider{}}
		tc.set(&cfg)
		err := cfg.Check()
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) {
			t.Fatalf("%s: Check = %v, want a *ConfigError matching ErrConfig", tc.field, err)
		}
		if ce.Field != "Config."+tc.field || ce.Pkg != "rpcrdma" ||
			!strings.HasPrefix(err.Error(), "rpcrdma: Config."+tc.field+" ") || !strings.Contains(err.Error(), " out of range [") {
			t.Errorf("%s: Check = %q (%+v)", tc.field, err, *ce)
		}
		l, lerr := Listen("127.0.0.1:0", &cfg)
		if l != nil {
			_ = l.Close()
			t.Fatalf("%s: Listen accepted the Config", tc.field)
		}
		c, derr := Dial(context.Background(), "127.0.0.1:1", &cfg)
		if c != nil {
			_ = c.Close()
			t.Fatalf("%s: Dial accepted the Config", tc.field)
		}
		for op, err := range map[string]error{"listen": lerr, "dial": derr} {
			var oe *net.OpError
			if !errors.Is(err, ErrConfig) || !errors.As(err, &oe) || oe.Op != op || !strings.Contains(err.Error(), "Config."+tc.field) {
				t.Errorf("%s: %s = %v, want a *net.OpError wrapping ErrConfig and naming the field", tc.field, op, err)
			}
		}
	}

	for name, set := range map[string]func(*Config){
		"zero":                    func(*Config) {},
		"inline ends":             func(c *Config) { c.InlineSend, c.InlineRecv = 1024, 256<<10 },
		"credits ends":            func(c *Config) { c.Credits, c.GrantPolicy.Max = MaxCredits, 1 },
		"limits all zero but one": func(c *Config) { c.Limits.MaxSegments = 1 },
		"limits ends":             func(c *Config) { c.Limits = chunks.Limits{MaxChunkLength: 1<<32 - 1, MaxSegments: math.MaxInt32} },
		"max rpc low":             func(c *Config) { c.MaxRPCSize = MaxRPCSizeMin },
		"max rpc high":            func(c *Config) { c.MaxRPCSize = MaxRPCSizeMax },
		"memory one message": func(c *Config) {
			c.Memory = MemoryLimits{Calls: DefaultMaxRPCSize, Replies: DefaultMaxRPCSize, ListenerCalls: DefaultMaxRPCSize, ListenerReplies: DefaultMaxRPCSize, Registered: DefaultMaxRPCSize, ListenerRegistered: DefaultMaxRPCSize}
		},
		"memory listener default":  func(c *Config) { c.Memory.ListenerCalls = 8 * DefaultMaxRPCSize },
		"negative means none":      func(c *Config) { c.DirectPlacementMin, c.DirectPlacementCache, c.PostAsyncMin = -1, -1, -1 },
		"negative call timeout":    func(c *Config) { c.Reconnect.CallTimeout = -1 },
		"negative means default":   func(c *Config) { c.Reconnect.MaxAttempts, c.AcceptBacklog, c.HandshakeTimeout = -1, -1, -1 },
		"backlog beyond max":       func(c *Config) { c.AcceptBacklog = MaxAcceptBacklog + 1 }, // truncated, as listen(2)
		"no cap":                   func(c *Config) { c.MaxConns = -1 },
		"backoff equal to the max": func(c *Config) { c.Reconnect.Backoff, c.Reconnect.MaxBackoff = time.Hour, time.Hour },
	} {
		cfg := Config{Provider: &soft.Provider{}}
		set(&cfg)
		if err := cfg.Check(); err != nil {
			t.Errorf("%s: Check = %v", name, err)
		}
	}
	if err := (*Config)(nil).Check(); err != nil {
		t.Errorf("nil Config: Check = %v", err)
	}
}

// TestConfigMaxCredits: a requester and a responder at MaxCredits connect
// and carry a call (the send queue such credits ask for is capped to what
// the providers take).
func TestConfigMaxCredits(t *testing.T) {
	if testing.Short() {
		t.Skip("registers some 200 MiB")
	}
	p := newPair(t, &Config{Binding: testBinding{}, Credits: MaxCredits}, &Config{Binding: testBinding{}, Credits: MaxCredits})
	if got := p.call(t, 1, procEcho, xdr.AppendOpaque(nil, []byte("max"))); !bytes.Equal(got, xdr.AppendOpaque(nil, []byte("max"))) {
		t.Fatalf("echo: %x", got)
	}
}
