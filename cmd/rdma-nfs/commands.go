package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// remotePath turns a command-line path of the export ("/a/b", "a/b", "")
// into an io/fs name ("a/b", ".").
func remotePath(p string) string {
	p = path.Clean("/" + p)
	if p == "/" {
		return "."
	}
	return p[1:]
}

// ls lists a directory, or shows a file, in the long format of ls -l.
func (s *session) ls(ctx context.Context, args []string) error {
	name := "."
	if len(args) == 1 {
		name = remotePath(args[0])
	}
	fi, err := s.exp.Lstat(ctx, name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		s.lsLine(ctx, name, fi)
		return nil
	}
	ents, err := s.exp.ReadDir(ctx, name)
	if err != nil {
		return err
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			return err
		}
		s.lsLine(ctx, path.Join(name, e.Name()), info)
	}
	return nil
}

func (s *session) lsLine(ctx context.Context, name string, fi fs.FileInfo) {
	a := fi.Sys().(*client.Attr)
	line := fmt.Sprintf("%s %3d %5d %5d %12d %s %s", fi.Mode(), a.Nlink, a.UID, a.GID, a.Size,
		a.Mtime.Format("2006-01-02 15:04"), fi.Name())
	if a.Type == client.TypeLnk {
		if fh, _, err := s.exp.Lookup(ctx, name, false); err == nil {
			if target, err := s.exp.Client.Readlink(ctx, fh); err == nil {
				line += " -> " + target
			}
		}
	}
	fmt.Fprintln(s.stdout, line)
}

// stat shows every attribute of a file.
func (s *session) stat(ctx context.Context, args []string) error {
	name := remotePath(args[0])
	fh, a, err := s.exp.Lookup(ctx, name, false)
	if err != nil {
		return err
	}
	w := s.stdout
	fmt.Fprintf(w, "  File: %s\n", args[0])
	fmt.Fprintf(w, "  Size: %d\tUsed: %d\tType: %s\n", a.Size, a.Used, typeName(a.Type))
	fmt.Fprintf(w, "  Mode: %s (%04o)\tLinks: %d\tUid: %d\tGid: %d\n", a.FileMode(), a.Mode, a.Nlink, a.UID, a.GID)
	fmt.Fprintf(w, "  FSID: %#x\tFileID: %d\tHandle: %x\n", a.FSID, a.FileID, []byte(fh))
	fmt.Fprintf(w, "Access: %s\nModify: %s\nChange: %s\n", a.Atime.Format(time.RFC3339Nano),
		a.Mtime.Format(time.RFC3339Nano), a.Ctime.Format(time.RFC3339Nano))
	return nil
}

func typeName(t client.FileType) string {
	names := map[client.FileType]string{client.TypeReg: "regular file", client.TypeDir: "directory", client.TypeBlk: "block device",
		client.TypeChr: "character device", client.TypeLnk: "symbolic link", client.TypeSock: "socket", client.TypeFIFO: "fifo"}
	if n, ok := names[t]; ok {
		return n
	}
	return fmt.Sprintf("ftype3(%d)", t)
}

// cat writes a file to stdout.
func (s *session) cat(ctx context.Context, args []string) error {
	return s.download(ctx, remotePath(args[0]), "-")
}

// get copies a remote file to a local one ("-": stdout).
func (s *session) get(ctx context.Context, args []string) error {
	return s.download(ctx, remotePath(args[0]), args[1])
}

// put copies a local file ("-": stdin) to the export.
func (s *session) put(ctx context.Context, args []string) error {
	return s.upload(ctx, args[0], remotePath(args[1]))
}

// copyBuf is the buffer of a transfer: the File gathers or splits it into
// wsize WRITEs and rsize READs.
const copyBuf = 1 << 20

// download copies the remote file to local ("-": stdout). A local file is
// written under a temporary name in its directory and renamed to local
// once complete: a transfer that fails or is interrupted leaves no
// partial file under that name, and an existing file there is replaced
// only by a whole copy (keeping its permissions, as cp(1) does).
func (s *session) download(ctx context.Context, remote, local string) error {
	f, err := s.exp.Open(ctx, remote)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	bar := s.newProgress(remote, fi.Size())
	defer bar.finish()
	if local == "-" {
		_, err = io.CopyBuffer(bar.writer(s.stdout), f, make([]byte, copyBuf))
		return err
	}
	return writeAtomic(local, fi.Mode().Perm()|0o200, func(w io.Writer) error {
		_, err := io.CopyBuffer(bar.writer(w), f, make([]byte, copyBuf))
		return err
	})
}

