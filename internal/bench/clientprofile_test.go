package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestClientProfile: -client-profile puts the profiles in the VM's share
// (or the directory itself on soft), the runner writes one pprof profile
// of its own process per Go client cell and round, named after the cell,
// and copyProfiles sends the Go client's and rdma-nfsd's each to its own
// directory.
func TestClientProfile(t *testing.T) {
	dir := t.TempDir()
	for _, provider := range []string{"rdmacore", "soft"} {
		s, _, err := parseBench([]string{"-provider", provider, "-client-profile", dir}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		want := guestProfileDir
		if provider == "soft" {
			want = dir
		}
		if s.ClientProfile != want || s.ServerProfile != "" {
			t.Fatalf("%s: client profile %q, server profile %q", provider, s.ClientProfile, s.ServerProfile)
		}
	}

	srv := softRdmaNfsd(t)
	spec := Spec{Provider: "soft", Duration: 100 * time.Millisecond, Rounds: 2, Inlines: []int{4096},
		Sizes: []int{512}, InFlight: []int{1}, Workloads: []string{WorkNull, WorkRead},
		Servers: []string{ServerGo}, Clients: []string{ClientGo}, ClientProfile: dir}
	for _, res := range runSoft(t, srv, spec) {
		if res.Err != "" {
			t.Errorf("%s: %s", res.Label(), res.Err)
		}
	}
	var names []string
	for round := range 2 {
		for _, c := range spec.AllCells() {
			if c.Client == ClientGo {
				names = append(names, clientProfileName(c, round))
			}
		}
	}
	slices.Sort(names)
	want := []string{
		"go-client-rdma-nfsd-null-x1-inline4096-r1.pprof", "go-client-rdma-nfsd-null-x1-inline4096-r2.pprof",
		"go-client-rdma-nfsd-read-512-x1-inline4096-r1.pprof", "go-client-rdma-nfsd-read-512-x1-inline4096-r2.pprof",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("profile names %q, want %q", names, want)
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b { // pprof's gzipped protocol buffer
			t.Errorf("%s: %d bytes, not a pprof profile", name, len(b))
		}
	}

	// Out of the share: each to its own directory, or left.
	share, srvOut, cliOut := t.TempDir(), t.TempDir(), t.TempDir()
	for _, n := range []string{"rdma-nfsd-01-inline4096.pprof", want[0]} {
		if err := os.WriteFile(filepath.Join(share, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyProfiles(share, srvOut, cliOut); err != nil {
		t.Fatal(err)
	}
	if err := copyProfiles(share, "", ""); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(srvOut, "rdma-nfsd-01-inline4096.pprof"), filepath.Join(cliOut, want[0])} {
		if b, err := os.ReadFile(f); err != nil || string(b) != filepath.Base(f) {
			t.Errorf("%s: %q, %v", f, b, err)
		}
	}
	if ents, _ := os.ReadDir(srvOut); len(ents) != 1 {
		t.Errorf("rdma-nfsd's directory got %d files, want 1", len(ents))
	}
}
