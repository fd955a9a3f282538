// Package exports reads an exports file in the syntax of Linux's
// exports(5), for what rdma-nfsd supports of it: the directories the
// server exports and, for each, which clients may mount it and with what
// rights and identity rules.
//
// A line names a directory and its client rules:
//
//	# comment
//	/srv/data   10.0.0.0/24(rw,no_root_squash) 10.0.1.7(rw) *(ro)
//	"/srv/with space"  -rw,all_squash  192.0.2.0/255.255.255.0  2001:db8::/32(ro)
//
// A directory is absolute (quoted if it holds blanks, or with octal escapes
// such as \040), a line may continue after a backslash, and a "-options"
// word after the directory sets the defaults of the clients that follow on
// that line. A client is "*" (anyone), an IPv4 or IPv6 address, or a
// network (address/prefix length or address/netmask), written directly
// before its "(options)". Options: rw, ro (the default), root_squash (the
// default), no_root_squash, all_squash, no_all_squash, anonuid=N,
// anongid=N (65534 by default), secure (the default: a client's calls
// must come from a privileged port, which every call over RDMA counts
// as, and over TCP a port below 1024), insecure, fsid=N|root|UUID,
// and, accepted as what rdma-nfsd does anyway, sync, wdelay, no_wdelay,
// no_subtree_check and sec=sys.
//
// Everything else exports(5) knows (host names, wildcards and netgroups,
// which would need name service at every mount; async; subtree_check;
// crossmnt, nohide and the other options) is refused with its line
// number, as is a rule written "(options)" without a client, which
// exports(5) reads as "everyone" and is almost always a misplaced blank:
// write "*(options)".
//
// When several rules of an export admit a client, the rule naming its
// address decides, then the first network that contains it, then "*", as
// mountd ranks them whatever their order on the line.
//
// # Nested exports
//
// An export may lie inside another, as with knfsd, and a client that
// mounts the outer export reaches the inner directory through it (LOOKUP
// from the outer export's handles) with the outer export's rules, not the
// inner one's: the inner export's rules apply only to clients that mount
// it (or a directory below it). knfsd does the same for a directory of
// the same file system (its LOOKUP changes exports only at a mount point,
// fs/nfsd/vfs.c nfsd_mountpoint), and exports(5) ("Subdirectory Exports")
// warns that nested exports with other security options can be reached
// with the options of the other. knfsd's nohide and crossmnt are about
// mount points, which rdma-nfsd never crosses (server.Dir), and its
// subtree_check keeps an export's handles inside the export's own tree,
// which rdma-nfsd always does; neither applies the inner export's rules
// to the outer one's clients. An inner export on another file system,
// mounted inside the outer one, is not reached through it at all (knfsd
// without nohide shows the directory under the mount instead). So to
// keep a directory from the clients of an export, do not nest it in that
// export: move it out, or export the outer directory only to clients that
// may see everything below it. Nestings finds the nested exports whose
// rules differ; the server logs a warning for each when it takes the
// exports.
package exports

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/nfs/internal/creds"
)

// Squash says which callers lose their identity (creds.Squash).
type Squash = creds.Squash

// Options are the rights and identity rules of one client rule.
type Options struct {
	// ReadOnly refuses every change (NFS3ERR_ROFS); rw clears it.
	ReadOnly bool
	// Squash is root_squash (the default), no_root_squash or all_squash.
	Squash Squash
	// AnonUID and AnonGID are the identity squashed callers get
	// (anonuid=, anongid=; 65534 by default).
	AnonUID, AnonGID uint32
	// Insecure admits calls from any source port; by default (secure),
	// as with knfsd, MOUNT and NFS calls over TCP only from a port below
	// 1024, while every call over RDMA counts as from a privileged port.
	Insecure bool
}

// defaults are the options of a client named without options.
var defaults = Options{ReadOnly: true, Squash: creds.RootSquash, AnonUID: creds.Nobody, AnonGID: creds.Nobody}

