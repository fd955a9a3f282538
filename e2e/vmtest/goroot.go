package vmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// runtimeGOROOT finds the Go installation that runs the tests: $GOROOT (go
// test sets it for the test binary), else the one of the go in PATH.
func runtimeGOROOT() string {
	if r := os.Getenv("GOROOT"); r != "" {
		return r
	}
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return filepath.Join("/usr", "local", "go")
}
