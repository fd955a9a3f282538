package server

import (
	"sync"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// maxMountEntries bounds the mount list DUMP reports: beyond it the
// oldest entries are forgotten, so that a client calling MNT without end
// does not grow the server.
const maxMountEntries = 1024

// mountList is the MOUNT protocol's list of mounted directories (RFC 1813
// §5.2.2, DUMP): advisory, as in every server, since clients need not
// call UMNT.
type mountList struct {
	mu      sync.Mutex
	entries []nfs3.MountEntry
}

func (l *mountList) add(host, dir string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if e.Hostname == host && e.Directory == dir {
			return
		}
	}
	if len(l.entries) >= maxMountEntries {
		l.entries = append(l.entries[:0], l.entries[1:]...)
	}
	l.entries = append(l.entries, nfs3.MountEntry{Hostname: host, Directory: dir})
}

// remove forgets host's mount of dir, or all of host's when all.
func (l *mountList) remove(host, dir string, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.entries[:0]
	for _, e := range l.entries {
		if e.Hostname != host || (!all && e.Directory != dir) {
			kept = append(kept, e)
		}
	}
	clear(l.entries[len(kept):])
	l.entries = kept
}

func (l *mountList) list() []nfs3.MountEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]nfs3.MountEntry(nil), l.entries...)
}

// mount executes a MOUNT version 3 call (RFC 1813 §5.2) for the client
// of ss. MNT gives the handle of the directory it names if an export
// holds it (the export's root or a directory below it, looked up as the
// server) and a rule of that export admits the client, from a privileged
// port unless the rule says insecure (session.privilegedPort: every call
// over RDMA, over TCP a port below 1024); AUTH_SYS is the flavor to use.
// Each MNT is logged, a refused one at Warn with its reason in
// rpc.mountd's words. EXPORT lists the exports with the clients their
// rules name.
func (s *Server) mount(proc uint32, ss *session, r *xdr.Reader, b []byte) ([]byte, bool) {
	host := ss.client
	switch proc {
	case nfs.MountProcNull:
		return b, true
	case nfs.MountProcMnt:
		var a nfs3.MntArgs
		if a.Decode(r) != nil {
			return nil, false
		}
		res, why := s.mnt(ss, a.Path)
		if res.Status == nfs3.MntOK {
			s.mounts.add(host, a.Path)
			s.log.Info("nfs: MOUNT", "network", ss.network, "remote", ss.addr.String(), "path", a.Path,
				"outcome", res.Status.String())
		} else {
			s.log.Warn("nfs: MOUNT refused", "network", ss.network, "remote", ss.addr.String(), "path", a.Path,
				"outcome", res.Status.String(), "reason", why)
		}
		return res.Append(b), true
	case nfs.MountProcDump:
		res := nfs3.DumpRes{Mounts: s.mounts.list()}
		return res.Append(b), true
	case nfs.MountProcUmnt:
		var a nfs3.UmntArgs
		if a.Decode(r) != nil {
			return nil, false
		}
		s.mounts.remove(host, a.Path, false)
		return b, true
	case nfs.MountProcUmntall:
		s.mounts.remove(host, "", true)
		return b, true
	case nfs.MountProcExport:
		t := s.exports.Load()
		res := nfs3.ExportRes{Exports: make([]nfs3.ExportNode, len(t.list))}
		for i, e := range t.list {
			res.Exports[i] = nfs3.ExportNode{Dir: e.Path, Groups: e.groups()}
		}
		return res.Append(b), true
	}
	return nil, false
}

// rootHandle is the handle of the export's root.
func (h *DirHandler) rootHandle() []byte { return encodeHandle(h.export, h.root, 0) }

// mnt answers MNT of dir for the client of ss and, if it refuses, says
// why as rpc.mountd logs it: "not exported" (no export holds dir),
// "unmatched host" (no rule of the export admits the client), "illegal
// port N" (the rule says secure, the port is not privileged), or what
// looking up a directory below the export's root met.
func (s *Server) mnt(ss *session, dir string) (nfs3.MntRes, string) {
	e, rel, ok := s.exports.Load().find(dir)
	if !ok {
		return nfs3.MntRes{Status: nfs3.MntErrNoEnt}, "not exported"
	}
	adm := e.admit(ss.addr.Addr())
	if !adm.ok {
		return nfs3.MntRes{Status: nfs3.MntErrAcces}, "unmatched host"
	}
	if !adm.insecure && !ss.privilegedPort() {
		return nfs3.MntRes{Status: nfs3.MntErrAcces}, ss.illegalPort()
	}
	fh := e.Handler.rootHandle()
	if rel != "." {
		o, err := e.Handler.objectAt(rel)
		if err != nil {
			return nfs3.MntRes{Status: mntStatusOf(err)}, "can't stat exported dir: " + err.Error()
		}
		defer o.close()
		if !o.isDir() {
			return nfs3.MntRes{Status: nfs3.MntErrNotDir}, "not a directory"
		}
		fh = o.fh
	}
	return nfs3.MntRes{Status: nfs3.MntOK, FH: fh, AuthFlavors: []uint32{uint32(xdr.FlavorSys)}}, ""
}