// Rule admits clients to an export with options.
type Rule struct {
	// Any admits every client ("*"); otherwise Net does (a host is a
	// network of one address).
	Any bool
	Net netip.Prefix
	Options
	// Line is where the rule was written.
	Line int
}

// String formats r as exports(5) would write its client.
func (r *Rule) String() string {
	switch {
	case r.Any:
		return "*"
	case r.Net.IsSingleIP():
		return r.Net.Addr().String()
	}
	return r.Net.String()
}

// Export is one exported directory and its rules.
type Export struct {
	// Path is the directory, absolute and clean.
	Path string
	// FSID is the fsid= option ("" if none was given; "root" for fsid=0
	// or fsid=root): a number or a UUID, canonical (ParseFSID). It names
	// the export in file handles instead of its directory's file system
	// and is the fsid of its files' attributes; no two exports of a file
	// share one.
	FSID string
	// Rules, in the order written.
	Rules []Rule
	// Line is where the export was written.
	Line int
}

// Rule returns the rule that admits a client at addr: the rule naming
// addr, else the first network containing it, else "*"; ok is false if
// no rule admits it.
func (e *Export) Rule(addr netip.Addr) (r *Rule, ok bool) {
	addr = addr.Unmap()
	var network, any *Rule
	for i := range e.Rules {
		x := &e.Rules[i]
		switch {
		case x.Any:
			if any == nil {
				any = x
			}
		case x.Net.IsSingleIP():
			if x.Net.Addr() == addr {
				return x, true
			}
		case x.Net.Contains(addr):
			if network == nil {
				network = x
			}
		}
	}
	if network != nil {
		return network, true
	}
	return any, any != nil
}

// Table is the content of an exports file.
type Table struct {
	Exports []Export
}

// Find returns the export of dir, an absolute path: the export whose path
// is dir, or, as knfsd allows a client to mount a subdirectory of an
// export, the export whose path is dir's nearest ancestor. ok is false if
// no export holds dir.
func (t *Table) Find(dir string) (e *Export, ok bool) {
	dir = path.Clean("/" + dir)
	for i := range t.Exports {
		x := &t.Exports[i]
		if Holds(x.Path, dir) && (e == nil || len(x.Path) > len(e.Path)) {
			e = x
		}
	}
	return e, e != nil
}

// Holds reports whether the directory dir is the exported path p or lies
// below it; both are absolute and clean.
func Holds(p, dir string) bool {
	return p == dir || strings.HasPrefix(dir, p) && (p == "/" || dir[len(p)] == '/')
}

// Error is a line of an exports file that was refused.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ReadFile reads and parses the exports file name.
func ReadFile(name string) (*Table, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("exports: %w", err)
	}
	return Parse(name, b)
}

// maxFile bounds an exports file: far more than any real one, and what
// the parser holds at once.
const maxFile = 1 << 20

// Parse parses the exports file text; name is used in errors. It refuses
// the first line it cannot take whole, with an *Error.
func Parse(name string, text []byte) (*Table, error) {
	if len(text) > maxFile {
		return nil, &Error{File: name, Line: 0, Msg: fmt.Sprintf("larger than %d bytes", maxFile)}
	}
	t := &Table{}
	byPath := map[string]int{}
	byFSID := map[string]*Export{}
	for ln := range logicalLines(text) {
		words, err := splitWords(ln.text)
		if err != nil {
			return nil, &Error{File: name, Line: ln.num, Msg: err.Error()}
		}
		if len(words) == 0 {
			continue
		}
		e, err := parseExport(words, ln.num)
		if err != nil {
			return nil, &Error{File: name, Line: ln.num, Msg: err.Error()}
		}
		if at, dup := byPath[e.Path]; dup {
			return nil, &Error{File: name, Line: ln.num, Msg: fmt.Sprintf("%s is exported on line %d already", e.Path, at)}
		}
		byPath[e.Path] = ln.num
		if e.FSID != "" {
			if other := byFSID[e.FSID]; other != nil {
				return nil, &Error{File: name, Line: ln.num,
					Msg: fmt.Sprintf("fsid %s: %s has it already (line %d); it names one export in file handles", e.FSID, other.Path, other.Line)}
			}
			byFSID[e.FSID] = e
		}
		t.Exports = append(t.Exports, *e)
	}
	return t, nil
}

