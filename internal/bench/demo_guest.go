package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// demoTreeSizes are the file sizes of the demo's tree: empty, inline at
// every setting, around the 1024 and 4096 thresholds, chunked, and several
// READ/WRITE sizes long.
var demoTreeSizes = []int{0, 1, 1000, 2047, 3000, 4096, 4097, 9000, 65536, 65536 + 3, 300_000, 1<<20 + 5}

// makeTree writes a tree of dirs × demoTreeSizes files of pseudo-random
// bytes under root, with a symbolic link and an empty directory, and
// returns the bytes written.
func makeTree(root string, dirs int) (int64, error) {
	rng := rand.New(rand.NewPCG(12, 0x6a09e667f3bcc908))
	var total int64
	for d := 0; d < dirs; d++ {
		dir := filepath.Join(root, fmt.Sprintf("d%d", d), "sub")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return total, err
		}
		for i, n := range demoTreeSizes {
			b := make([]byte, n)
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			name := filepath.Join(dir, fmt.Sprintf("f%02d-%d", i, n))
			if i%2 == 1 {
				name = filepath.Join(filepath.Dir(dir), fmt.Sprintf("g%02d-%d", i, n))
			}
			if err := os.WriteFile(name, b, 0o640); err != nil {
				return total, err
			}
			total += int64(n)
		}
	}
	if err := os.Symlink("d0/sub/f05-4096", filepath.Join(root, "link")); err != nil {
		return total, err
	}
	return total, os.Mkdir(filepath.Join(root, "empty"), 0o700)
}

// compareTrees checks that b holds what a holds: the same entries, types,
// permissions, symbolic link targets and file contents. It returns the
// regular files compared.
func compareTrees(a, b string) (int, error) {
	files := 0
	seen := map[string]bool{}
	err := filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		seen[rel] = true
		q := filepath.Join(b, rel)
		ia, err := os.Lstat(p)
		if err != nil {
			return err
		}
		ib, err := os.Lstat(q)
		if err != nil {
			return fmt.Errorf("%s: missing in the copy: %w", rel, err)
		}
		if ia.Mode().Type() != ib.Mode().Type() {
			return fmt.Errorf("%s: type %v, copy has %v", rel, ia.Mode().Type(), ib.Mode().Type())
		}
		if rel != "." && ia.Mode().Perm() != ib.Mode().Perm() {
			return fmt.Errorf("%s: mode %v, copy has %v", rel, ia.Mode().Perm(), ib.Mode().Perm())
		}
		switch {
		case ia.Mode()&fs.ModeSymlink != 0:
			ta, _ := os.Readlink(p)
			tb, _ := os.Readlink(q)
			if ta != tb {
				return fmt.Errorf("%s: link to %q, copy links to %q", rel, ta, tb)
			}
		case ia.Mode().IsRegular():
			if ia.Size() != ib.Size() {
				return fmt.Errorf("%s: %d bytes, copy has %d", rel, ia.Size(), ib.Size())
			}
			ha, err := fileSum(p)
			if err != nil {
				return err
			}
			hb, err := fileSum(q)
			if err != nil {
				return err
			}
			if !bytes.Equal(ha, hb) {
				return fmt.Errorf("%s: contents differ", rel)
			}
			files++
		}
		return nil
	})
	if err != nil {
		return files, err
	}
	return files, filepath.WalkDir(b, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(b, p); !seen[rel] {
			return fmt.Errorf("%s: in the copy only", rel)
		}
		return nil
	})
}

func fileSum(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// guestDemo is the demo's first half: rdma-nfsd over rxe, the kernel's
// mount over RDMA, a tree copied in, the caches dropped, copied out and
// compared (with the copy and with the server's disk), and the settings
// both sides negotiated.
func guestDemo(ctx context.Context, bin string, w io.Writer) error {
	const inline = 4096 // both sides' defaults: rdma-nfsd's and Linux 6.1's
	t := time.Now()
	phase := func(name string) {
		phaseLine(w, name, time.Since(t))
		t = time.Now()
	}
	srv := newRdmaNfsd(bin, "rdmacore", vmServerIP, goExportRoot+"/demo")
	if err := srv.start(ctx, inline, false); err != nil {
		return err
	}
	defer srv.stop()
	phase("rdma-nfsd-start")
	demoLine(w, "rdma-nfsd: %s", strings.Join(srv.args(inline, false), " "))
	k := &kernelClient{mnt: "/mnt/demo"}
	if err := k.mount(srv, inline); err != nil {
		return err
	}
	mounted := true
	defer func() {
		if mounted {
			_ = k.umount()
		}
	}()
	demoLine(w, "mount -t nfs -o vers=3,proto=rdma,%s %s:/ %s", srv.mountOpts(), vmServerIP, k.mnt)
	phase("mount")

	src, back := "/tmp/demo-tree", "/tmp/demo-back"
	_ = os.RemoveAll(src)
	_ = os.RemoveAll(back)
	total, err := makeTree(src, 2)
	if err != nil {
		return err
	}
	phase("make-tree")
	t0 := time.Now()
	if err := sh(3*time.Minute, "cp -a "+src+" "+k.mnt+"/tree && sync"); err != nil {
		return err
	}
	in := time.Since(t0)
	x, xline, err := k.xprt()
	if err != nil {
		return err
	}
	if err := k.umount(); err != nil {
		return err
	}
	mounted = false
	if err := sh(time.Minute, "sync; echo 3 > /proc/sys/vm/drop_caches"); err != nil {
		return err
	}
	if err := k.mount(srv, inline); err != nil {
		return err
	}
	mounted = true
	phase("copy-in+remount")
	t0 = time.Now()
	if err := sh(3*time.Minute, "cp -a "+k.mnt+"/tree "+back); err != nil {
		return err
	}
	out := time.Since(t0)
	phase("copy-out")
	n, err := compareTrees(src, back)
	if err != nil {
		return fmt.Errorf("the tree copied out differs: %w", err)
	}
	if _, err := compareTrees(src, srv.dir+"/tree"); err != nil {
		return fmt.Errorf("the tree on rdma-nfsd's disk differs: %w", err)
	}
	phase("compare")
	mb := float64(total) / 1e6
	demoLine(w, "tree: %d files, %.1f MB: copied in %.1f s (%.1f MB/s), caches dropped, out %.1f s (%.1f MB/s); identical (the copy and rdma-nfsd's disk)",
		n, mb, in.Seconds(), mb/in.Seconds(), out.Seconds(), mb/out.Seconds())
	demoLine(w, "rdma-nfsd's connection log line:\n  %s", srv.acceptedLine())
	if s, r, ok := traceInlineThresh(); ok {
		demoLine(w, "the kernel client's tracepoint xprtrdma_inline_thresh: neg send/recv=%d/%d", s, r)
	}
	demoLine(w, "the kernel's mountstats after the copy in (/proc/self/mountstats):\n  %s", xline)
	demoLine(w, "  that is: %s", namedXprt(x, "sends", "recvs", "read_chunk_count", "write_chunk_count",
		"reply_chunk_count", "total_rdma_request", "total_rdma_reply", "local_inv_needed", "bad_reply_count"))
	return nil
}

// namedXprt prints chosen mountstats counters by name.
func namedXprt(x map[string]uint64, names ...string) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", n, x[n]))
	}
	return strings.Join(parts, " ")
}
