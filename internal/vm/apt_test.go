package vm

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseDepends(t *testing.T) {
	out := []byte(`nfs-common
  PreDepends: init-system-helpers
  Depends: libc6
 |Depends: libssl3
  Depends: libssl3t64
  Depends: <libtirpc-virtual>
 |Depends: <virtual-a>
  Depends: real-b
  Breaks: libc6
  Recommends: python3
libibverbs1
  Depends: libnl-3-200
  Pre-Depends: zlib1g
`)
	want := []string{"init-system-helpers", "libc6", "libssl3", "real-b", "libnl-3-200", "zlib1g"}
	if got := parseDepends(out); !reflect.DeepEqual(got, want) {
		t.Errorf("parseDepends = %q, want %q", got, want)
	}
}

func TestIsLibraryPackage(t *testing.T) {
	for name, want := range map[string]bool{"libc6": true, "zlib1g": true, "adduser": false, "python3": false} {
		if got := isLibraryPackage(name); got != want {
			t.Errorf("isLibraryPackage(%q) = %v", name, got)
		}
	}
}

func TestParseDebName(t *testing.T) {
	d, ok := parseDebName("/c/debs/nfs-common_1%3a2.6.2-4+deb12u1_amd64.deb")
	if !ok || d.Name != "nfs-common" || d.Version != "1:2.6.2-4+deb12u1" || d.Arch != "amd64" {
		t.Errorf("parseDebName = %+v, %v", d, ok)
	}
	for _, bad := range []string{"lock", "x_1.deb", "a_b_c_d.deb", "a_1_amd64.txt"} {
		if _, ok := parseDebName(bad); ok {
			t.Errorf("parseDebName(%q) accepted", bad)
		}
	}
}

func TestCachedDebs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"bash_5.2.15-2+b7_amd64.deb", "kmod_30+20221128-1_amd64.deb", "partial.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, missing, err := cachedDebs(dir, []string{"bash", "kmod", "strace"})
	if err != nil {
		t.Fatal(err)
	}
	if len(have) != 2 || have[0].Name != "bash" || have[1].Name != "kmod" || !reflect.DeepEqual(missing, []string{"strace"}) {
		t.Errorf("have %+v, missing %q", have, missing)
	}
	if err := os.WriteFile(filepath.Join(dir, "bash_5.2.15-2+b8_amd64.deb"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cachedDebs(dir, []string{"bash"}); err == nil {
		t.Error("two versions of bash were accepted")
	}
	if _, missing, err := cachedDebs(filepath.Join(dir, "absent"), []string{"bash"}); err != nil || len(missing) != 1 {
		t.Errorf("absent directory: missing %q, %v", missing, err)
	}
}
