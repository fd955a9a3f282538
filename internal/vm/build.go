package vm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// builderVersion changes whenever Build would assemble a different initramfs
// from the same packages, so that cached images are rebuilt.
const builderVersion = "1"

// BuildOptions configure Build.
type BuildOptions struct {
	// CacheDir holds downloads, unpacked trees and the image; "" means
	// DefaultCacheDir().
	CacheDir string
	// Refresh forgets the cached package choice and downloads: the kernel and
	// package versions are resolved again from the current apt lists.
	Refresh bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Image is a built VM: the files qemu boots.
type Image struct {
	Dir           string   // the image directory, CacheDir/out
	Kernel        string   // uncompressed vmlinux (PVH boot), or the bzImage if that failed
	Initrd        string   // uncompressed newc initramfs
	KernelRelease string   // e.g. 6.1.0-56-amd64
	Packages      []string // "name version arch" of every package used, kernel first
}

// Cache layout, under the cache directory.
const (
	fileKernelPkg = "kernel-package" // the linux-image-<ABI>-amd64 chosen
	filePkgsTop   = "packages.top"   // GuestPackages when packages.list was resolved
	filePkgsList  = "packages.list"  // GuestPackages and their library closure
	dirDebs       = "debs"
	dirKernelDebs = "kernel-debs"
	dirStage      = "stage"  // all guest packages unpacked
	dirKernels    = "kernel" // kernel package unpacked, one subdirectory per .deb
	dirOut        = "out"
	fileKey       = "build.key" // in out: what the image was built from
	fileManifest  = "manifest.txt"
)

type builder struct {
	ctx   context.Context
	dir   string
	log   io.Writer
	start time.Time
}

func (b *builder) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "[rxevm %5.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// Build downloads what is missing from the cache and assembles the image,
// unless the cached image was already built from the same packages and guest
// files: then it only checks that (no apt-get, no network, a few
// milliseconds). It needs apt-get, apt-cache and dpkg-deb (a Debian or Ubuntu
// host; nothing is installed) and, for the kernel, xz. The first build
// downloads about 90 MB. Concurrent builds on one cache directory wait for
// each other.
func Build(ctx context.Context, opts BuildOptions) (*Image, error) {
	b := &builder{ctx: ctx, dir: opts.CacheDir, log: opts.Log, start: time.Now()}
	if b.dir == "" {
		b.dir = DefaultCacheDir()
	}
	if b.log == nil {
		b.log = io.Discard
	}
	unlock, err := lockDir(b.dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if opts.Refresh {
		for _, name := range []string{fileKernelPkg, filePkgsTop, filePkgsList, dirDebs, dirKernelDebs} {
			if err := os.RemoveAll(filepath.Join(b.dir, name)); err != nil {
				return nil, err
			}
		}
	}
	kdeb, debs, err := b.fetch()
	if err != nil {
		return nil, err
	}
	key, err := buildKey(kdeb, debs)
	if err != nil {
		return nil, err
	}
	out := filepath.Join(b.dir, dirOut)
	if old, err := os.ReadFile(filepath.Join(out, fileKey)); err == nil && string(old) == key {
		if img, err := LoadImage(b.dir); err == nil {
			return img, nil
		}
	}
	img, err := b.assemble(kdeb, debs)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(out, fileKey), []byte(key), 0o644); err != nil {
		return nil, err
	}
	b.logf("done: %s (%s), %s", img.Kernel, sizeOf(img.Kernel), img.Initrd+" ("+sizeOf(img.Initrd)+")")
	return img, nil
}

// LoadImage returns the image last built in cacheDir ("" means
// DefaultCacheDir()) without checking whether it is up to date.
func LoadImage(cacheDir string) (*Image, error) {
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	out := filepath.Join(cacheDir, dirOut)
	img := &Image{Dir: out, Kernel: filepath.Join(out, "kernel"), Initrd: filepath.Join(out, "initrd.img")}
	for _, f := range []string{img.Kernel, img.Initrd} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("vm: no image in %s (build it first: go run ./cmd/rxevm build): %w", cacheDir, err)
		}
	}
	m, err := os.ReadFile(filepath.Join(out, fileManifest))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(m)), "\n")
	for _, l := range lines {
		if r, ok := strings.CutPrefix(l, "kernel-release "); ok {
			img.KernelRelease = r
		} else if l != "" && !strings.HasPrefix(l, "#") {
			img.Packages = append(img.Packages, l)
		}
	}
	return img, nil
}

