package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// MountOptions configures Mount and Exports, which refuse a field out of
// its range with a *transport.ConfigError naming it (errors.Is(err,
// transport.ErrConfig)) before they connect.
type MountOptions struct {
	// Client configures the NFS client (Config states its ranges);
	// Client.Transport.Provider is required.
	Client Config
	// RDMAPort is the port of NFS over RDMA on the server, at most 65535;
	// 0 means 20049.
	RDMAPort int
	// MountAddr is the "host:port" of the MOUNT server (TCP); "" asks the
	// portmapper on the server host for it and, when no portmapper
	// answers there or MOUNT is not registered with it, sends MOUNT over
	// the RPC-over-RDMA connection (as rdma-nfsd and go-nfs serve it;
	// knfsd does not).
	MountAddr string
	// MountTimeout bounds each exchange with the portmapper (connecting
	// and GETPORT) and with the MOUNT server (connecting, then each of
	// MNT, EXPORT and UMNT): each waits at most this long, less if ctx
	// ends sooner. 0 means DefaultMountTimeout (10 s); negative means no
	// bound but ctx.
	MountTimeout time.Duration
}

// Export is a mounted NFSv3 export: its root handle, a Client on an
// RPC-over-RDMA connection to its server, and the server's FSINFO. Its
// methods take slash-separated paths relative to the export root (as
// io/fs does); FS gives a read-only fs.FS view.
type Export struct {
	Client *Client
	Root   FH
	// Path is the exported path given to MNT; Flavors the authentication
	// flavors the server accepts for it.
	Path    string
	Flavors []xdr.AuthFlavor
	// Info is FSINFO of the root.
	Info *FSInfo

	mount *MountClient
}

// Mount mounts the export at exportPath on server (a host name or
// address) the way the Linux client does with proto=rdma: MNT over TCP
// for the root handle (MountOptions.MountAddr says where, and when MNT
// goes over RDMA instead), then NFS over RPC-over-RDMA at port 20049,
// FSINFO to size READs and WRITEs (capped by the configured sizes).
// Close unmounts.
func Mount(ctx context.Context, server, exportPath string, opt *MountOptions) (*Export, error) {
	if opt == nil {
		opt = &MountOptions{}
	}
	if err := opt.check(); err != nil {
		return nil, err
	}
	auth := authOrProcess(opt.Client.Auth)
	cfg := opt.Client
	cfg.Auth = auth
	mc, c, err := opt.dialMount(ctx, server, &cfg)
	if err != nil {
		return nil, err
	}
	root, flavors, err := mc.Mnt(ctx, exportPath)
	if err != nil {
		mc.Close()
		if c != nil {
			c.Close()
			var ne *Error
			if !errors.As(err, &ne) {
				err = fmt.Errorf("nfs: no portmapper; MOUNT over RDMA: %w", err)
			}
		}
		return nil, err
	}
	if c == nil {
		if c, err = opt.dialNFS(ctx, server, &cfg); err != nil {
			_ = mc.Umnt(ctx, exportPath)
			mc.Close()
			return nil, err
		}
	}
	e := &Export{Client: c, Root: root, Path: exportPath, Flavors: flavors, mount: mc}
	if e.Info, err = c.Fsinfo(ctx, root); err != nil {
		e.Close()
		return nil, err
	}
	c.SetIOSizeFromFSInfo(e.Info)
	return e, nil
}

// Exports lists the exports of server (MOUNT EXPORT, RFC 1813 §5.2.5),
// reaching its MOUNT server as Mount does: at opt.MountAddr, at the port
// the portmapper gives, or over an RPC-over-RDMA connection (which needs
// opt.Client.Transport.Provider) when no portmapper answers.
func Exports(ctx context.Context, server string, opt *MountOptions) ([]ExportEntry, error) {
	if opt == nil {
		opt = &MountOptions{}
	}
	if err := opt.check(); err != nil {
		return nil, err
	}
	cfg := opt.Client
	mc, c, err := opt.dialMount(ctx, server, &cfg)
	if err != nil {
		return nil, err
	}
	defer mc.Close()
	if c != nil {
		defer c.Close()
	}
	return mc.Export(ctx)
}

