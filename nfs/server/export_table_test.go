package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/internal/nfstest"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/nfs/server/exports"
)

// TestExportsNested: an export whose directory lies inside another
// export's, with other client rules, is logged at Warn when the exports
// are set (server.New, SetExports), naming both exports and their lines;
// one with the same rules, or beside the other, is not. And it behaves as
// the warning says, as knfsd does: a client of the outer export reaches
// the inner directory through it, with the outer export's rules (here
// read-write, where the inner export admits only another host).
func TestExportsNested(t *testing.T) {
	base := t.TempDir()
	outer := filepath.Join(base, "srv")
	inner := filepath.Join(outer, "private")
	same := filepath.Join(outer, "pub")
	beside := filepath.Join(base, "srv2")
	for _, d := range []string{inner, same, beside} {
		require.NoError(t, os.MkdirAll(d, 0o777))
	}
	handlers := map[string]*server.DirHandler{}
	parse := func(text string) []server.Export {
		tab, err := exports.Parse("exports", []byte(text))
		require.NoError(t, err)
		var exps []server.Export
		for _, e := range tab.Exports {
			h := handlers[e.Path]
			if h == nil {
				d, err := server.DirFS(e.Path)
				require.NoError(t, err)
				t.Cleanup(func() { _ = d.Close() })
				h, err = server.NewDirHandler(d, server.DirHandlerOptions{})
				require.NoError(t, err)
				handlers[e.Path] = h
			}
			exps = append(exps, server.Export{Path: e.Path, Handler: h, Rules: e.Rules})
		}
		return exps
	}
	local := "127.0.0.1(rw,insecure,no_root_squash)"
	var logs logBuffer
	srv := nfstest.Serve(t, server.Config{
		Exports: parse(fmt.Sprintf("%s %s\n%s 10.9.9.9(rw)\n%s %s\n%s %s\n", outer, local, inner, same, local, beside, local)),
		Logger:  slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	warnings := func() []string {
		var w []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "lies inside") {
				w = append(w, l)
			}
		}
		return w
	}
	w := warnings()
	require.Len(t, w, 1, "%s", logs.String())
	require.Contains(t, w[0], "export "+inner+" (line 2) lies inside export "+outer+" (line 1) with other client rules")
	require.Contains(t, w[0], "outer="+outer)
	require.Contains(t, w[0], "inner="+inner)

	// Through the outer export, the inner directory takes a write.
	r := &exportsRig{srv: srv}
	exp, err := r.mount(t, outer)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), nfstest.Guard)
	defer cancel()
	f, err := exp.Create(ctx, "private/through-the-parent")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = os.Stat(filepath.Join(inner, "through-the-parent"))
	require.NoError(t, err)
	_, err = r.mount(t, inner)
	require.Error(t, err, "the inner export itself refuses this client")

	// A reload warns again for what is still nested, and not for an
	// inner export given the outer one's rules.
	require.NoError(t, srv.SetExports(parse(fmt.Sprintf("%s %s\n%s %s\n%s 10.9.9.9(ro)\n", outer, local, inner, local, same))))
	w = warnings()
	require.Len(t, w, 2, "%s", logs.String())
	require.Contains(t, w[1], "export "+same+" (line 3) lies inside export "+outer+" (line 1)")
}
