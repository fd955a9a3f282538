package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	i := Info{Version: "v1.2.3", Revision: "0123456789abcdef0123", Time: "2026-11-26T19:00:00Z", Modified: true, GoVersion: "go1.26.0"}
	if got, want := i.String("rdma-nfsd"), "rdma-nfsd v1.2.3 0123456789ab+ 2026-11-26T19:00:00Z go1.26.0"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got, want := (Info{Version: "(devel)", GoVersion: "go1.26.0"}).String("x"), "x (devel) go1.26.0"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	r := Read()
	if r.GoVersion != runtime.Version() || r.Version == "" {
		t.Errorf("Read = %+v", r)
	}
	if s := r.String("p"); !strings.HasPrefix(s, "p ") || !strings.HasSuffix(s, runtime.Version()) {
		t.Errorf("String of Read = %q", s)
	}
}
