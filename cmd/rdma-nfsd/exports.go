package main

import (
	"fmt"
	"log/slog"

	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/nfs/server/exports"
)

// exportSet is what rdma-nfsd serves from an exports file: the exported
// directories, kept by path and fsid across reloads so that an export the
// file keeps keeps its handles (and their caches and open files). An
// export whose fsid= changes gets new handles, as with knfsd.
type exportSet struct {
	file      string
	indexOnly bool                  // -index-handles
	key       []byte                // -handle-key: one key for every export
	open      map[string]*exportDir // by openKey
}

// openKey is the key of an export's directory in exportSet.open.
func openKey(e exports.Export) string { return e.Path + "\x00" + e.FSID }

// exportDir is one exported directory.
type exportDir struct {
	dir *server.Dir
	h   *server.DirHandler
}

// load reads the exports file and returns the exports it lists, opening
// the directories not open yet. On an error nothing changes: the
// directories it opened are closed again.
func (x *exportSet) load() ([]server.Export, error) {
	tab, err := exports.ReadFile(x.file)
	if err != nil {
		return nil, err
	}
	if len(tab.Exports) == 0 {
		return nil, fmt.Errorf("%s: no export", x.file)
	}
	var exps []server.Export
	opened := map[string]*exportDir{}
	fail := func(err error) ([]server.Export, error) {
		for _, d := range opened {
			_ = d.dir.Close()
		}
		return nil, err
	}
	for _, e := range tab.Exports {
		key := openKey(e)
		d := x.open[key]
		if d == nil {
			dir, err := server.DirFS(e.Path)
			if err != nil {
				return fail(fmt.Errorf("%s:%d: %w", x.file, e.Line, err))
			}
			h, err := server.NewDirHandler(dir, server.DirHandlerOptions{IndexOnly: x.indexOnly, FSID: e.FSID, HandleKey: x.key})
			if err != nil {
				_ = dir.Close()
				return fail(fmt.Errorf("%s:%d: %w", x.file, e.Line, err))
			}
			d = &exportDir{dir: dir, h: h}
			opened[key] = d
		}
		exps = append(exps, server.Export{Path: e.Path, Handler: d.h, Rules: e.Rules})
	}
	if x.open == nil {
		x.open = map[string]*exportDir{}
	}
	for p, d := range opened {
		x.open[p] = d
	}
	return exps, nil
}

// keep closes the directories that exps, the exports now served, no
// longer list.
func (x *exportSet) keep(exps []server.Export) {
	listed := map[*server.DirHandler]bool{}
	for _, e := range exps {
		listed[e.Handler] = true
	}
	for p, d := range x.open {
		if !listed[d.h] {
			_ = d.dir.Close()
			delete(x.open, p)
		}
	}
}

// close closes every directory.
func (x *exportSet) close() {
	for p, d := range x.open {
		_ = d.dir.Close()
		delete(x.open, p)
	}
}

// reload re-reads the exports file on SIGHUP and applies it: the next
// call of every connection is judged by the new rules. A file with an
// error is refused, logged with its line, and the rules in force stay.
func reload(log *slog.Logger, srv *server.Server, xs *exportSet) {
	if xs == nil {
		log.Warn("rdma-nfsd: SIGHUP: nothing to reload (serving -dir, not -exports)")
		return
	}
	exps, err := xs.load()
	if err == nil {
		err = srv.SetExports(exps)
	}
	if err != nil {
		log.Error("rdma-nfsd: exports file refused; the exports in force stay", "file", xs.file, "err", err)
		return
	}
	xs.keep(exps)
	log.Info("rdma-nfsd: exports reloaded", "file", xs.file, "exports", exportPaths(exps))
}

// exportPaths lists the exports' paths.
func exportPaths(exps []server.Export) []string {
	p := make([]string, len(exps))
	for i, e := range exps {
		p[i] = e.Path
	}
	return p
}