// fetch resolves (or reads back) the package choice and downloads what is
// missing.
func (b *builder) fetch() (kernel debInfo, debs []debInfo, err error) {
	kpkg, err := b.cached(fileKernelPkg, func() (string, error) {
		b.logf("resolving %s", KernelMetaPackage)
		return aptKernelPackage(b.ctx)
	})
	if err != nil {
		return kernel, nil, err
	}
	top := strings.Join(GuestPackages, " ")
	if old, _ := os.ReadFile(filepath.Join(b.dir, filePkgsTop)); string(old) != top {
		os.Remove(filepath.Join(b.dir, filePkgsList))
	}
	list, err := b.cached(filePkgsList, func() (string, error) {
		b.logf("resolving the guest packages and their libraries")
		all, err := aptResolve(b.ctx, GuestPackages)
		if err != nil {
			return "", err
		}
		if err := writeFileAtomic(filepath.Join(b.dir, filePkgsTop), []byte(top), 0o644); err != nil {
			return "", err
		}
		return strings.Join(all, "\n"), nil
	})
	if err != nil {
		return kernel, nil, err
	}
	names := strings.Fields(list)
	kdebs, err := b.download(filepath.Join(b.dir, dirKernelDebs), []string{kpkg})
	if err != nil {
		return kernel, nil, err
	}
	debs, err = b.download(filepath.Join(b.dir, dirDebs), names)
	return kdebs[0], debs, err
}

// cached returns the content of the cache file name, computing and storing it
// with compute if it is absent or empty.
func (b *builder) cached(name string, compute func() (string, error)) (string, error) {
	p := filepath.Join(b.dir, name)
	if v, err := os.ReadFile(p); err == nil && len(bytes.TrimSpace(v)) > 0 {
		return strings.TrimSpace(string(v)), nil
	}
	v, err := compute()
	if err != nil {
		return "", err
	}
	return v, writeFileAtomic(p, []byte(v+"\n"), 0o644)
}

func (b *builder) download(dir string, names []string) ([]debInfo, error) {
	have, missing, err := cachedDebs(dir, names)
	if err != nil || len(missing) == 0 {
		return have, err
	}
	b.logf("downloading %d package(s) into %s", len(missing), dir)
	if err := aptDownload(b.ctx, dir, missing); err != nil {
		return nil, err
	}
	have, missing, err = cachedDebs(dir, names)
	if err == nil && len(missing) > 0 {
		err = fmt.Errorf("vm: apt-get download gave no .deb for %s", strings.Join(missing, " "))
	}
	return have, err
}

