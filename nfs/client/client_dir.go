package client

import (
	"context"
	"errors"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
)

// DirEntry is a directory entry of READDIR (entry3, RFC 1813 §3.3.16) or
// READDIRPLUS (entryplus3, §3.3.17, which may add Attr and FH).
type DirEntry struct {
	FileID uint64
	Name   string
	Cookie uint64
	Attr   *Attr
	FH     FH
}

// DirPage is one READDIR or READDIRPLUS result: entries, the cookie
// verifier to send with the next page's cookie, and whether the listing
// ended.
type DirPage struct {
	Entries []DirEntry
	Verf    [8]byte
	EOF     bool
}

// Readdir calls NFSPROC3_READDIR (RFC 1813 §3.3.16): the entries of dir
// after cookie (0: from the start, with a zero verf), in a reply of at most
// count bytes.
func (c *Client) Readdir(ctx context.Context, dir FH, cookie uint64, verf [8]byte, count uint32) (*DirPage, error) {
	args := nfs3.ReaddirArgs{Dir: dir, Cookie: cookie, Verf: verf, Count: count}
	r, err := c.call(ctx, nfs.ProcReaddir, args.Append(c.newCall(nfs.ProcReaddir)))
	if err != nil {
		return nil, err
	}
	var res nfs3.ReaddirRes
	if err := res.Decode(&r); err != nil {
		return nil, decodeErr(nfs.ProcReaddir, err)
	}
	p := &DirPage{Verf: res.Verf, EOF: res.EOF}
	if len(res.Entries) > 0 {
		p.Entries = make([]DirEntry, len(res.Entries))
		for i, e := range res.Entries {
			p.Entries[i] = DirEntry{FileID: e.FileID, Name: e.Name, Cookie: e.Cookie}
		}
	}
	return p, nil
}

// Readdirplus calls NFSPROC3_READDIRPLUS (RFC 1813 §3.3.17): as Readdir,
// with each entry's attributes and handle; dircount bounds the bytes of
// the entries without them, maxcount the whole reply.
func (c *Client) Readdirplus(ctx context.Context, dir FH, cookie uint64, verf [8]byte, dircount, maxcount uint32) (*DirPage, error) {
	args := nfs3.ReaddirplusArgs{Dir: dir, Cookie: cookie, Verf: verf, DirCount: dircount, MaxCount: maxcount}
	r, err := c.call(ctx, nfs.ProcReaddirplus, args.Append(c.newCall(nfs.ProcReaddirplus)))
	if err != nil {
		return nil, err
	}
	var res nfs3.ReaddirplusRes
	if err := res.Decode(&r); err != nil {
		return nil, decodeErr(nfs.ProcReaddirplus, err)
	}
	return dirPagePlus(&res), nil
}

// dirPagePlus returns a READDIRPLUS result as a DirPage. The entries'
// attributes share one allocation and so do their handles (copied out of
// the reply, which they alias), each handle capped so that appending to it
// cannot overwrite the next.
func dirPagePlus(res *nfs3.ReaddirplusRes) *DirPage {
	p := &DirPage{Verf: res.Verf, EOF: res.EOF}
	if len(res.Entries) == 0 {
		return p
	}
	nAttr, nFH := 0, 0
	for i := range res.Entries {
		e := &res.Entries[i]
		if e.Attr.Set {
			nAttr++
		}
		if e.FH.Set {
			nFH += len(e.FH.FH)
		}
	}
	attrs := make([]Attr, 0, nAttr)
	fhs := make([]byte, 0, nFH)
	p.Entries = make([]DirEntry, len(res.Entries))
	for i := range res.Entries {
		e := &res.Entries[i]
		d := DirEntry{FileID: e.FileID, Name: e.Name, Cookie: e.Cookie}
		if e.Attr.Set {
			attrs = append(attrs, attrFromFattr(&e.Attr.Attr))
			d.Attr = &attrs[len(attrs)-1]
		}
		if e.FH.Set && len(e.FH.FH) > 0 {
			start := len(fhs)
			fhs = append(fhs, e.FH.FH...)
			d.FH = FH(fhs[start:len(fhs):len(fhs)])
		}
		p.Entries[i] = d
	}
	return p
}

// errDirLoop: a server's listing repeated a cookie, which would loop.
var errDirLoop = errors.New("nfs: READDIR cookie repeated")

// dirPageSize is the count of the READDIR and READDIRPLUS calls of
// ReadDirAll: 64 KiB, more than fits inline, so the reply comes in the
// Reply chunk.
const dirPageSize = 64 << 10

// ReadDirAll lists dir with READDIRPLUS (READDIR when plus is false),
// page after page, and returns every entry but "." and "..".
func (c *Client) ReadDirAll(ctx context.Context, dir FH, plus bool) ([]DirEntry, error) {
	var all []DirEntry
	var cookie uint64
	var verf [8]byte
	seen := map[uint64]bool{}
	for {
		var p *DirPage
		var err error
		if plus {
			p, err = c.Readdirplus(ctx, dir, cookie, verf, dirPageSize/4, dirPageSize)
		} else {
			p, err = c.Readdir(ctx, dir, cookie, verf, dirPageSize)
		}
		if err != nil {
			return all, err
		}
		for _, e := range p.Entries {
			if seen[e.Cookie] && !p.EOF {
				return all, errDirLoop
			}
			seen[e.Cookie] = true
			cookie = e.Cookie
			if e.Name != "." && e.Name != ".." {
				all = append(all, e)
			}
		}
		verf = p.Verf
		if p.EOF {
			return all, nil
		}
		if len(p.Entries) == 0 {
			return all, &Error{Proc: nfs.ProcName(nfs.ProgNFS, 3, nfs.ProcReaddir), Status: StatusTooSmall}
		}
	}
}
