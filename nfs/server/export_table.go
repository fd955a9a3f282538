package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/creds"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server/exports"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"golang.org/x/sys/unix"
)

// Export is a directory the Server exports (exports(5)).
type Export struct {
	// Path is what a client names in MNT and what EXPORT lists: an
	// absolute path. A client may mount Path or a directory below it
	// (MNT gives that directory's handle), as knfsd allows.
	Path string
	// Handler is the directory and its file handles.
	Handler *DirHandler
	// Rules admit clients, with their rights and identity rules
	// (exports.Rule: ro or rw, the squash rule and anonymous ids, secure
	// or insecure); a client no rule admits is refused at MNT
	// (MNT3ERR_ACCES) and every handle of the export is stale to it
	// (NFS3ERR_STALE, as knfsd answers a client it has no export entry
	// for). nil admits every client, read-write unless the Dir is
	// read-only, with Config's Squash, AnonUID and AnonGID, from any port.
	Rules []exports.Rule
}

// export is an Export as the Server uses it.
type export struct {
	Export
	open     bool           // Rules is nil
	policies []creds.Policy // per rule
	open0    creds.Policy   // the policy of an open export
}

// exportTable is the Server's exports; SetExports replaces it whole.
type exportTable struct {
	list []*export
	byID map[[8]byte]*export
	// nested are the exports that lie inside another with other rules.
	nested []exports.Nesting
}

// admission is what a client may do with an export.
type admission struct {
	ok       bool
	ro       bool
	insecure bool
	policy   creds.Policy
}

// admit returns what the client at addr may do with e: the rule that
// admits it (ranked as exports.Export.Rule ranks them) and its policy.
func (e *export) admit(addr netip.Addr) admission {
	if e.open {
		return admission{ok: true, insecure: true, policy: e.open0}
	}
	r, ok := (&exports.Export{Rules: e.Rules}).Rule(addr)
	if !ok {
		return admission{}
	}
	for j := range e.Rules {
		if &e.Rules[j] == r {
			return admission{ok: true, ro: r.ReadOnly, insecure: r.Insecure, policy: e.policies[j]}
		}
	}
	return admission{}
}

// newExportTable checks exps and indexes them; policy is the Server's
// (Config.Squash, AnonUID, AnonGID), for exports without rules.
func newExportTable(exps []Export, policy creds.Policy) (*exportTable, error) {
	if len(exps) == 0 {
		return nil, errors.New("nfs: no export")
	}
	t := &exportTable{byID: map[[8]byte]*export{}}
	paths := map[string]bool{}
	for i := range exps {
		x := exps[i]
		if x.Handler == nil {
			return nil, fmt.Errorf("nfs: export %d (%q): Handler is nil", i, x.Path)
		}
		if !strings.HasPrefix(x.Path, "/") {
			return nil, fmt.Errorf("nfs: export %q: Path is not absolute", x.Path)
		}
		x.Path = path.Clean(x.Path)
		if paths[x.Path] {
			return nil, fmt.Errorf("nfs: export %q: exported twice", x.Path)
		}
		paths[x.Path] = true
		if other := t.byID[x.Handler.export.id]; other != nil {
			if f := x.Handler.fsidOpt; f != "" {
				return nil, fmt.Errorf("nfs: exports %q and %q have the same fsid %s", other.Path, x.Path, f)
			}
			return nil, fmt.Errorf("nfs: exports %q and %q are the same directory", other.Path, x.Path)
		}
		e := &export{Export: x, open: x.Rules == nil, open0: policy}
		e.Rules = append([]exports.Rule(nil), x.Rules...)
		for _, r := range e.Rules {
			e.policies = append(e.policies, creds.Policy{Squash: r.Squash, AnonUID: r.AnonUID, AnonGID: r.AnonGID})
		}
		t.list = append(t.list, e)
		t.byID[x.Handler.export.id] = e
	}
	t.nested = t.nestings()
	return t, nil
}

// nestings returns the exports of t whose directory lies inside the
// directory of another, on the same file system (a client of the outer
// export reaches it: Dir crosses no mount point), and whose client rules
// differ from the outer export's.
func (t *exportTable) nestings() []exports.Nesting {
	type dirOf struct {
		real string
		dev  uint64
		desc exports.Export
	}
	dirs := make([]dirOf, len(t.list))
	for i, e := range t.list {
		d := &dirs[i]
		d.real = e.Handler.dir.real
		var st unix.Stat_t
		if unix.Fstat(e.Handler.dir.fd, &st) == nil {
			d.dev = st.Dev
		}
		d.desc = exports.Export{Path: e.Path, Rules: e.Rules}
		if e.open {
			d.desc.Rules = nil
		}
		if len(e.Rules) > 0 {
			d.desc.Line = e.Rules[0].Line
		}
	}
	var ns []exports.Nesting
	for i := range dirs {
		for j := range dirs {
			o, in := &dirs[i], &dirs[j]
			if o.real != in.real && o.dev == in.dev && exports.Holds(o.real, in.real) && !exports.SameRules(o.desc.Rules, in.desc.Rules) {
				ns = append(ns, exports.Nesting{Outer: &o.desc, Inner: &in.desc})
			}
		}
	}
	return ns
}

