package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// newLogger returns the logger of -log-format format ("text" or "json")
// at level, writing to w. Whatever the format, every field has one type
// across all messages (logAttr): an address is a string "ip:port", a
// duration a string with its unit ("1.5s", as time.Duration prints it),
// a figure a number, and a set of figures (statsValue) an object whose
// keys are the figures' names in snake case.
func newLogger(format string, level slog.Level, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: logAttr}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// logAttr renders the values whose JSON form would otherwise depend on
// their Go type: durations as strings with their unit, network addresses
// (alone or in a list) as "ip:port" strings, and other values that print
// themselves (fmt.Stringer: a squash rule, a credential) as what they
// print. Errors stay errors (the handlers log their text).
func logAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindDuration:
		return slog.String(a.Key, a.Value.Duration().String())
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
		case []net.Addr:
			s := make([]string, len(v))
			for i, x := range v {
				s[i] = x.String()
			}
			return slog.Any(a.Key, s)
		case fmt.Stringer:
			return slog.String(a.Key, v.String())
		}
	}
	return a
}

// statsValue logs a struct of figures (transport.Stats,
// transport.ListenerStats, server.DRCStats) as a group: one field per
// exported field, named in snake case (snakeCase), a nested struct as a
// group of its own, durations as durations.
type statsValue struct{ v any }

func (s statsValue) LogValue() slog.Value { return structGroup(reflect.ValueOf(s.v)) }

func structGroup(v reflect.Value) slog.Value {
	t := v.Type()
	attrs := make([]slog.Attr, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key, fv := snakeCase(f.Name), v.Field(i)
		switch {
		case fv.Type() == reflect.TypeFor[time.Duration]():
			attrs = append(attrs, slog.Duration(key, time.Duration(fv.Int())))
		case fv.Kind() == reflect.Struct:
			attrs = append(attrs, slog.Attr{Key: key, Value: structGroup(fv)})
		case fv.CanInt():
			attrs = append(attrs, slog.Int64(key, fv.Int()))
		case fv.CanUint():
			attrs = append(attrs, slog.Uint64(key, fv.Uint()))
		case fv.Kind() == reflect.Bool:
			attrs = append(attrs, slog.Bool(key, fv.Bool()))
		case fv.Kind() == reflect.String:
			attrs = append(attrs, slog.String(key, fv.String()))
		default:
			attrs = append(attrs, slog.String(key, fmt.Sprint(fv.Interface())))
		}
	}
	return slog.GroupValue(attrs...)
}

// snakeCase turns a Go name into lower-case words joined by '_': a word
// starts at an upper-case letter after a lower-case one or a digit, and
// at the last upper-case letter of an acronym followed by a lower-case
// word; an acronym's plural stays one word ("RDMAReadBytes":
// "rdma_read_bytes", "BadXIDs": "bad_xids", "SendWithInvalidate":
// "send_with_invalidate").
func snakeCase(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) {
			prev := r[i-1]
			next := i+1 < len(r) && unicode.IsLower(r[i+1])
			plural := next && r[i+1] == 's' && (i+2 == len(r) || unicode.IsUpper(r[i+2]))
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && next && !plural {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// logStats logs what SIGUSR1 and the shutdown report: the listeners'
// counters and the duplicate request cache's, how many RDMA connections
// are open and how many have closed since the start, and each open
// connection's counters with its negotiated settings. Closed connections
// are counted, not listed.
func logStats(log *slog.Logger, srv *server.Server) {
	ls := srv.ListenerStats()
	open := srv.RDMAConns()
	log.Info("rdma-nfsd: stats", "listener", statsValue{ls}, "drc", statsValue{srv.DRCStats()},
		"connections_open", len(open), "connections_closed", ls.Accepted-uint64(ls.Conns))
	for _, c := range open {
		log.Info("rdma-nfsd: connection", "remote", c.RemoteAddr().String(), "stats", statsValue{c.Stats()})
	}
}
