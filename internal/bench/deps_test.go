package bench_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/go-rpcrdma/rpcrdma"

// TestDeps: no program (cmd/...) links the e2e tests' packages (e2e/...),
// and gonum reaches the module through package internal/bench/chart only:
// chart is the one package that imports it, and every package linking it
// links chart. The dependencies are go list's, tests left out.
func TestDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH:", err)
	}
	out, err := exec.Command(goTool, "list", "-f", "{{.ImportPath}}|{{.Name}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", module+"/...").Output()
	if err != nil {
		msg := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("go list %s/...: %s", module, msg)
	}
	const chart = module + "/internal/bench/chart"
	programs, gonum := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 {
			t.Fatalf("go list printed %q", line)
		}
		pkg, name, imports, deps := f[0], f[1], strings.Fields(f[2]), strings.Fields(f[3])
		if name == "main" && strings.HasPrefix(pkg, module+"/cmd/") {
			programs++
			for _, d := range deps {
				if strings.HasPrefix(d, module+"/e2e/") {
					t.Errorf("program %s links %s", pkg, d)
				}
			}
		}
		for _, d := range imports {
			if strings.HasPrefix(d, "gonum.org/") && pkg != chart {
				t.Errorf("%s imports %s: only %s may", pkg, d, chart)
			}
		}
		linksGonum, linksChart := false, false
		for _, d := range deps {
			linksGonum = linksGonum || strings.HasPrefix(d, "gonum.org/")
			linksChart = linksChart || d == chart
		}
		if linksGonum {
			gonum++
			if pkg != chart && !linksChart {
				t.Errorf("%s links gonum but not through %s", pkg, chart)
			}
		}
	}
	if programs < 5 || gonum == 0 {
		t.Errorf("%d programs, %d packages linking gonum: go list's output is not what the test reads", programs, gonum)
	}
}
