package main

import (
	"context"
	"io/fs"
	"path"

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

// display is how messages name the io/fs name of a file of the export:
// from the export's root, with its leading '/' ("a/b" is "/a/b", "." is
// "/").
func display(name string) string {
	if name == "." || name == "" {
		return "/"
	}
	return "/" + name
}

// remoteErr names the export's file name (an io/fs name) in err, a
// *fs.PathError of the client (which names a file by its io/fs name, or a
// File by its base name), as display does; other errors are returned as
// they are.
func remoteErr(name string, err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return &fs.PathError{Op: pe.Op, Path: display(name), Err: pe.Err}
	}
	return err
}

// export is the mounted export as the commands use it: client.Export
// whose errors name files from the export's root (display).
type export struct{ *client.Export }

func (e export) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	fi, err := e.Export.Lstat(ctx, name)
	return fi, remoteErr(name, err)
}

func (e export) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	fi, err := e.Export.Stat(ctx, name)
	return fi, remoteErr(name, err)
}

func (e export) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	ents, err := e.Export.ReadDir(ctx, name)
	return ents, remoteErr(name, err)
}

func (e export) Lookup(ctx context.Context, name string, follow bool) (client.FH, *client.Attr, error) {
	fh, a, err := e.Export.Lookup(ctx, name, follow)
	return fh, a, remoteErr(name, err)
}

func (e export) Open(ctx context.Context, name string) (*client.File, error) {
	f, err := e.Export.Open(ctx, name)
	return f, remoteErr(name, err)
}

func (e export) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (*client.File, error) {
	f, err := e.Export.OpenFile(ctx, name, flag, perm)
	return f, remoteErr(name, err)
}

func (e export) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return remoteErr(name, e.Export.Mkdir(ctx, name, perm))
}

func (e export) Remove(ctx context.Context, name string) error {
	return remoteErr(name, e.Export.Remove(ctx, name))
}

func (e export) Rename(ctx context.Context, oldName, newName string) error {
	return remoteErr(oldName, e.Export.Rename(ctx, oldName, newName))
}

func (e export) Symlink(ctx context.Context, target, name string) error {
	return remoteErr(name, e.Export.Symlink(ctx, target, name))
}

func (e export) Setattr(ctx context.Context, name string, s *client.SetAttr) error {
	return remoteErr(name, e.Export.Setattr(ctx, name, s))
}

// Readlink returns the target of the symbolic link name.
func (e export) Readlink(ctx context.Context, name string) (string, error) {
	fh, _, err := e.Lookup(ctx, name, false)
	if err != nil {
		return "", err
	}
	target, err := e.Client.Readlink(ctx, fh)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: display(name), Err: err}
	}
	return target, nil
}
