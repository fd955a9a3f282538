package nfs_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/go-rpcrdma/rpcrdma"

// TestDeps: the packages go along their roles (issue 28). A program of
// the client (package nfs/client, cmd/rdma-nfs) links no server code, and
// one of the server (package nfs/server, cmd/rdma-nfsd) no client code
// and no go-nfs (github.com/willscott: the transport's drop-in tests and
// the VM's gonfsd use it, never the server); package nfs, what both share,
// links neither. The dependencies are go list -deps's, tests left out.
func TestDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH:", err)
	}
	for _, tc := range []struct {
		pkg    string
		forbid []string // import paths, or prefixes of them ending in "/"
	}{
		{module + "/nfs", []string{module + "/nfs/client", module + "/nfs/server", "github.com/willscott/"}},
		{module + "/nfs/client", []string{module + "/nfs/server", "github.com/willscott/"}},
		{module + "/nfs/server", []string{module + "/nfs/client", "github.com/willscott/"}},
		{module + "/cmd/rdma-nfsd", []string{module + "/nfs/client", "github.com/willscott/"}},
		{module + "/cmd/rdma-nfs", []string{module + "/nfs/server", "github.com/willscott/"}},
	} {
		out, err := exec.Command(goTool, "list", "-deps", tc.pkg).Output()
		if err != nil {
			msg := err.Error()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				msg += ": " + string(ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %s", tc.pkg, msg)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 || deps[len(deps)-1] != tc.pkg {
			t.Fatalf("go list -deps %s: %q does not end with the package", tc.pkg, deps)
		}
		for _, dep := range deps {
			for _, f := range tc.forbid {
				if dep == f || strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s", tc.pkg, dep)
				}
			}
		}
	}
}