// buildKey names everything the image is made from.
func buildKey(kernel debInfo, debs []debInfo) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "builder %s\nkernel %s\n", builderVersion, filepath.Base(kernel.File))
	for _, d := range debs {
		fmt.Fprintf(h, "deb %s\n", filepath.Base(d.File))
	}
	for _, l := range [][]string{guestPrograms, guestDlopened, modulesRDMA, modulesNFS, modulesHost, modulesLast, modulesExtra} {
		fmt.Fprintf(h, "list %q\n", l)
	}
	scripts, err := guestScripts()
	if err != nil {
		return "", err
	}
	for _, s := range scripts {
		fmt.Fprintf(h, "guest %s %d\n", s.Name, len(s.Data))
		h.Write(s.Data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// assemble unpacks (when not already unpacked) and writes the image.
func (b *builder) assemble(kdeb debInfo, debs []debInfo) (*Image, error) {
	stage, err := b.unpackStage(debs)
	if err != nil {
		return nil, err
	}
	kroot, kernelFile, err := b.unpackKernel(kdeb)
	if err != nil {
		return nil, err
	}
	rels, err := os.ReadDir(filepath.Join(kroot, "lib", "modules"))
	if err != nil || len(rels) != 1 {
		return nil, fmt.Errorf("vm: %s: want exactly one lib/modules/<release> (%v)", kdeb.File, err)
	}
	release := rels[0].Name()
	out := filepath.Join(b.dir, dirOut)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	os.Remove(filepath.Join(out, fileKey))
	b.logf("assembling the initramfs (kernel %s)", release)
	modRoot, err := b.kernelModules(stage, kroot, release, out)
	if err != nil {
		return nil, err
	}
	t, err := guestTree(b.ctx, stage, modRoot, release)
	if err != nil {
		return nil, err
	}
	img := &Image{Dir: out, Kernel: filepath.Join(out, "kernel"), Initrd: filepath.Join(out, "initrd.img"), KernelRelease: release}
	f, err := os.Create(img.Initrd + ".tmp")
	if err != nil {
		return nil, err
	}
	if err := t.writeCpio(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(img.Initrd+".tmp", img.Initrd); err != nil {
		return nil, err
	}
	if err := copyFile(kernelFile, img.Kernel); err != nil {
		return nil, err
	}
	img.Packages = append(img.Packages, kdeb.Name+" "+kdeb.Version+" "+kdeb.Arch)
	for _, d := range debs {
		img.Packages = append(img.Packages, d.Name+" "+d.Version+" "+d.Arch)
	}
	manifest := "# packages of the e2e VM image (name version arch), kernel first\nkernel-release " + release + "\n" +
		strings.Join(img.Packages, "\n") + "\n"
	return img, writeFileAtomic(filepath.Join(out, fileManifest), []byte(manifest), 0o644)
}

// unpackStage unpacks every guest package into one tree, unless the tree
// already holds exactly these packages.
func (b *builder) unpackStage(debs []debInfo) (string, error) {
	stage := filepath.Join(b.dir, dirStage)
	stamp := filepath.Join(b.dir, dirStage+".stamp")
	h := sha256.New()
	for _, d := range debs {
		fmt.Fprintln(h, filepath.Base(d.File))
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if old, err := os.ReadFile(stamp); err == nil && string(old) == sum {
		return stage, nil
	}
	b.logf("unpacking %d packages", len(debs))
	tmp := stage + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	files := make([]string, len(debs))
	for i, d := range debs {
		files[i] = d.File
	}
	if err := dpkgExtract(b.ctx, tmp, files...); err != nil {
		return "", err
	}
	if err := os.RemoveAll(stage); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, stage); err != nil {
		return "", err
	}
	return stage, writeFileAtomic(stamp, []byte(sum), 0o644)
}

// unpackKernel unpacks the kernel package (once per .deb) and extracts the
// uncompressed vmlinux. It returns the unpacked root and the file to boot.
func (b *builder) unpackKernel(kdeb debInfo) (root, boot string, err error) {
	parent := filepath.Join(b.dir, dirKernels)
	name := strings.TrimSuffix(filepath.Base(kdeb.File), ".deb")
	root = filepath.Join(parent, name)
	if _, err := os.Stat(filepath.Join(root, ".unpacked")); err != nil {
		b.logf("unpacking %s", filepath.Base(kdeb.File))
		if err := os.RemoveAll(parent); err != nil { // older kernels too
			return "", "", err
		}
		if err := dpkgExtract(b.ctx, root, kdeb.File); err != nil {
			return "", "", err
		}
		bz, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
		if len(bz) != 1 {
			return "", "", fmt.Errorf("vm: %s holds %d boot/vmlinuz-* files", kdeb.File, len(bz))
		}
		if err := extractVmlinux(bz[0], filepath.Join(root, "vmlinux")); err != nil {
			b.logf("WARNING: %v; booting the compressed bzImage (about 4 s slower)", err)
		}
		if err := os.WriteFile(filepath.Join(root, ".unpacked"), nil, 0o644); err != nil {
			return "", "", err
		}
	}
	if _, err := os.Stat(filepath.Join(root, "vmlinux")); err == nil {
		return root, filepath.Join(root, "vmlinux"), nil
	}
	bz, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(bz) != 1 {
		return "", "", fmt.Errorf("vm: no kernel in %s", root)
	}
	return root, bz[0], nil
}

// dpkgExtract runs dpkg-deb -x for each package into dir, two at a time.
func dpkgExtract(ctx context.Context, dir string, debs ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 2)
	for _, d := range debs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", d, dir).CombinedOutput()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("dpkg-deb -x %s: %w: %s", d, err, bytes.TrimSpace(out))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// kernelModules copies the modules the guest loads, and their dependencies,
// into out/modroot and indexes them with the guest's own depmod (run on the
// host through the guest's dynamic loader, so the host needs no kmod).
func (b *builder) kernelModules(stage, kroot, release, out string) (string, error) {
	modDir := filepath.Join(kroot, "lib", "modules", release)
	var want []string
	for _, l := range [][]string{modulesRDMA, modulesNFS, modulesHost, modulesLast, modulesExtra} {
		want = append(want, l...)
	}
	files, err := moduleClosure(modDir, want)
	if err != nil {
		return "", err
	}
	root := filepath.Join(out, "modroot")
	if err := os.RemoveAll(root); err != nil {
		return "", err
	}
	dst := filepath.Join(root, "lib", "modules", release)
	for _, f := range append(files, "modules.order", "modules.builtin", "modules.builtin.modinfo") {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			return "", err
		}
		if err := copyFile(filepath.Join(modDir, f), filepath.Join(dst, f)); err != nil {
			return "", err
		}
	}
	if err := stageExec(b.ctx, stage, "depmod", "bin/kmod", "-b", root, release); err != nil {
		return "", err
	}
	return root, nil
}

// stageExec runs a dynamically linked program of the unpacked guest packages
// on the host, through the guest's loader and libraries.
func stageExec(ctx context.Context, stage, argv0, bin string, args ...string) error {
	ldso := filepath.Join(stage, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
	lp := filepath.Join(stage, "lib/x86_64-linux-gnu") + ":" + filepath.Join(stage, "usr/lib/x86_64-linux-gnu")
	argv := append([]string{"--library-path", lp, "--argv0", argv0, filepath.Join(stage, bin)}, args...)
	out, err := exec.CommandContext(ctx, ldso, argv...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("vm: %s %s: %w: %s", argv0, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// copyFile copies src to dst (a hard link when both are on one file system).
func copyFile(src, dst string) error {
	os.Remove(dst)
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	outf, err := os.OpenFile(dst+".tmp", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(outf, in); err != nil {
		outf.Close()
		return err
	}
	if err := outf.Close(); err != nil {
		return err
	}
	return os.Rename(dst+".tmp", dst)
}

func sizeOf(p string) string {
	fi, err := os.Stat(p)
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%.1f MiB", float64(fi.Size())/(1<<20))
}

// guestTree assembles the guest's file tree from the unpacked packages, the
// kernel modules in modRoot, generated configuration and the guest scripts.
func guestTree(ctx context.Context, stage, modRoot, release string) (*tree, error) {
	t := newTree(stage)
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "usr/local/bin", "lib64", "dev", "proc", "sys",
		"run", "tmp", "mnt", "export", "host", "var/lib/nfs/v4recovery", "var/tmp"} {
		t.dir(d, 0o755)
	}
	t.dir("root", 0o700)
	t.dir("tmp", 0o1777)
	t.put("dev/console", &treeEntry{mode: modeCharDev | 0o600, major: 5, minor: 1})
	// configuration files of the packages (netconfig, rpc, services, ...)
	skipEtc := func(rel string) bool {
		switch rel {
		case "etc/init.d", "etc/insserv.conf.d", "etc/ld.so.conf.d", "etc/systemd", "etc/cron.d", "etc/logrotate.d":
			return true
		}
		dir, base := filepath.Split(rel)
		return dir == "etc/libibverbs.d/" && strings.HasSuffix(base, ".driver") && !libibverbsDrivers[base]
	}
	if err := t.addStageDir("etc", skipEtc); err != nil {
		return nil, err
	}
	for _, p := range append(append([]string(nil), guestPrograms...), guestDlopened...) {
		if err := t.addFromStage(p); err != nil {
			return nil, err
		}
	}
	if err := t.addFromStage("bin/busybox"); err != nil {
		return nil, err
	}
	t.symlink("bin/sh", "bash")
	applets, err := exec.CommandContext(ctx, filepath.Join(stage, "bin/busybox"), "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("vm: busybox --list-full: %w", err)
	}
	for _, a := range strings.Fields(string(applets)) {
		if !t.has(a) {
			t.symlink(a, "/bin/busybox")
		}
	}
	if err := t.addLibraries(); err != nil {
		return nil, err
	}
	// kernel modules
	if err := filepath.WalkDir(modRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(modRoot, p)
		t.hostFile(filepath.ToSlash(rel), p, 0o644)
		return nil
	}); err != nil {
		return nil, err
	}
	// system files; statd runs as the owner of /var/lib/nfs/sm, tcpdump drops to its user
	t.file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/bash\n"+
		"_rpc:x:100:65534::/run/rpcbind:/bin/false\n"+
		"statd:x:101:65534::/var/lib/nfs:/bin/false\n"+
		"tcpdump:x:102:102::/nonexistent:/bin/false\n"+
		"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	t.file("etc/group", 0o644, []byte("root:x:0:\ntcpdump:x:102:\nnogroup:x:65534:\n"))
	t.file("etc/hosts", 0o644, []byte("127.0.0.1 localhost\n10.0.0.1 server\n10.0.0.2 client\n"))
	t.file("etc/hostname", 0o644, []byte("rxevm\n"))
	t.file("etc/exports", 0o644, []byte("/export 10.0.0.0/24(rw,no_root_squash,insecure,no_subtree_check,fsid=1)\n"))
	t.file("etc/ld.so.conf", 0o644, []byte("/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n"))
	t.file("root/.profile", 0o644, []byte("PS1='rxevm:\\w# '\n"))
	t.symlink("etc/mtab", "/proc/mounts")
	t.symlink("var/run", "/run")
	for _, d := range []string{"var/lib/nfs/sm", "var/lib/nfs/sm.bak"} {
		t.put(d, &treeEntry{mode: modeDir | 0o700, uid: 101, gid: 65534})
	}
	t.file("etc/rxevm/modules", 0o644, []byte(fmt.Sprintf(
		"# kernel modules loaded by /init (kernel %s)\nMODULES_RDMA=%q\nMODULES_NFS=%q\nMODULES_HOST=%q\nMODULES_LAST=%q\n",
		release, strings.Join(modulesRDMA, " "), strings.Join(modulesNFS, " "),
		strings.Join(modulesHost, " "), strings.Join(modulesLast, " "))))
	scripts, err := guestScripts()
	if err != nil {
		return nil, err
	}
	for _, s := range scripts {
		if s.Name == "init" {
			t.file("init", 0o755, s.Data)
		} else {
			t.file("usr/local/bin/"+s.Name, 0o755, s.Data)
		}
	}
	if !t.has("init") {
		return nil, errors.New("vm: guest/init is missing")
	}
	return t, nil
}
