package vm

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// moduleName turns a module file name (veth.ko, 9pnet_virtio.ko) or a name
// as written in a depends= field into the canonical form, with '-' as '_'.
func moduleName(s string) string {
	s = filepath.Base(s)
	if i := strings.Index(s, ".ko"); i >= 0 {
		s = s[:i]
	}
	return strings.ReplaceAll(s, "-", "_")
}

// moduleDepends returns the modules listed in the depends= field of the
// .modinfo section of the kernel module at path.
func moduleDepends(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("%s: no .modinfo section", path)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, err
	}
	var deps []string
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok && len(v) > 0 {
			for _, d := range strings.Split(string(v), ",") {
				deps = append(deps, moduleName(d))
			}
		}
	}
	return deps, nil
}

// moduleClosure returns, relative to modDir (lib/modules/<release>), the
// files of the named modules and of every module they depend on. Modules
// built into the kernel (modules.builtin) need no file.
func moduleClosure(modDir string, names []string) ([]string, error) {
	files := map[string]string{} // name -> path relative to modDir
	err := filepath.WalkDir(filepath.Join(modDir, "kernel"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".ko") {
			rel, _ := filepath.Rel(modDir, p)
			files[moduleName(p)] = rel
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	builtin := map[string]bool{}
	if f, err := os.Open(filepath.Join(modDir, "modules.builtin")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			builtin[moduleName(sc.Text())] = true
		}
		f.Close()
	}
	seen := map[string]bool{}
	var out []string
	var visit func(string) error
	visit = func(name string) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		rel, ok := files[name]
		if !ok {
			if builtin[name] {
				return nil
			}
			return fmt.Errorf("vm: kernel module %s not found in %s", name, modDir)
		}
		out = append(out, rel)
		deps, err := moduleDepends(filepath.Join(modDir, rel))
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range names {
		if err := visit(moduleName(n)); err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}
