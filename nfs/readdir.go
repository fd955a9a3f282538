package nfs

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io/fs"
	"sort"

	"github.com/go-git/go-billy/v5"
	gonfs "github.com/willscott/go-nfs"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Directory listings (RFC 1813 §3.3.16 READDIR, §3.3.17 READDIRPLUS) are
// answered by the dispatch layer, not by go-nfs. go-nfs v0.0.4 estimates
// every entry at 512 bytes against maxcount (a READDIRPLUS entry with a
// short name and a 32-byte handle is about 170), counts name+20 bytes per
// entry against dircount, which the Linux client sets to maxcount/8
// before Linux 5.18, and stops at HandleLimit()/2 entries: it fills a
// third or less of the client's reply buffer, and the client calls again.
// Its cookies are indexes into a listing sorted by name, valid only while
// the listing is kept (two seconds in DirHandler) or unchanged: a create
// or remove in between shifts them and the client sees duplicates or
// misses entries.
//
// Here a reply is filled up to maxcount (READDIRPLUS) or count (READDIR),
// measured as RFC 1813 defines them: the whole READDIRPLUS3resok or
// READDIR3resok. dircount is ignored, as knfsd ignores it (the Linux client
// sends maxcount/8, or maxcount since 5.18, "to make sure dircount is big
// enough"). A cookie is a 63-bit hash of the entry's name and entries are
// returned in cookie order, so a cookie names a place in the directory
// that creates and removes do not move: a listing resumed after them
// neither repeats nor skips the entries that stayed. "." and ".." have the
// cookies 1 and 2, which no name hashes to.
const (
	nfs3ErrTooSmall = 10005

	cookieDot    = 1 // after "."
	cookieDotDot = 2 // after ".."
	cookieFirst  = 3 // the smallest cookie of a name
)

// readdirArgs holds READDIR3args or READDIRPLUS3args (RFC 1813 §3.3.16,
// §3.3.17): for READDIR, maxcount is its count and dircount is 0.
type readdirArgs struct {
	dir      []byte
	cookie   uint64
	verf     uint64
	dircount uint32
	maxcount uint32
}

// decodeReaddirArgs decodes READDIR3args, or READDIRPLUS3args if plus.
//
//	struct READDIR3args { nfs_fh3 dir; cookie3 cookie; cookieverf3 cookieverf; count3 count; };
//	struct READDIRPLUS3args { nfs_fh3 dir; cookie3 cookie; cookieverf3 cookieverf;
//	                          count3 dircount; count3 maxcount; };
func decodeReaddirArgs(args []byte, plus bool) (readdirArgs, bool) {
	r := xdr.NewReader(args)
	var a readdirArgs
	var err [5]error
	a.dir, err[0] = r.Opaque(nfs3FHSize)
	a.cookie, err[1] = r.Uint64()
	a.verf, err[2] = r.Uint64()
	if plus {
		a.dircount, err[3] = r.Uint32()
	}
	a.maxcount, err[4] = r.Uint32()
	if errors.Join(err[:]...) != nil {
		return readdirArgs{}, false
	}
	return a, true
}

// dirEntry is one entry of a listing in cookie order.
type dirEntry struct {
	name   string
	cookie uint64
	info   fs.FileInfo
}

// nameCookie is the cookie of the entry name (RFC 1813 §3.3.16, cookie3):
// a 63-bit FNV-1a hash, at least cookieFirst. 63 bits, because the Linux
// client hands cookies to applications as directory offsets (off_t).
func nameCookie(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	c := h.Sum64() >> 1
	if c < cookieFirst {
		c += cookieFirst
	}
	return c
}

// byCookie orders a listing by cookie (names break ties between the rare
// names with the same cookie).
func byCookie(contents []fs.FileInfo) []dirEntry {
	ents := make([]dirEntry, len(contents))
	for i, fi := range contents {
		ents[i] = dirEntry{name: fi.Name(), cookie: nameCookie(fi.Name()), info: fi}
	}
	sort.Slice(ents, func(i, j int) bool {
		if ents[i].cookie != ents[j].cookie {
			return ents[i].cookie < ents[j].cookie
		}
		return ents[i].name < ents[j].name
	})
	return ents
}

