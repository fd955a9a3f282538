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
	"syscall"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

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
	return s.download(ctx, remotePath(args[0]), "-", false, nil)
}

// get copies a remote file to a local one ("-": stdout), into it if it
// is a directory.
func (s *session) get(ctx context.Context, args []string, preserve bool) error {
	remote := remotePath(args[0])
	if args[1] == "-" {
		return s.download(ctx, remote, "-", false, nil)
	}
	return s.cpFromRemote(ctx, remote, args[1], false, preserve)
}

// put copies a local file ("-": stdin) to the export, into remote if it
// is a directory.
func (s *session) put(ctx context.Context, args []string, preserve bool) error {
	remote := remotePath(args[1])
	if err := s.checkDirTarget(ctx, args[1], remote); err != nil {
		return err
	}
	if args[0] != "-" {
		return s.cpToRemote(ctx, args[0], remote, false, preserve)
	}
	if fi, err := s.exp.Stat(ctx, remote); err == nil && fi.IsDir() {
		return fmt.Errorf("put: %s is a directory: name the file to write stdin to", display(remote))
	}
	return s.upload(ctx, "-", remote, false, nil)
}

// checkDirTarget checks that a remote target written with a trailing
// '/' (raw, as typed; name, its io/fs name) is a directory, as cp(1) does:
// "put f /d/" never writes a file named d.
func (s *session) checkDirTarget(ctx context.Context, raw, name string) error {
	if !strings.HasSuffix(raw, "/") || name == "." {
		return nil
	}
	fi, err := s.exp.Stat(ctx, name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &fs.PathError{Op: "stat", Path: display(name), Err: syscall.ENOTDIR}
	}
	return nil
}

// copyBuf is the buffer of a transfer: the File gathers or splits it into
// wsize WRITEs and rsize READs.
const copyBuf = 1 << 20

// cleanupTimeout bounds the removal of a temporary file on the server
// after a failure, which runs even when the command's context ended (an
// interrupt).
const cleanupTimeout = 10 * time.Second

// fileMeta is what -p keeps of a source file.
type fileMeta struct {
	perm         fs.FileMode
	atime, mtime time.Time
}

// localMeta is the fileMeta of a local file.
func localMeta(fi fs.FileInfo) fileMeta {
	return fileMeta{perm: fi.Mode().Perm(), atime: atime(fi), mtime: fi.ModTime()}
}

// remoteMeta is the fileMeta of a file of the export.
func remoteMeta(fi fs.FileInfo) fileMeta {
	m := fileMeta{perm: fi.Mode().Perm(), atime: fi.ModTime(), mtime: fi.ModTime()}
	if a, ok := fi.Sys().(*client.Attr); ok {
		m.atime = a.Atime
	}
	return m
}

// tempName is the name of a temporary file beside the file base: its
// name (cut to keep the whole within NAME_MAX) and a random suffix.
func tempName(base string) string {
	if len(base) > 200 {
		base = base[:200]
	}
	return fmt.Sprintf(".%s.rdma-nfs-%08x", base, rand.Uint32())
}

// remoteReader reads the export's file name, naming it in its errors.
type remoteReader struct {
	f    *client.File
	name string
}

func (r remoteReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil && err != io.EOF {
		err = remoteErr(r.name, err)
	}
	return n, err
}

// remoteWriter writes the export's file f, naming name in its errors.
type remoteWriter struct {
	f    *client.File
	name string
}

func (w remoteWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	return n, remoteErr(w.name, err)
}

// download copies the remote file to local ("-": stdout), on bar (nil: a
// bar of its own). A local file is written under a temporary name in its
// directory and renamed to local once complete (writeAtomic): a transfer
// that fails or is interrupted leaves no partial file under that name,
// and an existing file there is replaced only by a whole copy, keeping
// its permissions (as cp(1) does) unless preserve, which gives it the
// remote file's permissions and times.
func (s *session) download(ctx context.Context, remote, local string, preserve bool, bar *progress) error {
	f, err := s.exp.Open(ctx, remote)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return remoteErr(remote, err)
	}
	if bar == nil {
		bar = s.newProgress(display(remote), fi.Size())
		defer bar.finish()
	}
	src := remoteReader{f, remote}
	if local == "-" {
		_, err = io.CopyBuffer(bar.writer(s.stdout), src, make([]byte, copyBuf))
		return err
	}
	return writeAtomic(local, remoteMeta(fi), preserve, func(w io.Writer) error {
		_, err := io.CopyBuffer(bar.writer(w), src, make([]byte, copyBuf))
		return err
	})
}