// dialMount returns a MountClient for server: over TCP at MountAddr, or
// at the port the portmapper on server gives; with no portmapper (or
// MOUNT not registered with it), over a new RPC-over-RDMA connection to
// server, returned too, which the MountClient does not close.
func (o *MountOptions) dialMount(ctx context.Context, server string, cfg *Config) (*MountClient, *Client, error) {
	if o.MountAddr != "" {
		mc, err := dialMount(ctx, o.MountAddr, cfg.Auth, o.MountTimeout)
		return mc, nil, err
	}
	port, pmErr := getPort(ctx, server, nfs.ProgMount, 3, o.MountTimeout)
	if pmErr == nil {
		mc, err := dialMount(ctx, net.JoinHostPort(server, strconv.Itoa(port)), cfg.Auth, o.MountTimeout)
		return mc, nil, err
	}
	if ctx.Err() != nil {
		return nil, nil, pmErr
	}
	c, err := o.dialNFS(ctx, server, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%w; NFS over RDMA (for MOUNT): %w", pmErr, err)
	}
	auth := authOrProcess(cfg.Auth)
	mc := &MountClient{rpc: newCallerRPC(keepOpen{c.rpc}, nfs.ProgMount, 3, auth), Timeout: o.MountTimeout}
	return mc, c, nil
}

// dialNFS connects to NFS over RDMA on server, at RDMAPort.
func (o *MountOptions) dialNFS(ctx context.Context, server string, cfg *Config) (*Client, error) {
	port := o.RDMAPort
	if port == 0 {
		port = nfs.DefaultRDMAPort
	}
	return Dial(ctx, net.JoinHostPort(server, strconv.Itoa(port)), cfg)
}

// keepOpen is a Caller whose Close (there is none) leaves the connection
// to its owner: a MountClient over an Export's NFS connection.
type keepOpen struct{ Caller }

// NewExport makes an Export of a Client and a root handle obtained
// otherwise (no MOUNT connection: Close only closes the Client).
func NewExport(ctx context.Context, c *Client, root FH) (*Export, error) {
	e := &Export{Client: c, Root: root}
	var err error
	if e.Info, err = c.Fsinfo(ctx, root); err != nil {
		return nil, err
	}
	c.SetIOSizeFromFSInfo(e.Info)
	return e, nil
}

// Close unmounts (UMNT, best effort, bounded to 5 s) and closes the
// connections.
func (e *Export) Close() error {
	if e.mount != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = e.mount.Umnt(ctx, e.Path)
		cancel()
		e.mount.Close()
	}
	return e.Client.Close()
}

// maxSymlinks bounds the symbolic links followed in one path, as Linux's
// MAXSYMLINKS.
const maxSymlinks = 40

// errTooManyLinks: too many symbolic links in a path.
var errTooManyLinks = errors.New("nfs: too many levels of symbolic links")

// Lookup resolves name, a slash-separated path relative to the export root
// ("." is the root), LOOKUP by LOOKUP. Symbolic links in the path, and at
// its end when follow is set, are followed when relative and kept within
// the export; an absolute link is an error. Errors are *fs.PathError.
func (e *Export) Lookup(ctx context.Context, name string, follow bool) (FH, *Attr, error) {
	fh, a, err := e.lookup(ctx, name, follow)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "lookup", Path: name, Err: err}
	}
	return fh, a, nil
}

func (e *Export) lookup(ctx context.Context, name string, follow bool) (FH, *Attr, error) {
	if !fs.ValidPath(name) {
		return nil, nil, fs.ErrInvalid
	}
	dirPath := []FH{e.Root}
	var a *Attr
	parts := splitPath(name)
	links := 0
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		cur := dirPath[len(dirPath)-1]
		if p == ".." {
			if len(dirPath) > 1 {
				dirPath = dirPath[:len(dirPath)-1]
			}
			a = nil
			continue
		}
		fh, attr, err := e.Client.Lookup(ctx, cur, p)
		if err != nil {
			return nil, nil, err
		}
		if attr == nil {
			if attr, err = e.Client.Getattr(ctx, fh); err != nil {
				return nil, nil, err
			}
		}
		last := i == len(parts)-1
		if attr.Type == TypeLnk && (!last || follow) {
			if links++; links > maxSymlinks {
				return nil, nil, errTooManyLinks
			}
			target, err := e.Client.Readlink(ctx, fh)
			if err != nil {
				return nil, nil, err
			}
			if strings.HasPrefix(target, "/") {
				return nil, nil, fmt.Errorf("nfs: absolute symbolic link %q: %w", target, fs.ErrInvalid)
			}
			parts = append(splitPath(target), parts[i+1:]...)
			i = -1
			continue
		}
		dirPath = append(dirPath, fh)
		a = attr
	}
	fh := dirPath[len(dirPath)-1]
	if a == nil {
		var err error
		if a, err = e.Client.Getattr(ctx, fh); err != nil {
			return nil, nil, err
		}
	}
	return fh, a, nil
}

// splitPath splits a slash-separated relative path into its names,
// dropping "." and empty ones.
func splitPath(name string) []string {
	var parts []string
	for p := range strings.SplitSeq(name, "/") {
		if p != "" && p != "." {
			parts = append(parts, p)
		}
	}
	return parts
}