// listDir returns the listing of the directory name and its cookie
// verifier. A handler that keeps listings (go-nfs's CachingHandler, as
// DirHandler is) is asked first for the listing the client's verifier
// names, and keeps a listing read here under the verifier go-nfs would
// give it; otherwise the verifier is a hash of the names. Either way a
// verifier only saves reading the directory again: the cookies do not
// depend on it.
func (s *Server) listDir(fsys billy.Filesystem, name string, a *readdirArgs) ([]fs.FileInfo, uint64, error) {
	ch, caching := s.handler.(gonfs.CachingHandler)
	if caching && a.cookie != 0 && a.verf != 0 {
		if contents := ch.DataForVerifier(name, a.verf); contents != nil {
			return contents, a.verf, nil
		}
	}
	contents, err := fsys.ReadDir(name)
	if err != nil {
		return nil, 0, err
	}
	sort.Slice(contents, func(i, j int) bool { return contents[i].Name() < contents[j].Name() })
	if caching {
		return contents, ch.VerifierFor(name, contents), nil
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	for _, c := range contents {
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(c.Name()))
	}
	return contents, h.Sum64() | 1, nil
}

// XDR sizes of the parts of a READDIR3resok and READDIRPLUS3resok (RFC
// 1813 §3.3.16, §3.3.17).
const (
	// readdirResokFixed: dir_attributes (post_op_attr with attributes),
	// cookieverf, the value_follows word that ends the list, eof.
	readdirResokFixed = postOpAttrMax + verfSize + 4 + 4
	// entry3Fixed: value_follows, fileid, the name's length, cookie.
	entry3Fixed = 4 + 8 + 4 + 8
	// entryplus3Attr: name_attributes with attributes; entryplus3FH:
	// name_handle's handle_follows and length.
	entryplus3Attr = postOpAttrMax
	entryplus3FH   = 4 + 4
)

// pad4 rounds n up to a multiple of 4 (XDR alignment).
func pad4(n int) int { return (n + 3) &^ 3 }