// writeAtomic makes the local file name (through a symbolic link, if name
// is one) hold what write writes: it writes a new file in name's
// directory, with permissions perm (less the umask) or those of the file
// it replaces, and renames it to name once write and the close succeeded;
// otherwise it removes it.
func writeAtomic(name string, perm fs.FileMode, write func(io.Writer) error) (err error) {
	if target, err := filepath.EvalSymlinks(name); err == nil {
		name = target
	}
	old, statErr := os.Stat(name)
	if statErr == nil && old.IsDir() {
		return fmt.Errorf("%s is a directory", name)
	}
	dir, base := filepath.Split(name)
	var out *os.File
	for range 100 {
		tmp := filepath.Join(dir, fmt.Sprintf(".%s.rdma-nfs-%08x", base, rand.Uint32()))
		if out, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(out.Name())
		}
	}()
	if statErr == nil {
		if err := out.Chmod(old.Mode().Perm()); err != nil {
			return err
		}
	}
	if err := write(out); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), name)
}

func (s *session) upload(ctx context.Context, local, remote string) error {
	var r io.Reader = os.Stdin
	size := int64(-1)
	perm := fs.FileMode(0o644)
	if local != "-" {
		in, err := os.Open(local)
		if err != nil {
			return err
		}
		defer in.Close()
		fi, err := in.Stat()
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory (cp -r copies trees)", local)
		}
		r, size, perm = in, fi.Size(), fi.Mode().Perm()
	}
	f, err := s.exp.OpenFile(ctx, remote, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	bar := s.newProgress(remote, size)
	_, err = io.CopyBuffer(f, bar.reader(r), make([]byte, copyBuf))
	if cerr := f.Close(); err == nil {
		err = cerr // the write-behind's errors and COMMIT's
	}
	bar.finish()
	return err
}

// cp copies files or, with -r, trees between the local file system and the
// export; remote paths start with ":" (parseCommand checked that exactly
// one does). As with cp(1), a target that is an existing directory
// receives the source under its base name, and an existing file is
// replaced.
func (s *session) cp(ctx context.Context, args []string, recursive bool) error {
	src, dst := args[0], args[1]
	if strings.HasPrefix(src, ":") {
		return s.cpFromRemote(ctx, remotePath(src[1:]), dst, recursive)
	}
	return s.cpToRemote(ctx, src, remotePath(dst[1:]), recursive)
}

func (s *session) cpToRemote(ctx context.Context, src, dst string, recursive bool) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() && !recursive {
		return fmt.Errorf("cp: %s is a directory (use -r)", src)
	}
	if dfi, err := s.exp.Stat(ctx, dst); err == nil && dfi.IsDir() {
		if base := filepath.Base(filepath.Clean(src)); base != "." && base != string(filepath.Separator) {
			dst = path.Join(dst, base)
		}
	}
	if !fi.IsDir() {
		return s.upload(ctx, src, dst)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := remotePath(path.Join(dst, filepath.ToSlash(rel)))
		switch {
		case d.IsDir():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if err := s.exp.Mkdir(ctx, target, info.Mode().Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return s.exp.Symlink(ctx, link, target)
		case d.Type().IsRegular():
			return s.upload(ctx, p, target)
		}
		fmt.Fprintf(s.stderr, "rdma-nfs: cp: skipping %s (%s)\n", p, d.Type())
		return nil
	})
}

func (s *session) cpFromRemote(ctx context.Context, src, dst string, recursive bool) error {
	fi, err := s.exp.Lstat(ctx, src)
	if err != nil {
		return err
	}
	if fi.IsDir() && !recursive {
		return fmt.Errorf("cp: %s is a directory (use -r)", src)
	}
	if lfi, err := os.Stat(dst); err == nil && lfi.IsDir() && src != "." {
		dst = filepath.Join(dst, path.Base(src))
	}
	if !fi.IsDir() {
		return s.download(ctx, src, dst)
	}
	return fs.WalkDir(s.exp.FS(ctx), src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := p
		if src != "." {
			rel = strings.TrimPrefix(strings.TrimPrefix(p, src), "/")
		} else if p == "." {
			rel = ""
		}
		target := filepath.Join(dst, filepath.FromSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, info.Mode().Perm()|0o700); err != nil {
				return err
			}
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			fh, _, err := s.exp.Lookup(ctx, p, false)
			if err != nil {
				return err
			}
			link, err := s.exp.Client.Readlink(ctx, fh)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return s.download(ctx, p, target)
		}
		fmt.Fprintf(s.stderr, "rdma-nfs: cp: skipping %s (%s)\n", p, d.Type())
		return nil
	})
}
