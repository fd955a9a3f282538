package client

import (
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/settings"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Ranges of Config's fields.
const (
	// MinIOSize is the smallest Config.RSize and WSize other than 0.
	MinIOSize = 4096
	// MaxInFlightMax is the largest Config.MaxInFlight: a File's
	// read-ahead holds up to that many READs of rsize bytes.
	MaxInFlightMax = 1024
	// maxPort is the largest MountOptions.RDMAPort.
	maxPort = 65535
)

// MaxIOSize returns the largest RSize and WSize for a transport MaxRPCSize
// of maxRPC (0: transport.DefaultMaxRPCSize): what a READ reply or a WRITE
// call of one message carries besides its headers, in whole 4 KiB pages.
func MaxIOSize(maxRPC int) int {
	if maxRPC <= 0 {
		maxRPC = transport.DefaultMaxRPCSize
	}
	return max(MinIOSize, (maxRPC-ioOverhead)&^4095)
}

// Check reports the first field of c out of its range (each field's
// comment states it), as a *transport.ConfigError naming it
// (errors.Is(err, transport.ErrConfig)); nil if every field is in range.
// Dial, New, NewCaller and Mount call it before anything else; a program
// can call it to refuse its flags. Transport.Provider is not checked
// (Dial requires it, New ignores it).
func (c *Config) Check() error {
	if c == nil {
		return nil
	}
	if err := settings.Transport("Config.Transport", &c.Transport); err != nil {
		return err
	}
	if c.Auth != nil {
		if err := c.Auth.check("Config.Auth"); err != nil {
			return err
		}
	}
	hi := int64(MaxIOSize(c.Transport.MaxRPCSize))
	for _, f := range []struct {
		name string
		v    int
	}{{"Config.RSize", c.RSize}, {"Config.WSize", c.WSize}} {
		if f.v != 0 {
			if err := settings.Int(f.name, int64(f.v), MinIOSize, hi, "DefaultIOSize, 1 MiB, or less by MaxRPCSize"); err != nil {
				return err
			}
		}
	}
	return settings.Int("Config.MaxInFlight", int64(c.MaxInFlight), 0, MaxInFlightMax, "16")
}

// check reports a field of a (at field: "Config.Auth") out of its range:
// at most 16 groups and a machine name of at most 255 bytes (RFC 5531
// Appendix A).
func (a *Auth) check(field string) error {
	if a.None {
		return nil
	}
	if n := len(a.GIDs); n > xdr.MaxAuthSysGIDs {
		return settings.Error(field+".GIDs", n, "[0, %d] groups (AUTH_SYS, RFC 5531 Appendix A)", xdr.MaxAuthSysGIDs)
	}
	if n := len(a.MachineName); n > xdr.MaxMachineNameLen {
		return settings.Error(field+".MachineName", n, "[0, %d] bytes (AUTH_SYS, RFC 5531 Appendix A; \"\": the host name)", xdr.MaxMachineNameLen)
	}
	return nil
}

// check reports the first field of o out of its range: Client's (Check)
// and RDMAPort's.
func (o *MountOptions) check() error {
	if err := settings.Int("MountOptions.RDMAPort", int64(o.RDMAPort), 0, maxPort, "nfs.DefaultRDMAPort, 20049"); err != nil {
		return err
	}
	if err := o.Client.Check(); err != nil {
		return settings.Nest("MountOptions.Client", err)
	}
	return nil
}
