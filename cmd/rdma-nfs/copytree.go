package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// treeEntry is one file of a tree to copy, as the walk found it.
type treeEntry struct {
	rel  string      // slash-separated, below the source ("." for the source itself)
	typ  fs.FileMode // its type bits: fs.ModeDir, fs.ModeSymlink, 0 (regular), another
	meta fileMeta
}

// tree is a tree to copy, listed before anything is copied so that the
// progress bar knows the whole: each directory before what it holds.
type tree struct {
	entries []treeEntry
	files   int64 // regular files
	bytes   int64 // their sizes
}

func (t *tree) add(rel string, typ fs.FileMode, size int64, meta fileMeta) {
	t.entries = append(t.entries, treeEntry{rel: rel, typ: typ, meta: meta})
	if typ.IsRegular() {
		t.files++
		t.bytes += size
	}
}

// cp copies files or, with -r, trees between the local file system and the
// export; remote paths start with ":" (parseCommand checked that exactly
// one does). As with cp(1), a target that is an existing directory
// receives the source under its base name, and an existing file is
// replaced (whole: upload, writeAtomic). With preserve, files and
// directories get their source's permissions and times.
func (s *session) cp(ctx context.Context, args []string, recursive, preserve bool) error {
	src, dst := args[0], args[1]
	if strings.HasPrefix(src, ":") {
		return s.cpFromRemote(ctx, remotePath(src[1:]), dst, recursive, preserve)
	}
	if !recursive { // cp -r d new/ makes new, as cp(1)
		if err := s.checkDirTarget(ctx, dst[1:], remotePath(dst[1:])); err != nil {
			return err
		}
	}
	return s.cpToRemote(ctx, src, remotePath(dst[1:]), recursive, preserve)
}

func (s *session) cpToRemote(ctx context.Context, src, dst string, recursive, preserve bool) error {
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
		return s.upload(ctx, src, dst, preserve, nil)
	}
	var t tree
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		t.add(filepath.ToSlash(rel), d.Type(), info.Size(), localMeta(info))
		return nil
	})
	if err != nil {
		return err
	}
	bar := s.newTreeProgress(display(dst), t.files, t.bytes)
	defer bar.finish()
	for _, e := range t.entries {
		target := remotePath(path.Join(dst, e.rel))
		local := filepath.Join(src, filepath.FromSlash(e.rel))
		switch {
		case e.typ.IsDir():
			if err := s.exp.Mkdir(ctx, target, e.meta.perm); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case e.typ&fs.ModeSymlink != 0:
			link, err := os.Readlink(local)
			if err != nil {
				return err
			}
			if err := s.exp.Symlink(ctx, link, target); err != nil {
				return err
			}
		case e.typ.IsRegular():
			if err := s.upload(ctx, local, target, preserve, bar); err != nil {
				return err
			}
			bar.files.Add(1)
		default:
			fmt.Fprintf(s.stderr, "rdma-nfs: cp: skipping %s (%s)\n", local, e.typ)
		}
	}
	if !preserve {
		return nil
	}
	// Directories last, each after what it holds: writing in a directory
	// changes its times.
	for i := len(t.entries) - 1; i >= 0; i-- {
		if e := t.entries[i]; e.typ.IsDir() {
			mode := uint32(e.meta.perm)
			set := &client.SetAttr{Mode: &mode, Atime: &e.meta.atime, Mtime: &e.meta.mtime}
			if err := s.exp.Setattr(ctx, remotePath(path.Join(dst, e.rel)), set); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *session) cpFromRemote(ctx context.Context, src, dst string, recursive, preserve bool) error {
	fi, err := s.exp.Lstat(ctx, src)
	if err != nil {
		return err
	}
	if fi.IsDir() && !recursive {
		return fmt.Errorf("cp: %s is a directory (use -r)", display(src))
	}
	if lfi, err := os.Stat(dst); err == nil && lfi.IsDir() && src != "." {
		dst = filepath.Join(dst, path.Base(src))
	}
	if !fi.IsDir() {
		return s.download(ctx, src, dst, preserve, nil)
	}
	var t tree
	err = fs.WalkDir(s.exp.FS(ctx), src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return remoteErr(p, err)
		}
		rel := "."
		if p != src {
			rel = strings.TrimPrefix(p, src+"/")
			if src == "." {
				rel = p
			}
		}
		info, err := d.Info()
		if err != nil {
			return remoteErr(p, err)
		}
		t.add(rel, d.Type(), info.Size(), remoteMeta(info))
		return nil
	})
	if err != nil {
		return err
	}
	bar := s.newTreeProgress(dst, t.files, t.bytes)
	defer bar.finish()
	for _, e := range t.entries {
		remote := path.Join(src, e.rel)
		target := filepath.Join(dst, filepath.FromSlash(e.rel))
		switch {
		case e.typ.IsDir():
			if err := os.MkdirAll(target, e.meta.perm|0o700); err != nil {
				return err
			}
		case e.typ&fs.ModeSymlink != 0:
			link, err := s.exp.Readlink(ctx, remote)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case e.typ.IsRegular():
			if err := s.download(ctx, remote, target, preserve, bar); err != nil {
				return err
			}
			bar.files.Add(1)
		default:
			fmt.Fprintf(s.stderr, "rdma-nfs: cp: skipping %s (%s)\n", display(remote), e.typ)
		}
	}
	if !preserve {
		return nil
	}
	for i := len(t.entries) - 1; i >= 0; i-- {
		if e := t.entries[i]; e.typ.IsDir() {
			target := filepath.Join(dst, filepath.FromSlash(e.rel))
			if err := os.Chmod(target, e.meta.perm); err != nil {
				return err
			}
			if err := os.Chtimes(target, e.meta.atime, e.meta.mtime); err != nil {
				return err
			}
		}
	}
	return nil
}
