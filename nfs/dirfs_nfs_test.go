package nfs

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gonfs "github.com/willscott/go-nfs"
	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
)

// serveDir serves h with go-nfs over TCP loopback and mounts it with
// go-nfs-client.
func serveDir(t *testing.T, h *DirHandler) *nfsc.Target {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gonfs.Serve(l, h) }()
	t.Cleanup(func() { _ = l.Close() })
	// go-nfs-client picks its local port at random: retry a collision.
	var c *rpc.Client
	for i := 0; ; i++ {
		if c, err = rpc.DialTCP("tcp", l.Addr().String(), false); err == nil || i == 10 {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m := &nfsc.Mount{Client: c}
	target, err := m.Mount("/", rpc.AuthNull)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

func TestDirOverNFS(t *testing.T) {
	root := t.TempDir()
	d, h := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	target := serveDir(t, h)
	at := func(n string) string { return filepath.Join(root, n) }

	// CREATE, WRITE, READ.
	if _, err := target.Create("/hello.txt", 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(at("hello.txt")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("created: %v, %v", fi, err)
	}
	w, err := target.OpenFile("/hello.txt", 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("hello, world")); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	if b, _ := os.ReadFile(at("hello.txt")); string(b) != "hello, world" {
		t.Fatalf("stored %q", b)
	}
	r, err := target.Open("/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(r); err != nil || string(b) != "hello, world" {
		t.Fatalf("read %q, %v", b, err)
	}

	// MKDIR, RENAME into it.
	if _, err := target.Mkdir("/dir", 0o750); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(at("dir")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
		t.Fatalf("mkdir: %v, %v", fi, err)
	}
	_, fh, err := target.Lookup("/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Rename("/hello.txt", "/dir/moved.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(at("dir/moved.txt")); err != nil {
		t.Fatal(err)
	}
	// The handle from before the rename still names the file.
	if attr, err := target.GetAttr(fh); err != nil || attr.Filesize != 12 {
		t.Fatalf("GETATTR of the renamed file's old handle: %v, %v", attr, err)
	}

	// A hard link made with Dir.Link (the LINK procedure's back end).
	if err := d.Link("dir/moved.txt", "hard"); err != nil {
		t.Fatal(err)
	}
	if attr, err := target.Getattr("/hard"); err != nil || attr.Nlink != 2 || attr.Filesize != 12 {
		t.Fatalf("hard link: %+v, %v", attr, err)
	}

	// SYMLINK, READLINK.
	if err := target.Symlink("dir/moved.txt", "/sym"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(at("sym")); err != nil || got != "dir/moved.txt" {
		t.Fatalf("symlink stored %q, %v", got, err)
	}
	sl, err := target.Open("/sym")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sl.Readlink(); err != nil || got != "dir/moved.txt" {
		t.Fatalf("READLINK = %q, %v", got, err)
	}

	// SETATTR: mode, owner (as root), times. go-nfs-client encodes
	// sattr3 in a way go-nfs cannot decode (GARBAGE_ARGS, INVAL), so this
	// runs go-nfs's SETATTR back end, SetFileAttributes.Apply, on the
	// handler's Change directly.
	mtime, atime := time.Unix(1_000_000_000, 0), time.Unix(999_999_000, 0)
	mode, uid, gid := uint32(0o604), uint32(1234), uint32(4321)
	sattr := gonfs.SetFileAttributes{SetMode: &mode, SetAtime: &atime, SetMtime: &mtime}
	root0 := os.Geteuid() == 0
	if root0 {
		sattr.SetUID, sattr.SetGID = &uid, &gid
	}
	if err := sattr.Apply(h.Change(d), d, "dir/moved.txt"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(at("dir/moved.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o604 || !fi.ModTime().Equal(mtime) {
		t.Errorf("after SETATTR: mode %v, mtime %v", fi.Mode(), fi.ModTime())
	}
	if st := fi.Sys().(*syscall.Stat_t); root0 && (st.Uid != 1234 || st.Gid != 4321) {
		t.Errorf("after SETATTR: owner %d:%d", st.Uid, st.Gid)
	}

	// REMOVE, RMDIR; the removed file's handle is stale.
	if err := target.Remove("/hard"); err != nil {
		t.Fatal(err)
	}
	if err := target.Remove("/sym"); err != nil {
		t.Fatal(err)
	}
	if err := target.Remove("/dir/moved.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := target.GetAttr(fh); err == nil || !strings.Contains(err.Error(), "STALE") {
		t.Errorf("GETATTR of a removed file: %v, want NFS3ERR_STALE", err)
	}
	if err := target.RmDir("/dir"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("left in the export: %v", ents)
	}
}

func TestDirOverNFSLargeDirAndRestart(t *testing.T) {
	root := t.TempDir()
	const n = 2000
	if err := os.Mkdir(filepath.Join(root, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f, err := os.Create(filepath.Join(root, "big", fmt.Sprintf("entry-%04d", i)))
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	_, h := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	target := serveDir(t, h)
	ents, err := target.ReadDirPlus("/big")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var fh []byte
	for _, e := range ents {
		if e.FileName == "." || e.FileName == ".." {
			continue
		}
		seen[e.FileName] = true
		if e.FileName == "entry-1999" {
			fh = e.Handle.FH
		}
	}
	if len(seen) != n {
		t.Fatalf("READDIRPLUS listed %d entries, want %d", len(seen), n)
	}
	if len(fh) == 0 {
		t.Fatal("no handle for entry-1999")
	}

	// A restarted server (new Dir, new handler, new connection) takes
	// the handle the first one gave out.
	_, h2 := openHandler(t, root, DirHandlerOptions{IndexOnly: true})
	target2 := serveDir(t, h2)
	if _, err := target2.GetAttr(fh); err != nil {
		t.Fatalf("GETATTR after restart: %v", err)
	}
}
