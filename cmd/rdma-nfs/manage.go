package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// exportArg is the io/fs name of a path of the export given to mv, rm or
// mkdir, which take only paths of the export: a leading ":" (as cp's) is
// allowed.
func exportArg(p string) string { return remotePath(strings.TrimPrefix(p, ":")) }

// mv renames src to dst in the export (RENAME, RFC 1813 §3.3.14), which
// replaces a file dst; a dst that is a directory receives src under its
// base name, as with mv(1).
func (s *session) mv(ctx context.Context, args []string) error {
	src, dst := exportArg(args[0]), exportArg(args[1])
	if src == "." {
		return errors.New("mv: the export's root / cannot move")
	}
	if fi, err := s.exp.Stat(ctx, dst); err == nil && fi.IsDir() {
		dst = path.Join(dst, path.Base(src))
	}
	return s.exp.Rename(ctx, src, dst)
}

// rm removes files of the export (REMOVE) and, with recursive,
// directories with what they hold (RMDIR, each after its entries).
func (s *session) rm(ctx context.Context, args []string, recursive bool) error {
	for _, a := range args {
		name := exportArg(a)
		if name == "." {
			return errors.New("rm: refusing to remove the export's root /")
		}
		fh, attr, err := s.exp.Lookup(ctx, name, false)
		if pe, ok := err.(*fs.PathError); ok {
			return &fs.PathError{Op: "remove", Path: pe.Path, Err: pe.Err}
		} else if err != nil {
			return err
		}
		if attr.Type == client.TypeDir {
			if !recursive {
				return fmt.Errorf("rm: %s is a directory (use -r)", display(name))
			}
			if err := s.emptyDir(ctx, fh, name, 0); err != nil {
				return err
			}
		}
		if err := s.exp.Remove(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// maxTreeDepth bounds the depth of a tree rm -r removes (PATH_MAX / 2:
// a one-byte name and its '/' per level), which bounds what the removal
// holds: one listing per level.
const maxTreeDepth = 2048

// emptyDir removes what the directory dir (named name) holds, depth
// levels below the directory rm was given.
func (s *session) emptyDir(ctx context.Context, dir client.FH, name string, depth int) error {
	if depth >= maxTreeDepth {
		return fmt.Errorf("rm: %s: more than %d levels of directories", display(name), maxTreeDepth)
	}
	ents, err := s.exp.Client.ReadDirAll(ctx, dir, true)
	if err != nil {
		return &fs.PathError{Op: "readdir", Path: display(name), Err: err}
	}
	for _, e := range ents {
		child := path.Join(name, e.Name)
		if e.Name == "" || strings.Contains(e.Name, "/") {
			return &fs.PathError{Op: "readdir", Path: display(name), Err: fmt.Errorf("entry %q: %w", e.Name, client.ErrBadReply)}
		}
		fh, attr := e.FH, e.Attr
		if fh == nil || attr == nil {
			if fh, attr, err = s.exp.Client.Lookup(ctx, dir, e.Name); err == nil && attr == nil {
				attr, err = s.exp.Client.Getattr(ctx, fh)
			}
			if err != nil {
				return &fs.PathError{Op: "lookup", Path: display(child), Err: err}
			}
		}
		if attr.Type == client.TypeDir {
			if err := s.emptyDir(ctx, fh, child, depth+1); err != nil {
				return err
			}
			err = s.exp.Client.Rmdir(ctx, dir, e.Name)
		} else {
			err = s.exp.Client.Remove(ctx, dir, e.Name)
		}
		if err != nil {
			return &fs.PathError{Op: "remove", Path: display(child), Err: err}
		}
	}
	return nil
}

// mkdirPerm is the permissions of the directories mkdir makes.
const mkdirPerm = 0o755

// mkdir makes directories in the export (MKDIR) and, with parents, those
// missing above them, with no error for one that exists (as mkdir -p).
func (s *session) mkdir(ctx context.Context, args []string, parents bool) error {
	for _, a := range args {
		name := exportArg(a)
		var err error
		if parents {
			err = s.mkdirAll(ctx, name)
		} else {
			err = s.exp.Mkdir(ctx, name, mkdirPerm)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *session) mkdirAll(ctx context.Context, name string) error {
	if fi, err := s.exp.Stat(ctx, name); err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: display(name), Err: syscall.ENOTDIR}
	}
	if err := s.mkdirAll(ctx, path.Dir(name)); err != nil {
		return err
	}
	err := s.exp.Mkdir(ctx, name, mkdirPerm)
	if errors.Is(err, fs.ErrExist) { // made meanwhile
		if fi, serr := s.exp.Stat(ctx, name); serr == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}
