package vm

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// stageFile writes content at stage/rel.
func stageFile(t *testing.T, stage, rel string, content []byte, perm os.FileMode) {
	t.Helper()
	p := filepath.Join(stage, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, content, perm); err != nil {
		t.Fatal(err)
	}
}

func stageLink(t *testing.T, stage, rel, target string) {
	t.Helper()
	p := filepath.Join(stage, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func hostFileBytes(t *testing.T, p string) []byte {
	t.Helper()
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTreeAddFromStageFollowsLinks(t *testing.T) {
	stage := t.TempDir()
	stageFile(t, stage, "bin/kmod", []byte("kmod"), 0o755)
	stageLink(t, stage, "sbin/modprobe", "/bin/kmod")
	stageLink(t, stage, "usr/bin/rel", "../../sbin/modprobe")
	stageLink(t, stage, "loop1", "loop2")
	stageLink(t, stage, "loop2", "loop1")
	tr := newTree(stage)
	if err := tr.addFromStage("usr/bin/rel"); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"usr/bin/rel": "../../sbin/modprobe", "sbin/modprobe": "/bin/kmod"} {
		if e := tr.entries[p]; e == nil || e.link != want {
			t.Errorf("%s: %+v, want a link to %s", p, e, want)
		}
	}
	if e := tr.entries["bin/kmod"]; e == nil || e.mode != modeRegular|0o755 {
		t.Errorf("bin/kmod: %+v, want a regular 0755 file", e)
	}
	for _, d := range []string{"usr", "usr/bin", "sbin", "bin"} {
		if e := tr.entries[d]; e == nil || e.mode&0o170000 != modeDir {
			t.Errorf("parent %s missing", d)
		}
	}
	if err := tr.addFromStage("loop1"); err == nil {
		t.Error("a symlink loop was accepted")
	}
	if err := tr.addFromStage("usr/bin/absent"); err == nil {
		t.Error("a missing file was added")
	}
}

// TestTreeAddLibraries copies the host's /bin/true into a stage and checks
// that the missing C library is reported, then found once it is staged.
func TestTreeAddLibraries(t *testing.T) {
	stage := t.TempDir()
	stageFile(t, stage, "bin/true", hostFileBytes(t, hostTrue), 0o755)
	stageLink(t, stage, "lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
	stageFile(t, stage, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
		hostFileBytes(t, "/lib64/ld-linux-x86-64.so.2"), 0o755)
	tr := newTree(stage)
	if err := tr.addFromStage("bin/true"); err != nil {
		t.Fatal(err)
	}
	err := tr.addLibraries()
	if err == nil || !strings.Contains(err.Error(), "libc.so.6 (needed by /bin/true)") {
		t.Fatalf("addLibraries without libc: %v", err)
	}
	stageFile(t, stage, "lib/x86_64-linux-gnu/libc.so.6", hostFileBytes(t, "/lib/x86_64-linux-gnu/libc.so.6"), 0o755)
	tr = newTree(stage)
	if err := tr.addFromStage("bin/true"); err != nil {
		t.Fatal(err)
	}
	if err := tr.addLibraries(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libc.so.6"} {
		if !tr.has(p) {
			t.Errorf("%s not added", p)
		}
	}
}

func TestTreeWriteCpio(t *testing.T) {
	stage := t.TempDir()
	stageFile(t, stage, "etc/netconfig", []byte("tcp tpi_cots_ord\n"), 0o644)
	stageFile(t, stage, "etc/libibverbs.d/mlx5.driver", []byte("driver mlx5\n"), 0o644)
	stageFile(t, stage, "etc/libibverbs.d/rxe.driver", []byte("driver rxe\n"), 0o644)
	tr := newTree(stage)
	skip := func(rel string) bool { return path.Base(rel) == "mlx5.driver" }
	if err := tr.addStageDir("etc", skip); err != nil {
		t.Fatal(err)
	}
	tr.file("init", 0o755, []byte("#!/bin/bash\n"))
	tr.symlink("var/run", "/run")
	tr.put("var/lib/nfs/sm", &treeEntry{mode: modeDir | 0o700, uid: 101, gid: 65534})
	var buf bytes.Buffer
	if err := tr.writeCpio(&buf); err != nil {
		t.Fatal(err)
	}
	members, err := readCpio(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]cpioMember{}
	for _, m := range members {
		if d := path.Dir(m.name); d != "." {
			if _, ok := seen[d]; !ok {
				t.Errorf("%s comes before its directory %s", m.name, d)
			}
		}
		seen[m.name] = m
	}
	if m := seen["etc/netconfig"]; m.data != "tcp tpi_cots_ord\n" || m.mode != modeRegular|0o644 {
		t.Errorf("etc/netconfig = %+v", m)
	}
	if _, ok := seen["etc/libibverbs.d/mlx5.driver"]; ok {
		t.Error("a skipped file is in the archive")
	}
	if m := seen["var/run"]; m.data != "/run" || m.mode != modeSymlink|0o777 {
		t.Errorf("var/run = %+v", m)
	}
	if m := seen["var/lib/nfs/sm"]; m.uid != 101 || m.gid != 65534 {
		t.Errorf("var/lib/nfs/sm owner %d:%d, want 101:65534", m.uid, m.gid)
	}
	var again bytes.Buffer
	if err := tr.writeCpio(&again); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Errorf("writing the same tree twice gave different archives (%v)", err)
	}
}

func TestGuestScriptsEmbedded(t *testing.T) {
	s, err := guestScripts()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range s {
		names[f.Name] = true
		if !bytes.HasPrefix(f.Data, []byte("#!/bin/bash\n")) {
			t.Errorf("guest/%s does not start with #!/bin/bash", f.Name)
		}
	}
	for _, n := range []string{"init", "rxevm-net-setup", "rxevm-nfsd-start", "rxevm-nfs-mount", "rxevm-gid-index"} {
		if !names[n] {
			t.Errorf("guest/%s is not embedded", n)
		}
	}
}