// parent resolves the directory of name and returns its handle and name's
// last element.
func (e *Export) parent(ctx context.Context, name string) (FH, string, error) {
	if !fs.ValidPath(name) || name == "." {
		return nil, "", fs.ErrInvalid
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	fh, a, err := e.lookup(ctx, dir, true)
	if err != nil {
		return nil, "", err
	}
	if a.Type != TypeDir {
		return nil, "", &Error{Proc: "NFS3 LOOKUP", Status: StatusNotDir}
	}
	return fh, base, nil
}

// Mkdir makes the directory name with permissions perm.
func (e *Export) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	dir, base, err := e.parent(ctx, name)
	if err == nil {
		mode := uint32(perm.Perm())
		_, _, err = e.Client.Mkdir(ctx, dir, base, &SetAttr{Mode: &mode})
	}
	return clientPathErr("mkdir", name, err)
}

// Remove removes the file or empty directory name.
func (e *Export) Remove(ctx context.Context, name string) error {
	dir, base, err := e.parent(ctx, name)
	if err == nil {
		err = e.Client.Remove(ctx, dir, base)
		var ne *Error
		if errors.As(err, &ne) && (ne.Status == StatusIsDir || ne.Status == StatusExist || ne.Status == StatusNotEmpty || ne.Status == StatusInval) {
			err = e.Client.Rmdir(ctx, dir, base)
		}
	}
	return clientPathErr("remove", name, err)
}

// Rename renames oldName to newName.
func (e *Export) Rename(ctx context.Context, oldName, newName string) error {
	od, ob, err := e.parent(ctx, oldName)
	if err == nil {
		var nd FH
		var nb string
		if nd, nb, err = e.parent(ctx, newName); err == nil {
			err = e.Client.Rename(ctx, od, ob, nd, nb)
		}
	}
	return clientPathErr("rename", oldName, err)
}

// Setattr sets the attributes s of name (SETATTR, RFC 1813 §3.3.2),
// following a symbolic link at its end: its mode, owner, size or times
// (SetAttr says which).
func (e *Export) Setattr(ctx context.Context, name string, s *SetAttr) error {
	fh, _, err := e.lookup(ctx, name, true)
	if err == nil {
		_, err = e.Client.Setattr(ctx, fh, s, nil)
	}
	return clientPathErr("setattr", name, err)
}

// Symlink makes name a symbolic link to target.
func (e *Export) Symlink(ctx context.Context, target, name string) error {
	dir, base, err := e.parent(ctx, name)
	if err == nil {
		_, _, err = e.Client.Symlink(ctx, dir, base, target, nil)
	}
	return clientPathErr("symlink", name, err)
}

// Stat returns the attributes of name, following symbolic links.
func (e *Export) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	_, a, err := e.lookup(ctx, name, true)
	if err != nil {
		return nil, clientPathErr("stat", name, err)
	}
	return &nfsFileInfo{name: path.Base(name), attr: *a}, nil
}

// Lstat is Stat without following a symbolic link at the end.
func (e *Export) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	_, a, err := e.lookup(ctx, name, false)
	if err != nil {
		return nil, clientPathErr("lstat", name, err)
	}
	return &nfsFileInfo{name: path.Base(name), attr: *a}, nil
}

// ReadDir lists the directory name with READDIRPLUS, sorted by name.
func (e *Export) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	fh, a, err := e.lookup(ctx, name, true)
	if err == nil && a.Type != TypeDir {
		err = &Error{Proc: "NFS3 READDIRPLUS", Status: StatusNotDir}
	}
	if err != nil {
		return nil, clientPathErr("readdir", name, err)
	}
	ents, err := e.readDir(ctx, fh)
	if err != nil {
		return nil, clientPathErr("readdir", name, err)
	}
	return ents, nil
}

func clientPathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// nfsFileInfo is an fs.FileInfo and fs.DirEntry of NFS attributes.
type nfsFileInfo struct {
	name string
	attr Attr
}

func (fi *nfsFileInfo) Name() string               { return fi.name }
func (fi *nfsFileInfo) Size() int64                { return int64(fi.attr.Size) }
func (fi *nfsFileInfo) Mode() fs.FileMode          { return fi.attr.FileMode() }
func (fi *nfsFileInfo) ModTime() time.Time         { return fi.attr.Mtime }
func (fi *nfsFileInfo) IsDir() bool                { return fi.attr.Type == TypeDir }
func (fi *nfsFileInfo) Sys() any                   { return &fi.attr }
func (fi *nfsFileInfo) Type() fs.FileMode          { return fi.Mode().Type() }
func (fi *nfsFileInfo) Info() (fs.FileInfo, error) { return fi, nil }
func (fi *nfsFileInfo) String() string             { return fs.FormatFileInfo(fi) }
