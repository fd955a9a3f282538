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
// at host. MNT gives the export's root handle for any path (the exports
// file that restricts paths and clients is a later addition) and AUTH_SYS
// as the flavor to use; EXPORT lists Config.Exports.
func (s *Server) mount(proc uint32, host string, r *xdr.Reader, b []byte) ([]byte, bool) {
	switch proc {
	case nfs.MountProcNull:
		return b, true
	case nfs.MountProcMnt:
		var a nfs3.MntArgs
		if a.Decode(r) != nil {
			return nil, false
		}
		s.mounts.add(host, a.Path)
		res := nfs3.MntRes{Status: nfs3.MntOK, FH: s.dh.rootHandle(), AuthFlavors: []uint32{uint32(xdr.FlavorSys)}}
		s.log.Info("nfs: MOUNT", "client", host, "path", a.Path, "outcome", res.Status.String())
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
		dirs := s.cfg.Exports
		if dirs == nil {
			dirs = []string{"/"}
		}
		res := nfs3.ExportRes{Exports: make([]nfs3.ExportNode, len(dirs))}
		for i, d := range dirs {
			res.Exports[i].Dir = d
		}
		return res.Append(b), true
	}
	return nil, false
}

// rootHandle is the handle of the export's root.
func (h *DirHandler) rootHandle() []byte { return encodeHandle(h.export, h.root, 0) }
