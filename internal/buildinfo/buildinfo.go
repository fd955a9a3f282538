// Package buildinfo says which build of the module a program is: what
// every program's -version prints, and the version label of rdma-nfsd's
// metrics.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is a program's build.
type Info struct {
	// Version is the module version ("v0.3.0"), or "(devel)" for a build
	// from a checkout.
	Version string
	// Revision and Time are the VCS commit and its time, if the build
	// recorded them; Modified reports uncommitted changes.
	Revision, Time string
	Modified       bool
	// GoVersion is the toolchain that built the program.
	GoVersion string
}

// Read returns the running program's build.
func Read() Info {
	i := Info{Version: "(unknown)", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	i.Version = bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String formats i on one line: "rdma-nfsd (devel) 1a2b3c4d5e6f+
// 2026-11-26T19:00:00Z go1.26.0", the program name first.
func (i Info) String(program string) string {
	parts := []string{program, i.Version}
	if i.Revision != "" {
		r := i.Revision
		if len(r) > 12 {
			r = r[:12]
		}
		if i.Modified {
			r += "+"
		}
		parts = append(parts, r)
	}
	if i.Time != "" {
		parts = append(parts, i.Time)
	}
	return strings.Join(append(parts, i.GoVersion), " ")
}