// line is a logical line: physical lines joined at a final backslash,
// with the number of the first.
type line struct {
	text string
	num  int
}

// logicalLines yields the logical lines of text, comments removed (a
// "#" outside quotes to the end of its physical line).
func logicalLines(text []byte) func(yield func(line) bool) {
	return func(yield func(line) bool) {
		var cur strings.Builder
		start := 0
		for i, raw := range bytes.Split(text, []byte("\n")) {
			l := stripComment(strings.TrimRight(string(raw), "\r"))
			if cur.Len() == 0 {
				start = i + 1
			}
			if strings.HasSuffix(l, "\\") {
				cur.WriteString(l[:len(l)-1])
				cur.WriteByte(' ')
				continue
			}
			cur.WriteString(l)
			if !yield(line{text: cur.String(), num: start}) {
				return
			}
			cur.Reset()
		}
		if cur.Len() > 0 {
			yield(line{text: cur.String(), num: start})
		}
	}
}

// stripComment removes a "#" comment that is not inside quotes.
func stripComment(l string) string {
	quoted := false
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case '"':
			quoted = !quoted
		case '#':
			if !quoted {
				return l[:i]
			}
		}
	}
	return l
}

// splitWords splits a logical line at blanks outside quotes, removing the
// quotes and decoding octal escapes (\040).
func splitWords(l string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == '"':
			quoted, in = !quoted, true
		case (c == ' ' || c == '\t') && !quoted:
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case c == '\\' && i+3 < len(l) && isOctal(l[i+1:i+4]):
			n, _ := strconv.ParseUint(l[i+1:i+4], 8, 8)
			w.WriteByte(byte(n))
			i += 3
			in = true
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("a quote is not closed")
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

func isOctal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return s[0] <= '3' // at most \377
}

// parseExport parses the words of one export line.
func parseExport(words []string, num int) (*Export, error) {
	p := words[0]
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not an absolute path", p)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return nil, fmt.Errorf("the path holds a NUL byte")
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return nil, fmt.Errorf("%q holds \"..\"", p)
		}
	}
	e := &Export{Path: path.Clean(p), Line: num}
	def := defaults
	rest := words[1:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		if err := parseOptions(rest[0][1:], &def, e); err != nil {
			return nil, err
		}
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%s names no client (write *(options) to export it to everyone)", e.Path)
	}
	seen := map[string]bool{}
	for _, w := range rest {
		r, err := parseRule(w, def, e)
		if err != nil {
			return nil, err
		}
		r.Line = num
		k := r.String()
		if seen[k] {
			return nil, fmt.Errorf("client %s is named twice for %s", k, e.Path)
		}
		seen[k] = true
		e.Rules = append(e.Rules, *r)
	}
	return e, nil
}

