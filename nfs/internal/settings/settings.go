// Package settings checks the settings of nfs/server and nfs/client: each
// value out of its range is a *transport.ConfigError naming the field, as
// transport.Config.Check reports the transport's own
// (errors.Is(err, transport.ErrConfig)).
package settings

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
)

// Error returns the error of field (a Go selector from its type:
// "Config.ConcurrentCalls") holding v, out of the range want (a format
// of args).
func Error(field string, v any, want string, args ...any) error {
	return &transport.ConfigError{Pkg: "nfs", Field: field, Value: fmt.Sprint(v), Range: fmt.Sprintf(want, args...)}
}

// Int checks that v lies in [lo, hi]; def says what 0 means, if it is in
// range and means something else than itself ("" otherwise).
func Int(field string, v, lo, hi int64, def string) error {
	if v >= lo && v <= hi {
		return nil
	}
	if def != "" {
		return Error(field, v, "[%d, %d] (0: %s)", lo, hi, def)
	}
	return Error(field, v, "[%d, %d]", lo, hi)
}

// Transport checks c, the transport.Config at field of an nfs Config
// ("Config.Transport"), with transport.Config.Check and the bound the NFS
// server and client add: a MaxRPCSize of at least nfs.MinMaxRPCSize.
// The field an error names is c's field under field.
func Transport(field string, c *transport.Config) error {
	if err := c.Check(); err != nil {
		return Nest(field, err)
	}
	if c.MaxRPCSize != 0 && c.MaxRPCSize < nfs.MinMaxRPCSize {
		return Error(field+".MaxRPCSize", c.MaxRPCSize, "[%d, %d] (the NFS server and client need room for a READ or WRITE of 4 KiB; 0: %d)",
			nfs.MinMaxRPCSize, transport.MaxRPCSizeMax, transport.DefaultMaxRPCSize)
	}
	return nil
}

// Nest returns err, the error of a Config's Check, for that Config at
// field of another: a *transport.ConfigError's Field has its leading
// "Config" replaced by field ("Config.Credits" at "Config.Transport" is
// "Config.Transport.Credits"), and its Pkg is "nfs". Other errors are
// returned as they are.
func Nest(field string, err error) error {
	var ce *transport.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	e := *ce
	e.Pkg, e.Field = "nfs", field+strings.TrimPrefix(ce.Field, "Config")
	return &e
}
