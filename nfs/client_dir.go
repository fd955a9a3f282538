package nfs

import (
	"context"
	"errors"

	"github.com/go-rpcrdma/rpcrdma/xdr"
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
	r, err := c.simpleCall(ctx, ProcReaddir, func(b []byte) []byte {
		b = xdr.AppendUint64(appendFH(b, dir), cookie)
		return xdr.AppendUint32(append(b, verf[:]...), count)
	})
	if err != nil {
		return nil, err
	}
	p, err := decodeDirPage(r, false)
	return p, decodeErr(ProcReaddir, err)
}

// Readdirplus calls NFSPROC3_READDIRPLUS (RFC 1813 §3.3.17): as Readdir,
// with each entry's attributes and handle; dircount bounds the bytes of
// the entries without them, maxcount the whole reply.
func (c *Client) Readdirplus(ctx context.Context, dir FH, cookie uint64, verf [8]byte, dircount, maxcount uint32) (*DirPage, error) {
	r, err := c.simpleCall(ctx, ProcReaddirplus, func(b []byte) []byte {
		b = xdr.AppendUint64(appendFH(b, dir), cookie)
		b = xdr.AppendUint32(append(b, verf[:]...), dircount)
		return xdr.AppendUint32(b, maxcount)
	})
	if err != nil {
		return nil, err
	}
	p, err := decodeDirPage(r, true)
	return p, decodeErr(ProcReaddirplus, err)
}

// errDirLoop: a server's listing repeated a cookie, which would loop.
var errDirLoop = errors.New("nfs: READDIR cookie repeated")

// decodeDirPage decodes READDIR3resok or READDIRPLUS3resok after the status.
func decodeDirPage(r *xdr.Reader, plus bool) (*DirPage, error) {
	if _, err := decodePostOpAttr(r, nil); err != nil {
		return nil, err
	}
	var p DirPage
	v, err := r.FixedOpaque(8)
	if err != nil {
		return nil, err
	}
	copy(p.Verf[:], v)
	for {
		more, err := r.Bool()
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		var e DirEntry
		if e.FileID, err = r.Uint64(); err != nil {
			return nil, err
		}
		name, err := r.String(maxInt)
		if err != nil {
			return nil, err
		}
		e.Name = string(name)
		if e.Cookie, err = r.Uint64(); err != nil {
			return nil, err
		}
		if plus {
			if e.Attr, err = postOpAttr(r); err != nil {
				return nil, err
			}
			if e.FH, err = decodePostOpFH(r); err != nil {
				return nil, err
			}
		}
		p.Entries = append(p.Entries, e)
	}
	p.EOF, err = r.Bool()
	return &p, err
}

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
			return all, &Error{Proc: ProcName(ProgNFS, 3, ProcReaddir), Status: StatusTooSmall}
		}
	}
}
