package transport

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/credits"
)

// Ranges of Config's fields (see each field for what 0 and negative values
// mean).
const (
	// MaxCredits is the largest Config.Credits and GrantPolicy.Max: the
	// Linux client's largest slot table (RPCRDMA_MAX_SLOT_TABLE) and
	// svcrdma's largest max_requests, both 16384. Each credit holds a
	// Receive and a Send buffer of the inline sizes and room on the send
	// queue (RFC 8166 §3.3.1: a responder grants no more credits than it
	// has Receives posted).
	MaxCredits = 16384
	// MaxRPCSizeMin and MaxRPCSizeMax bound a Config.MaxRPCSize other
	// than 0: the smallest inline threshold (RFC 8166 §3.3.3, RFC 8797
	// §4.2), below which an RPC message could not even be sent inline;
	// and 64 MiB, sixteen times the largest payload Linux's svcrdma
	// serves (RPCSVC_MAXPAYLOAD, 4 MiB), since one message of that size
	// may be staged for each call slot.
	MaxRPCSizeMin = cmpriv.MinSize
	MaxRPCSizeMax = 64 << 20
	// maxChunkLength is the largest chunk length the wire can carry: a
	// segment's length is a uint32 (RFC 8166 §4.2).
	maxChunkLength = math.MaxUint32
)

// ErrConfig is what every setting out of its range matches with
// errors.Is: the errors Dial and Listen return for a Config they refuse
// (a *ConfigError inside a *net.OpError), and those of the nfs packages
// for their own settings (nfs/server.New, nfs/client.Dial, Mount).
var ErrConfig = errors.New("rpcrdma: setting out of range")

// ConfigError is a setting out of its range: it names the field, the value
// given and the values allowed, and matches ErrConfig.
type ConfigError struct {
	// Pkg is the prefix of the message: "rpcrdma" for this package's
	// Config, "nfs" for the settings of nfs/server and nfs/client.
	Pkg string
	// Field is the setting as a Go selector from its type:
	// "Config.Credits", "Config.Reconnect.Backoff",
	// "Config.Transport.MaxRPCSize".
	Field string
	// Value is the value given, as fmt's %v prints it.
	Value string
	// Range says what is allowed: "[0, 16384] (0: the default)".
	Range string
}

// Error returns "Pkg: Field Value out of range Range".
func (e *ConfigError) Error() string {
	return e.Pkg + ": " + e.Field + " " + e.Value + " out of range " + e.Range
}

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// rangeError returns the ConfigError of Config's field.
func rangeError(field string, v any, want string, args ...any) error {
	return &ConfigError{Pkg: "rpcrdma", Field: "Config." + field, Value: fmt.Sprint(v), Range: fmt.Sprintf(want, args...)}
}

// Check reports the first field of c out of its range, in the order of
// Config's fields, as a *ConfigError (errors.Is(err, ErrConfig)); nil if
// every field is within its range (each field's comment states it). It
// does not need a Provider (Dial and Listen check that apart, with
// ErrNoProvider). Dial and Listen call it; a program can call it to
// refuse its flags before it does anything else.
func (c *Config) Check() error {
	if c == nil {
		return nil
	}
	for _, in := range []struct {
		name string
		v    int
	}{{"InlineSend", c.InlineSend}, {"InlineRecv", c.InlineRecv}} {
		if in.v != 0 && (in.v < cmpriv.MinSize || in.v > cmpriv.MaxSize || in.v%1024 != 0) {
			return rangeError(in.name, in.v, "[%d, %d], a multiple of 1024 (RFC 8797 §4.2; 0: %d)",
				cmpriv.MinSize, cmpriv.MaxSize, DefaultInline)
		}
	}
	if c.Credits > MaxCredits {
		return rangeError("Credits", c.Credits, "[0, %d] (0: %d for a requester, %d for a responder)",
			MaxCredits, credits.DefaultRequest, credits.DefaultMaxGrant)
	}
	if c.Limits != (chunks.Limits{}) {
		for _, l := range []struct {
			name  string
			v, hi int64
		}{
			{"MaxReadChunks", int64(c.Limits.MaxReadChunks), math.MaxInt32},
			{"MaxWriteChunks", int64(c.Limits.MaxWriteChunks), math.MaxInt32},
			{"MaxSegments", int64(c.Limits.MaxSegments), math.MaxInt32},
			{"MaxChunkLength", int64(c.Limits.MaxChunkLength), maxChunkLength},
		} {
			if l.v < 0 || l.v > l.hi {
				return rangeError("Limits."+l.name, l.v, "[0, %d] (all of Limits zero: chunks.DefaultLimits)", l.hi)
			}
		}
	}
	maxRPC := c.MaxRPCSize
	if maxRPC != 0 && (maxRPC < MaxRPCSizeMin || maxRPC > MaxRPCSizeMax) {
		return rangeError("MaxRPCSize", maxRPC, "[%d, %d] (0: %d)", MaxRPCSizeMin, MaxRPCSizeMax, DefaultMaxRPCSize)
	}
	if maxRPC == 0 {
		maxRPC = DefaultMaxRPCSize
	}
	if err := c.Reconnect.check(); err != nil {
		return err
	}
	if c.GrantPolicy.Max > MaxCredits {
		return rangeError("GrantPolicy.Max", c.GrantPolicy.Max, "[0, %d] (0: Credits)", MaxCredits)
	}
	return c.Memory.check(maxRPC)
}

// check checks m for a MaxRPCSize of maxRPC: each limit given is at least
// one message, and a listener's limit at least a connection's.
func (m MemoryLimits) check(maxRPC int) error {
	d := m.withDefaults(maxRPC)
	for _, l := range []struct {
		name, why string
		v, min    int
	}{
		{"Calls", "MaxRPCSize; 0: 8 × MaxRPCSize", m.Calls, maxRPC},
		{"Replies", "MaxRPCSize; 0: 8 × MaxRPCSize", m.Replies, maxRPC},
		{"ListenerCalls", "Calls; 0: 64 × MaxRPCSize", m.ListenerCalls, d.Calls},
		{"ListenerReplies", "Replies; 0: 64 × MaxRPCSize", m.ListenerReplies, d.Replies},
		{"Registered", "MaxRPCSize; 0: 16 × MaxRPCSize", m.Registered, maxRPC},
		{"ListenerRegistered", "Registered; 0: 64 × MaxRPCSize", m.ListenerRegistered, d.Registered},
	} {
		if l.v != 0 && l.v < l.min {
			return rangeError("Memory."+l.name, l.v, "[%d, +inf) (at least %s)", l.min, l.why)
		}
	}
	return nil
}

// Defaults of ReconnectPolicy.Backoff and MaxBackoff.
const (
	defaultBackoff    = 100 * time.Millisecond
	defaultMaxBackoff = 5 * time.Second
)

// check checks the backoffs: not negative, and the first no longer than
// the largest.
func (p ReconnectPolicy) check() error {
	maxBackoff := p.MaxBackoff
	if maxBackoff < 0 {
		return rangeError("Reconnect.MaxBackoff", p.MaxBackoff, "[0, +inf) (0: %v)", defaultMaxBackoff)
	}
	if maxBackoff == 0 {
		maxBackoff = defaultMaxBackoff
	}
	if p.Backoff < 0 || p.Backoff > maxBackoff {
		return rangeError("Reconnect.Backoff", p.Backoff, "[0, %v] (at most MaxBackoff; 0: %v)", maxBackoff, defaultBackoff)
	}
	return nil
}