// warnNested logs a warning for each export that lies inside another
// whose client rules differ: the clients of the outer one reach it with
// the outer one's rules (exports.Nesting).
func (t *exportTable) warnNested(log *slog.Logger) {
	for _, n := range t.nested {
		log.Warn("nfs: "+n.String(), "outer", n.Outer.Path, "inner", n.Inner.Path)
	}
}

// byHandle returns the export a handle belongs to, or nil (a malformed
// handle, or one of no export of the table).
func (t *exportTable) byHandle(fh []byte) *export {
	id, _, _, err := decodeHandle(fh)
	if err != nil {
		return nil
	}
	return t.byID[id]
}

// find returns the export of the directory a client names in MNT and the
// path of that directory below the export's root ("." for the root): the
// export whose Path is dir or dir's nearest ancestor.
func (t *exportTable) find(dir string) (*export, string, bool) {
	dir = path.Clean("/" + dir)
	var best *export
	for _, e := range t.list {
		if exports.Holds(e.Path, dir) && (best == nil || len(e.Path) > len(best.Path)) {
			best = e
		}
	}
	if best == nil {
		return nil, "", false
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(dir, best.Path), "/")
	if rel == "" {
		rel = "."
	}
	return best, rel, true
}

// groups lists the clients e admits, as EXPORT gives them (ex_groups):
// none for an open export, which RFC 1813 §5.2.5 reads as everyone.
func (e *export) groups() []string {
	var g []string
	for i := range e.Rules {
		g = append(g, e.Rules[i].String())
	}
	return g
}

// addrOf returns the IP address of a network address, or the zero Addr.
func addrOf(a net.Addr) netip.AddrPort {
	if a == nil {
		return netip.AddrPort{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// mntStatusOf maps an error of looking up a mounted directory to a
// mountstat3 (RFC 1813 §5.1.5).
func mntStatusOf(err error) nfs3.MountStatus {
	switch statusOf(err) {
	case nfs3.ErrNoEnt, nfs3.ErrStale:
		return nfs3.MntErrNoEnt
	case nfs3.ErrNotDir:
		return nfs3.MntErrNotDir
	case nfs3.ErrAcces, nfs3.ErrPerm:
		return nfs3.MntErrAcces
	case nfs3.ErrNameTooLong:
		return nfs3.MntErrNameTooLong
	}
	return nfs3.MntErrIO
}

// staleReply is the reply of NFSv3 procedure proc failing with
// NFS3ERR_STALE and nothing else (no attributes, empty wcc_data): what a
// client gets for a handle of an export no rule admits it to.
func staleReply(proc, xid uint32) []byte { return statusReply(proc, xid, nfs3.ErrStale) }

// statusReply is the reply of NFSv3 procedure proc failing with st and
// nothing else (no attributes, empty wcc_data).
func statusReply(proc, xid uint32, st nfs3.Status) []byte {
	b := successReply(xid, nil)
	switch proc {
	case nfs.ProcGetattr:
		return (&nfs3.GetattrRes{Status: st}).Append(b)
	case nfs.ProcSetattr:
		return (&nfs3.SetattrRes{Status: st}).Append(b)
	case nfs.ProcLookup:
		return (&nfs3.LookupRes{Status: st}).Append(b)
	case nfs.ProcAccess:
		return (&nfs3.AccessRes{Status: st}).Append(b)
	case nfs.ProcReadlink:
		return (&nfs3.ReadlinkRes{Status: st}).Append(b)
	case nfs.ProcRead:
		return (&nfs3.ReadRes{Status: st}).Append(b)
	case nfs.ProcWrite:
		return (&nfs3.WriteRes{Status: st}).Append(b)
	case nfs.ProcCreate, nfs.ProcMkdir, nfs.ProcSymlink, nfs.ProcMknod:
		return (&nfs3.CreateRes{Status: st}).Append(b)
	case nfs.ProcRemove, nfs.ProcRmdir:
		return (&nfs3.RemoveRes{Status: st}).Append(b)
	case nfs.ProcRename:
		return (&nfs3.RenameRes{Status: st}).Append(b)
	case nfs.ProcLink:
		return (&nfs3.LinkRes{Status: st}).Append(b)
	case nfs.ProcReaddir:
		return (&nfs3.ReaddirRes{Status: st}).Append(b)
	case nfs.ProcReaddirplus:
		return (&nfs3.ReaddirplusRes{Status: st}).Append(b)
	case nfs.ProcFsstat:
		return (&nfs3.FsstatRes{Status: st}).Append(b)
	case nfs.ProcFsinfo:
		return (&nfs3.FsinfoRes{Status: st}).Append(b)
	case nfs.ProcPathconf:
		return (&nfs3.PathconfRes{Status: st}).Append(b)
	case nfs.ProcCommit:
		return (&nfs3.CommitRes{Status: st}).Append(b)
	}
	return acceptedReply(xid, xdr.AcceptProcUnavail, xdr.Mismatch{})
}