// readdir executes READDIR (RFC 1813 §3.3.16), or READDIRPLUS (§3.3.17)
// if plus, and returns its results; ok is false if the arguments do not
// decode.
//
//	READDIR3resok: post_op_attr dir_attributes; cookieverf3 cookieverf; dirlist3 reply;
//	entry3: fileid3 fileid; filename3 name; cookie3 cookie; entry3 *nextentry;
//	READDIRPLUS3resok: post_op_attr dir_attributes; cookieverf3 cookieverf; dirlistplus3 reply;
//	entryplus3: fileid3 fileid; filename3 name; cookie3 cookie;
//	            post_op_attr name_attributes; post_op_fh3 name_handle; entryplus3 *nextentry;
//	dirlist3, dirlistplus3: the entries, then bool eof;
//	READDIR3resfail, READDIRPLUS3resfail: post_op_attr dir_attributes;
func (s *Server) readdir(args []byte, plus bool) (results []byte, ok bool) {
	a, ok := decodeReaddirArgs(args, plus)
	if !ok {
		return nil, false
	}
	fsys, p, err := s.handler.FromHandle(a.dir)
	if err != nil {
		return readdirFail(nfs3ErrStale, nil), true
	}
	dirName := fsys.Join(p...)
	dirAttr := statAttr(fsys, dirName)
	switch {
	case dirAttr == nil:
		return readdirFail(nfs3ErrStale, nil), true
	case dirAttr.Type != gonfs.FileTypeDirectory:
		return readdirFail(nfs3ErrNotDir, dirAttr), true
	}
	contents, verf, err := s.listDir(fsys, dirName, &a)
	if err != nil {
		status := uint32(nfs3ErrIO)
		if errors.Is(err, fs.ErrPermission) {
			status = nfs3ErrAcces
		}
		return readdirFail(status, dirAttr), true
	}
	ents := byCookie(contents)

	// The budget: the client's count or maxcount, and what one message
	// of this server can carry.
	budget := int(a.maxcount)
	if limit := s.maxMsg - replyHeaderMax - statusSize; budget > limit {
		budget = limit
	}
	budget -= readdirResokFixed
	maxEntries := len(ents) + 2
	if plus {
		if hl := s.handler.HandleLimit() / 2; hl > 0 && hl < maxEntries {
			// go-nfs's caching handler forgets the oldest handles
			// past its limit: a reply must not outlive its own.
			maxEntries = hl
		}
	}

	// A DirHandler's own directory: attributes and handles through one
	// descriptor of it.
	var de *dirEntries
	if dh, ok := s.handler.(*DirHandler); ok && plus && fsys == billy.Filesystem(dh.dir) {
		if de, err = dh.openEntries(dirName); err == nil {
			defer de.close()
		} else {
			de = nil
		}
	}

	var list bytes.Buffer
	var scratch []byte // one entry's XDR, reused
	n := 0
	add := func(name string, cookie uint64, fileid uint64, attr *gonfs.FileAttribute, fh []byte) bool {
		size := entry3Fixed + pad4(len(name))
		if plus {
			size += 4 + entryplus3FH + pad4(len(fh))
			if attr != nil {
				size += entryplus3Attr
			}
		}
		if size > budget || n == maxEntries {
			return false
		}
		budget -= size
		n++
		b := xdr.AppendUint32(scratch[:0], 1) // value_follows
		b = xdr.AppendUint64(b, fileid)
		b = xdr.AppendString(b, name)
		b = xdr.AppendUint64(b, cookie)
		if plus {
			b = appendPostOpAttr(b, attr)
			b = xdr.AppendUint32(b, 1) // handle_follows
			b = xdr.AppendOpaque(b, fh)
		}
		list.Write(b)
		scratch = b
		return true
	}

	full := false
	// "." and "..", when the listing starts before them.
	if a.cookie < cookieDotDot {
		type dot struct {
			name   string
			cookie uint64
			path   []string
		}
		parent := p
		if len(p) > 0 {
			parent = p[:len(p)-1]
		}
		dots := []dot{{".", cookieDot, p}, {"..", cookieDotDot, parent}}
		if a.cookie == cookieDot {
			dots = dots[1:]
		}
		for _, d := range dots {
			attr := dirAttr
			if d.name == ".." {
				if attr = statAttr(fsys, fsys.Join(d.path...)); attr == nil {
					attr = dirAttr
				}
			}
			var fh []byte
			if plus {
				fh = s.handler.ToHandle(fsys, d.path)
			}
			if !add(d.name, d.cookie, attr.Fileid, attr, fh) {
				full = true
				break
			}
		}
	}
	// The names, from the first past the cookie.
	i := sort.Search(len(ents), func(i int) bool { return ents[i].cookie > a.cookie })
	if a.cookie < cookieFirst {
		i = 0
	}
	for !full && i < len(ents) {
		// Names with the same cookie go in one reply, or none: the
		// client resumes after the cookie.
		j := i + 1
		for j < len(ents) && ents[j].cookie == ents[i].cookie {
			j++
		}
		mark, markBudget, markN := list.Len(), budget, n
		for _, e := range ents[i:j] {
			epath := append(p[:len(p):len(p)], e.name)
			name := fsys.Join(epath...)
			fileid := statFileID(e.info, name)
			var attr *gonfs.FileAttribute
			var fh []byte
			if plus {
				// Fresh attributes: the listing may be a kept one.
				var fi fs.FileInfo
				var err error
				if de != nil {
					fi, fh, err = de.entry(e.name)
				} else {
					fi, err = fsys.Lstat(name)
				}
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed since the listing was read
				}
				if err == nil {
					attr = fileAttr(fi, name)
					fileid = attr.Fileid
				}
				if de == nil || err != nil {
					fh = s.handler.ToHandle(fsys, epath)
				}
			}
			if !add(e.name, e.cookie, fileid, attr, fh) {
				full = true
				break
			}
		}
		if full {
			list.Truncate(mark)
			budget, n = markBudget, markN
			break
		}
		i = j
	}
	eof := !full
	if n == 0 && !eof {
		return readdirFail(nfs3ErrTooSmall, dirAttr), true
	}

	var b bytes.Buffer
	b.Write(xdr.AppendUint32(nil, nfs3OK))
	b.Write(appendPostOpAttr(nil, dirAttr))
	b.Write(xdr.AppendUint64(nil, verf))
	b.Write(list.Bytes())
	tail := xdr.AppendUint32(nil, 0) // no more entries
	tail = xdr.AppendBool(tail, eof)
	b.Write(tail)
	return b.Bytes(), true
}

// readdirFail encodes READDIR3resfail or READDIRPLUS3resfail: the status
// and the directory's post_op_attr (RFC 1813 §3.3.16, §3.3.17).
func readdirFail(status uint32, dirAttr *gonfs.FileAttribute) []byte {
	var b bytes.Buffer
	b.Write(xdr.AppendUint32(nil, status))
	b.Write(appendPostOpAttr(nil, dirAttr))
	return b.Bytes()
}
