package vm

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// treeEntry is one file of the initramfs being assembled.
type treeEntry struct {
	mode         uint32 // type and permission bits
	uid, gid     uint32
	src          string // regular file: copied from this host file...
	data         []byte // ...or holding these bytes
	link         string // symbolic link target
	major, minor uint32 // device numbers
}

// tree is the initramfs being assembled: paths (no leading slash) to entries.
// Nothing is written to disk until writeCpio streams it into the archive.
type tree struct {
	entries map[string]*treeEntry
	stage   string // root of the unpacked packages
}

func newTree(stage string) *tree {
	return &tree{entries: map[string]*treeEntry{}, stage: stage}
}

func (t *tree) has(p string) bool { _, ok := t.entries[p]; return ok }

// put adds e at p and any missing parent directories (0755, root).
func (t *tree) put(p string, e *treeEntry) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	for d := path.Dir(p); d != "." && d != "/" && !t.has(d); d = path.Dir(d) {
		t.entries[d] = &treeEntry{mode: modeDir | 0o755}
	}
	t.entries[p] = e
}

func (t *tree) dir(p string, perm uint32) { t.put(p, &treeEntry{mode: modeDir | perm}) }
func (t *tree) file(p string, perm uint32, b []byte) {
	t.put(p, &treeEntry{mode: modeRegular | perm, data: b})
}
func (t *tree) symlink(p, target string) {
	t.put(p, &treeEntry{mode: modeSymlink | 0o777, link: target})
}
func (t *tree) hostFile(p, src string, perm uint32) {
	t.put(p, &treeEntry{mode: modeRegular | perm, src: src})
}

// addFromStage copies rel from the unpacked packages. A symbolic link stays a
// link, and its target is copied too (followed inside the stage, so an
// absolute target like /bin/kmod means stage/bin/kmod).
func (t *tree) addFromStage(rel string) error {
	visited := map[string]bool{}
	for hops := 0; hops < 40; hops++ {
		rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
		if visited[rel] {
			return fmt.Errorf("vm: symbolic link loop at %s in the packages", rel)
		}
		visited[rel] = true
		if t.has(rel) {
			return nil
		}
		src := filepath.Join(t.stage, rel)
		fi, err := os.Lstat(src)
		if err != nil {
			return fmt.Errorf("vm: %s is in none of the downloaded packages: %w", rel, err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return err
			}
			t.symlink(rel, target)
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(rel), target)
			}
			rel = target
		case fi.Mode().IsRegular():
			t.hostFile(rel, src, uint32(fi.Mode().Perm()))
			return nil
		default:
			return fmt.Errorf("vm: %s in the packages is not a file", rel)
		}
	}
	return fmt.Errorf("vm: too many symbolic links at %s", rel)
}

// addStageDir copies the directory rel of the stage recursively, keeping
// symbolic links as they are; skip tells which paths to leave out.
func (t *tree) addStageDir(rel string, skip func(rel string) bool) error {
	root := filepath.Join(t.stage, rel)
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(t.stage, p)
		r = filepath.ToSlash(r)
		if skip != nil && skip(r) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			t.dir(r, uint32(fi.Mode().Perm()))
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t.symlink(r, target)
		case fi.Mode().IsRegular():
			t.hostFile(r, p, uint32(fi.Mode().Perm()))
		}
		return nil
	})
}

// libraryDirs are searched for DT_NEEDED libraries, like the loader's
// default path on Debian amd64.
var libraryDirs = []string{"lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib", "usr/lib"}

// addLibraries adds the loader and every shared library that the ELF files of
// the tree need, recursively, taking them from the stage: the check `ldd`
// would do, without running anything. A library in none of the downloaded
// packages is an error naming the file that needs it.
func (t *tree) addLibraries() error {
	done := map[string]bool{}
	var missing []string
	for {
		var todo []string
		for p, e := range t.entries {
			if !done[p] && e.src != "" && !strings.HasPrefix(p, "lib/modules/") {
				todo = append(todo, p)
			}
		}
		if len(todo) == 0 {
			break
		}
		sort.Strings(todo)
		for _, p := range todo {
			done[p] = true
			src := t.entries[p].src
			if !isELF(src) {
				continue
			}
			deps, err := readELFDeps(src)
			if err != nil {
				return fmt.Errorf("vm: reading %s: %w", p, err)
			}
			if deps.Interp != "" {
				if err := t.addFromStage(deps.Interp); err != nil {
					return err
				}
			}
			for _, lib := range deps.Needed {
				if !t.addLibrary(p, lib, deps.RunPath) {
					missing = append(missing, fmt.Sprintf("%s (needed by /%s)", lib, p))
				}
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("vm: libraries in none of the downloaded packages (add their packages to GuestPackages): %s",
			strings.Join(missing, ", "))
	}
	return nil
}

func (t *tree) addLibrary(user, soname string, runPath []string) bool {
	var dirs []string
	for _, d := range runPath {
		d = strings.ReplaceAll(d, "$ORIGIN", "/"+path.Dir(user))
		if path.IsAbs(d) {
			dirs = append(dirs, strings.TrimPrefix(d, "/"))
		}
	}
	for _, d := range append(dirs, libraryDirs...) {
		rel := path.Join(d, soname)
		if _, err := os.Stat(filepath.Join(t.stage, rel)); err == nil {
			return t.addFromStage(rel) == nil
		}
	}
	return false
}

// writeCpio writes the tree as a newc archive, sorted by path so that every
// directory comes before its contents and the same tree gives the same bytes.
func (t *tree) writeCpio(w io.Writer) error {
	paths := make([]string, 0, len(t.entries))
	for p := range t.entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	cw := newCpioWriter(w)
	for _, p := range paths {
		if err := writeEntry(cw, p, t.entries[p]); err != nil {
			return fmt.Errorf("vm: writing /%s into the initramfs: %w", p, err)
		}
	}
	return cw.Close()
}

func writeEntry(cw *cpioWriter, p string, e *treeEntry) error {
	h := &cpioHeader{Name: p, Mode: e.mode, UID: e.uid, GID: e.gid, Major: e.major, Minor: e.minor}
	var body io.Reader
	switch e.mode & 0o170000 {
	case modeSymlink:
		h.Size, body = int64(len(e.link)), strings.NewReader(e.link)
	case modeRegular:
		if e.src == "" {
			h.Size, body = int64(len(e.data)), bytes.NewReader(e.data)
			break
		}
		f, err := os.Open(e.src)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		h.Size, body = fi.Size(), f
	}
	if err := cw.WriteHeader(h); err != nil {
		return err
	}
	if body == nil {
		return nil
	}
	n, err := io.Copy(cw, body)
	if err == nil && n != h.Size {
		err = fmt.Errorf("copied %d of %d bytes", n, h.Size)
	}
	return err
}
