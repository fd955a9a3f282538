package vm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// errNoAptLists reports that apt knows no packages: `apt-get update` has not
// been run on this machine.
var errNoAptLists = errors.New("vm: apt knows no linux-image-amd64: run `apt-get update` (or internal/vm/install-host-deps.sh) first")

// aptCache runs apt-cache with args and returns its standard output.
func aptCache(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "apt-cache", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("apt-cache %s: %w: %s", args[0], err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// aptKernelPackage returns the linux-image-<ABI>-amd64 package that
// KernelMetaPackage depends on.
func aptKernelPackage(ctx context.Context) (string, error) {
	out, err := aptCache(ctx, "depends", KernelMetaPackage)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", errNoAptLists, err)
	}
	deps := parseDepends(out)
	for _, d := range deps {
		if strings.HasPrefix(d, "linux-image-") && len(d) > 12 && d[12] >= '0' && d[12] <= '9' {
			return d, nil
		}
	}
	return "", errNoAptLists
}

// parseDepends reads `apt-cache depends` output and returns the first real
// (non-virtual) package of every Depends and Pre-Depends group, in order.
// An alternative group is printed as "|Depends: a" lines followed by a final
// "Depends: b"; virtual packages are printed as "<name>".
func parseDepends(out []byte) []string {
	var deps []string
	inGroup := false // a previous alternative of this group was taken
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		kind, name := f[0], f[1]
		alt := strings.HasPrefix(kind, "|")
		kind = strings.TrimPrefix(kind, "|")
		if kind != "Depends:" && kind != "PreDepends:" && kind != "Pre-Depends:" {
			continue
		}
		if !inGroup && !strings.HasPrefix(name, "<") {
			deps = append(deps, name)
			inGroup = alt
		}
		if !alt {
			inGroup = false
		}
	}
	return deps
}

// isLibraryPackage reports whether a dependency is followed when resolving
// the guest's packages: shared library packages only.
func isLibraryPackage(name string) bool {
	return strings.HasPrefix(name, "lib") || name == "zlib1g"
}

// aptResolve returns top plus the closure of their library dependencies,
// sorted. One apt-cache call per breadth-first level (each costs ~1 s).
func aptResolve(ctx context.Context, top []string) ([]string, error) {
	seen := map[string]bool{}
	level := append([]string(nil), top...)
	for _, p := range level {
		seen[p] = true
	}
	for len(level) > 0 {
		args := append([]string{"depends", "--no-recommends", "--no-suggests", "--no-conflicts",
			"--no-breaks", "--no-replaces", "--no-enhances"}, level...)
		out, err := aptCache(ctx, args...)
		if err != nil {
			return nil, err
		}
		level = level[:0:0]
		for _, d := range parseDepends(out) {
			if isLibraryPackage(d) && !seen[d] {
				seen[d] = true
				level = append(level, d)
			}
		}
	}
	all := make([]string, 0, len(seen))
	for p := range seen {
		all = append(all, p)
	}
	sort.Strings(all)
	return all, nil
}

// debInfo is one downloaded package, parsed from the file name that apt-get
// download gives it: NAME_VERSION_ARCH.deb, with ':' written as %3a.
type debInfo struct {
	Name, Version, Arch, File string
}

func parseDebName(file string) (debInfo, bool) {
	base := strings.TrimSuffix(filepath.Base(file), ".deb")
	f := strings.Split(base, "_")
	if len(f) != 3 || !strings.HasSuffix(file, ".deb") {
		return debInfo{}, false
	}
	return debInfo{Name: f[0], Version: strings.ReplaceAll(f[1], "%3a", ":"), Arch: f[2], File: file}, true
}

// cachedDebs returns the .deb of every package in names found in dir, and the
// names that have none. Two versions of one package is an error (a refresh
// clears the directory).
func cachedDebs(dir string, names []string) (have []debInfo, missing []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	byName := map[string]debInfo{}
	for _, e := range ents {
		d, ok := parseDebName(filepath.Join(dir, e.Name()))
		if !ok {
			continue
		}
		if prev, dup := byName[d.Name]; dup {
			return nil, nil, fmt.Errorf("vm: two versions of %s in %s (%s, %s): rebuild with refresh", d.Name, dir, prev.Version, d.Version)
		}
		byName[d.Name] = d
	}
	for _, n := range names {
		if d, ok := byName[n]; ok {
			have = append(have, d)
		} else {
			missing = append(missing, n)
		}
	}
	return have, missing, nil
}

// aptDownload downloads the packages into dir with apt-get download (no
// installation, no root needed).
func aptDownload(ctx context.Context, dir string, names []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{"-q"}
	if os.Geteuid() == 0 {
		// as root apt drops to the _apt user, who cannot write dir
		args = append(args, "-o", "APT::Sandbox::User=root")
	}
	args = append(append(args, "download"), names...)
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apt-get download (stale package lists? run `apt-get update`): %w: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}