// parseRule parses one client[(options)] word.
func parseRule(w string, def Options, e *Export) (*Rule, error) {
	client, opts := w, ""
	if i := strings.IndexByte(w, '('); i >= 0 {
		if !strings.HasSuffix(w, ")") {
			return nil, fmt.Errorf("%q: the options do not end with \")\"", w)
		}
		client, opts = w[:i], w[i+1:len(w)-1]
		if client == "" {
			return nil, fmt.Errorf("%q names no client: a blank before \"(\" makes exports(5) export to everyone; write *(%s) if that is meant", w, opts)
		}
	}
	r := &Rule{Options: def}
	switch {
	case client == "*":
		r.Any = true
	default:
		n, err := parseClient(client)
		if err != nil {
			return nil, err
		}
		r.Net = n
	}
	if opts != "" || strings.HasSuffix(w, "()") {
		if err := parseOptions(opts, &r.Options, e); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// parseClient parses an address, address/length or address/netmask.
func parseClient(s string) (netip.Prefix, error) {
	addr, mask, hasMask := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("client %q: not an IP address, network or \"*\" (host names, wildcards and netgroups are not supported: name hosts by address)", s)
	}
	a = a.Unmap()
	if !hasMask {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	bits, err := strconv.Atoi(mask)
	if err != nil {
		m, merr := netip.ParseAddr(mask)
		if merr != nil || !m.Is4() || !a.Is4() {
			return netip.Prefix{}, fmt.Errorf("client %q: %q is neither a prefix length nor an IPv4 netmask", s, mask)
		}
		b := m.As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		ones := 0
		for v&(1<<31) != 0 {
			ones++
			v <<= 1
		}
		if v != 0 {
			return netip.Prefix{}, fmt.Errorf("client %q: netmask %s is not contiguous", s, mask)
		}
		bits = ones
	}
	p, err := a.Prefix(bits)
	if err != nil || bits < 0 {
		return netip.Prefix{}, fmt.Errorf("client %q: prefix length %s out of range [0, %d]", s, mask, a.BitLen())
	}
	if p.Addr() != a {
		return netip.Prefix{}, fmt.Errorf("client %q: host bits set (the network is %s)", s, p)
	}
	return p, nil
}

// accepted are options rdma-nfsd takes as what it does anyway.
var accepted = map[string]bool{"sync": true, "wdelay": true, "no_wdelay": true, "no_subtree_check": true, "sec=sys": true}

// parseOptions applies a comma-separated option list to o; fsid sets
// e.FSID.
func parseOptions(list string, o *Options, e *Export) error {
	if list == "" {
		return nil
	}
	for _, opt := range strings.Split(list, ",") {
		name, val, hasVal := strings.Cut(opt, "=")
		switch {
		case opt == "rw":
			o.ReadOnly = false
		case opt == "ro":
			o.ReadOnly = true
		case opt == "root_squash":
			o.Squash = creds.RootSquash
		case opt == "no_root_squash":
			o.Squash = creds.NoRootSquash
		case opt == "all_squash":
			o.Squash = creds.AllSquash
		case opt == "no_all_squash":
			if o.Squash == creds.AllSquash {
				o.Squash = creds.RootSquash
			}
		case opt == "secure":
			o.Insecure = false
		case opt == "insecure":
			o.Insecure = true
		case hasVal && (name == "anonuid" || name == "anongid"):
			n, err := strconv.ParseUint(val, 10, 32)
			if err != nil || n == 1<<32-1 {
				return fmt.Errorf("%s: %q is not an id in [0, 4294967294]", name, val)
			}
			if name == "anonuid" {
				o.AnonUID = uint32(n)
			} else {
				o.AnonGID = uint32(n)
			}
		case hasVal && name == "fsid":
			id, err := ParseFSID(val)
			if err != nil {
				return err
			}
			if e.FSID != "" && e.FSID != id {
				return fmt.Errorf("fsid=%s: %s has fsid %s already", val, e.Path, e.FSID)
			}
			e.FSID = id
		case accepted[opt]:
		case opt == "":
			return fmt.Errorf("an empty option in %q", list)
		default:
			return fmt.Errorf("option %q is not supported", opt)
		}
	}
	return nil
}

// ParseFSID parses the value of fsid=: "root" or 0, a number (below
// 2^32), or a UUID (32 hex digits, dashes anywhere ignored), returned in
// the canonical form Export.FSID holds: "root", the decimal number, or
// the 32 hex digits in lower case.
func ParseFSID(v string) (string, error) {
	if v == "root" || v == "0" {
		return "root", nil
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return strconv.FormatUint(n, 10), nil
	}
	hex := strings.ToLower(strings.ReplaceAll(v, "-", ""))
	if len(hex) == 32 && strings.Trim(hex, "0123456789abcdef") == "" {
		return hex, nil
	}
	return "", fmt.Errorf("fsid=%s: neither a number, \"root\" nor a UUID", v)
}
