package server

import (
	"math"
	"net"

	"github.com/go-rpcrdma/rpcrdma/nfs/internal/settings"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
)

// Ranges of Config's fields.
const (
	// MaxConcurrentCalls is the largest Config.ConcurrentCalls.
	MaxConcurrentCalls = 1024
	// MaxDRCSize is the largest Config.DRCSize: a million replies of a
	// few hundred bytes each.
	MaxDRCSize = 1 << 20
	// maxAnonID is the largest AnonUID and AnonGID: (uid_t)-1 means "no
	// change" to setresuid(2) and setresgid(2), never an identity.
	maxAnonID = math.MaxUint32 - 1
)

// check reports the first field of c (Handler set) out of its range, as a
// *transport.ConfigError (errors.Is(err, transport.ErrConfig)).
func (c *Config) check() error {
	if err := settings.Transport("Config.Transport", &c.Transport); err != nil {
		return err
	}
	if c.Rpcbind.Timeout < 0 {
		return settings.Error("Config.Rpcbind.Timeout", c.Rpcbind.Timeout, "[0, +inf) (0: 2s)")
	}
	if err := settings.Int("Config.DRCSize", int64(c.DRCSize), 0, MaxDRCSize, "DefaultDRCSize, 4096"); err != nil {
		return err
	}
	if c.DRCMaxAge < 0 {
		return settings.Error("Config.DRCMaxAge", c.DRCMaxAge, "[0, +inf) (0: DefaultDRCMaxAge, %v)", DefaultDRCMaxAge)
	}
	if err := settings.Int("Config.ConcurrentCalls", int64(c.ConcurrentCalls), 0, MaxConcurrentCalls, "DefaultConcurrentCalls, 16"); err != nil {
		return err
	}
	switch c.Squash {
	case RootSquash, NoRootSquash, AllSquash:
	default:
		return settings.Error("Config.Squash", c.Squash, "{RootSquash, NoRootSquash, AllSquash}")
	}
	if err := settings.Int("Config.AnonUID", int64(c.AnonUID), 0, maxAnonID, "65534"); err != nil {
		return err
	}
	if err := settings.Int("Config.AnonGID", int64(c.AnonGID), 0, maxAnonID, "65534"); err != nil {
		return err
	}
	for _, h := range c.ListenHosts {
		if net.ParseIP(h) == nil {
			return settings.Error("Config.ListenHosts", h, "IP addresses (IPv6 without brackets)")
		}
	}
	for _, e := range c.Exports {
		if len(e.Path) == 0 || len(e.Path) > nfs3.MntPathLen {
			return settings.Error("Config.Exports", len(e.Path), "[1, %d] bytes a path (MNTPATHLEN, RFC 1813 §5.1.1)", nfs3.MntPathLen)
		}
	}
	return nil
}