// writeAtomic makes the local file name (through a symbolic link, if name
// is one) hold what write writes: it writes a new file in name's
// directory, with permissions meta.perm (less the umask) or those of the
// file it replaces, and renames it to name once write and the close
// succeeded; otherwise it removes it. With preserve the file gets
// meta.perm as it is and meta's times.
func writeAtomic(name string, meta fileMeta, preserve bool, write func(io.Writer) error) (err error) {
	if target, err := filepath.EvalSymlinks(name); err == nil {
		name = target
	}
	old, statErr := os.Stat(name)
	if statErr == nil && old.IsDir() {
		return fmt.Errorf("%s is a directory", name)
	}
	dir, base := filepath.Split(name)
	if base == "" { // "d/", not a directory (cpFromRemote went into one)
		if statErr == nil {
			statErr = &fs.PathError{Op: "stat", Path: name, Err: syscall.ENOTDIR}
		}
		return statErr
	}
	var out *os.File
	for range 100 {
		tmp := filepath.Join(dir, tempName(base))
		if out, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, meta.perm|0o200); !errors.Is(err, fs.ErrExist) {
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
	switch {
	case preserve:
		err = out.Chmod(meta.perm)
	case statErr == nil:
		err = out.Chmod(old.Mode().Perm())
	}
	if err != nil {
		return err
	}
	if err := write(out); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if preserve {
		if err := os.Chtimes(out.Name(), meta.atime, meta.mtime); err != nil {
			return err
		}
	}
	return os.Rename(out.Name(), name)
}

// upload copies the local file local ("-": stdin) to the export's file
// remote, on bar (nil: a bar of its own). It writes a new file beside
// remote under a temporary name (an exclusive CREATE, tempName), and
// RENAMEs it over remote once written and committed: a transfer that
// fails or is interrupted leaves no partial file under that name (the
// temporary file is removed, within cleanupTimeout), and an existing file
// is replaced only by a whole copy. The new file has the permissions of
// the file it replaces or, when there is none, local's (0644 for stdin);
// its owner is the caller (the file replaced may have had another). With
// preserve it gets local's permissions and times (SETATTR).
func (s *session) upload(ctx context.Context, local, remote string, preserve bool, bar *progress) (err error) {
	size := int64(-1)
	meta := fileMeta{perm: 0o644}
	var r io.Reader
	if local == "-" {
		r = newCtxReader(ctx, os.Stdin) // an interrupt ends a Read that waits
	} else {
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
		r, size, meta = in, fi.Size(), localMeta(fi)
		if !fi.Mode().IsRegular() { // a FIFO, a device: a Read may wait for ever
			r, size = newCtxReader(ctx, in), -1
		}
	}
	perm := meta.perm
	switch old, err := s.exp.Stat(ctx, remote); {
	case err == nil && old.IsDir():
		return fmt.Errorf("%s is a directory", display(remote))
	case err == nil && !preserve:
		perm = old.Mode().Perm()
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	// Owner read and write while it is written, whatever perm says.
	f, tmp, err := s.createTemp(ctx, remote, perm|0o600)
	if err != nil {
		return err
	}
	open := true
	defer func() {
		if err == nil {
			return
		}
		if open {
			f.Close()
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if rerr := s.exp.Export.Remove(rctx, tmp); rerr != nil {
			err = fmt.Errorf("%w (the temporary file %s is left: %v)", err, display(tmp), rerr)
		}
	}()
	if bar == nil {
		bar = s.newProgress(display(remote), size)
		defer bar.finish()
	}
	_, err = io.CopyBuffer(remoteWriter{f, remote}, bar.reader(r), make([]byte, copyBuf))
	cerr := f.Close() // the write-behind's errors and COMMIT's
	open = false
	if err == nil {
		err = remoteErr(remote, cerr)
	}
	if err != nil {
		return err
	}
	set := &client.SetAttr{}
	if perm != perm|0o600 || preserve {
		mode := uint32(perm)
		set.Mode = &mode
	}
	if preserve {
		set.Atime, set.Mtime = &meta.atime, &meta.mtime
	}
	if set.Mode != nil {
		if err := s.exp.Export.Setattr(ctx, tmp, set); err != nil {
			return remoteErr(remote, err)
		}
	}
	return remoteErr(remote, s.exp.Export.Rename(ctx, tmp, remote))
}

// createTemp creates, exclusively, a file of permissions perm beside the
// export's file name, under a temporary name (tempName), and opens it for
// writing.
func (s *session) createTemp(ctx context.Context, name string, perm fs.FileMode) (*client.File, string, error) {
	dir, base := path.Split(name)
	for range 100 {
		tmp := path.Join(dir, tempName(base))
		f, err := s.exp.Export.OpenFile(ctx, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, tmp, remoteErr(name, err)
		}
	}
	return nil, "", fmt.Errorf("%s: no free temporary name beside it", display(name))
}
