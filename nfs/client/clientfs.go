package client

import (
	"context"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// FS returns a read-only io/fs view of the export: fs.FS, fs.ReadDirFS,
// fs.ReadFileFS and fs.StatFS. Names are slash-separated paths from the
// export root; relative symbolic links are followed. ctx bounds every call
// the view and its files make.
func (e *Export) FS(ctx context.Context) fs.FS { return &exportFS{e: e, ctx: ctx} }

type exportFS struct {
	e   *Export
	ctx context.Context
}

var (
	_ fs.ReadDirFS  = (*exportFS)(nil)
	_ fs.ReadFileFS = (*exportFS)(nil)
	_ fs.StatFS     = (*exportFS)(nil)
)

// Open implements fs.FS: a *File for a regular file, an fs.ReadDirFile for
// a directory.
func (x *exportFS) Open(name string) (fs.File, error) {
	fh, a, err := x.e.lookup(x.ctx, name, true)
	if err != nil {
		return nil, clientPathErr("open", name, err)
	}
	if a.Type == TypeDir {
		return &clientDir{x: x, fh: fh, info: nfsFileInfo{name: path.Base(name), attr: *a}}, nil
	}
	return x.e.Client.newFile(x.ctx, fh, path.Base(name), int64(a.Size)), nil
}

// ReadDir implements fs.ReadDirFS.
func (x *exportFS) ReadDir(name string) ([]fs.DirEntry, error) { return x.e.ReadDir(x.ctx, name) }

// Stat implements fs.StatFS.
func (x *exportFS) Stat(name string) (fs.FileInfo, error) { return x.e.Stat(x.ctx, name) }

// ReadFile implements fs.ReadFileFS: READs of rsize bytes in flight at
// once over the size GETATTR gives, then on to the end of the file.
func (x *exportFS) ReadFile(name string) ([]byte, error) {
	fh, a, err := x.e.lookup(x.ctx, name, true)
	if err == nil && a.Type == TypeDir {
		err = &Error{Proc: "NFS3 READ", Status: StatusIsDir}
	}
	if err != nil {
		return nil, clientPathErr("readfile", name, err)
	}
	f := x.e.Client.newFile(x.ctx, fh, path.Base(name), int64(a.Size))
	defer f.Close()
	buf := make([]byte, a.Size, a.Size+512)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	buf = buf[:n]
	if err == nil { // the file may have grown
		if _, err := f.Seek(int64(n), io.SeekStart); err != nil {
			return nil, err
		}
		for {
			if len(buf) == cap(buf) {
				buf = slices.Grow(buf, len(buf)/2+512)
			}
			k, err := f.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+k]
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return buf, nil
}

// readDir lists dir with READDIRPLUS, sorted by name; entries without
// attributes get a GETATTR.
func (e *Export) readDir(ctx context.Context, dir FH) ([]fs.DirEntry, error) {
	ents, err := e.Client.ReadDirAll(ctx, dir, true)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, 0, len(ents))
	for _, de := range ents {
		a := de.Attr
		if a == nil {
			fh := de.FH
			if fh == nil {
				if fh, a, err = e.Client.Lookup(ctx, dir, de.Name); err != nil {
					return nil, err
				}
			}
			if a == nil {
				if a, err = e.Client.Getattr(ctx, fh); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, &nfsFileInfo{name: de.Name, attr: *a})
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// clientDir is an open directory of the fs.FS view.
type clientDir struct {
	x      *exportFS
	fh     FH
	info   nfsFileInfo
	ents   []fs.DirEntry
	read   bool
	closed bool
}

func (d *clientDir) Stat() (fs.FileInfo, error) { return &d.info, nil }

func (d *clientDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: &Error{Proc: "read", Status: StatusIsDir}}
}

func (d *clientDir) Close() error {
	if d.closed {
		return &fs.PathError{Op: "close", Path: d.info.name, Err: fs.ErrClosed}
	}
	d.closed = true
	return nil
}

// ReadDir implements fs.ReadDirFile.
func (d *clientDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		ents, err := d.x.e.readDir(d.x.ctx, d.fh)
		if err != nil {
			return nil, clientPathErr("readdir", d.info.name, err)
		}
		d.ents, d.read = ents, true
	}
	if n <= 0 {
		ents := d.ents
		d.ents = nil
		return ents, nil
	}
	if len(d.ents) == 0 {
		return nil, io.EOF
	}
	k := min(n, len(d.ents))
	ents := d.ents[:k]
	d.ents = d.ents[k:]
	return ents, nil
}
