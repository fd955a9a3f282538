package server

import (
	"errors"
	"hash/fnv"
	"path"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Directory listings (RFC 1813 §3.3.16 READDIR, §3.3.17 READDIRPLUS).
//
// A reply is filled up to maxcount (READDIRPLUS) or count (READDIR),
// measured as RFC 1813 defines them: the whole READDIRPLUS3resok or
// READDIR3resok. dircount is ignored, as knfsd ignores it (the Linux client
// sends maxcount/8, or maxcount since 5.18, "to make sure dircount is big
// enough"). A cookie is a 63-bit hash of the entry's name and entries are
// returned in cookie order, so a cookie names a place in the directory
// that creates and removes do not move: a listing resumed after them
// neither repeats nor skips the entries that stayed. "." and ".." have the
// cookies 1 and 2, which no name hashes to.
const (
	cookieDot    = 1 // after "."
	cookieDotDot = 2 // after ".."
	cookieFirst  = 3 // the smallest cookie of a name
)

// dirEntry is one entry of a listing in cookie order.
type dirEntry struct {
	dirent
	cookie uint64
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
func byCookie(contents []dirent) []dirEntry {
	ents := make([]dirEntry, len(contents))
	for i, d := range contents {
		ents[i] = dirEntry{dirent: d, cookie: nameCookie(d.name)}
	}
	sort.Slice(ents, func(i, j int) bool {
		if ents[i].cookie != ents[j].cookie {
			return ents[i].cookie < ents[j].cookie
		}
		return ents[i].name < ents[j].name
	})
	return ents
}

// readdirResokFixed is the part of a READDIR3resok or READDIRPLUS3resok
// (RFC 1813 §3.3.16, §3.3.17) outside its entries: dir_attributes
// (post_op_attr with attributes), cookieverf, the value_follows word that
// ends the list, eof.
const readdirResokFixed = nfs.PostOpAttrMax + nfs.VerfSize + 4 + 4

// readdir executes READDIR (RFC 1813 §3.3.16), or READDIRPLUS (§3.3.17)
// if plus, and returns its reply: the entries of the directory past the
// cookie that fit the client's count, with each entry's attributes and
// handle for READDIRPLUS, read fresh through the directory's descriptor
// (the listing itself may be a kept one, see listings). ok is false if the
// arguments do not decode.
func (s *Server) readdir(c *call, args []byte, plus bool) (reply []byte, ok bool) {
	r := xdr.NewReader(args)
	var dirFH []byte
	var cookie uint64
	var maxcount uint32
	if plus {
		var a nfs3.ReaddirplusArgs
		if a.Decode(&r) != nil {
			return nil, false
		}
		dirFH, cookie, maxcount = a.Dir, a.Cookie, a.MaxCount
	} else {
		var a nfs3.ReaddirArgs
		if a.Decode(&r) != nil {
			return nil, false
		}
		dirFH, cookie, maxcount = a.Dir, a.Cookie, a.Count
	}
	b := c.successReply()
	start := len(b)
	fail := func(err error, dirAttr nfs3.PostOpAttr) ([]byte, bool) {
		// READDIR3resfail and READDIRPLUS3resfail are the same.
		res := nfs3.ReaddirRes{Status: statusOf(err), DirAttr: dirAttr}
		return res.Append(b[:start]), true
	}
	dir, err := c.dh.openObject(dirFH)
	if err != nil {
		return fail(err, nfs3.PostOpAttr{})
	}
	defer dir.close()
	dirAttr := dir.attr()
	if !dir.isDir() {
		return fail(nfs3.ErrNotDir, dirAttr)
	}
	ents, err := c.dh.listing(dir, cookie)
	if err != nil {
		return fail(err, dirAttr)
	}

	// The budget: the client's count or maxcount, and what one message
	// of this server can carry.
	budget := int(maxcount)
	if limit := s.maxMsg - nfs.ReplyHeaderMax - nfs.StatusSize; budget > limit {
		budget = limit
	}
	budget -= readdirResokFixed

	// The cookie verifier is 0 (see listings).
	head := nfs3.ReaddirRes{Status: nfs3.OK, DirAttr: dirAttr}
	b = head.AppendHead(b)
	n := 0
	// add appends one entry if it fits.
	add := func(name string, cookie, fileid uint64, attr nfs3.PostOpAttr, fh []byte) bool {
		if plus {
			e := nfs3.EntryPlus{FileID: fileid, Name: name, Cookie: cookie, Attr: attr, FH: nfs3.PostOpFH{Set: fh != nil, FH: fh}}
			if e.Size() > budget {
				return false
			}
			budget -= e.Size()
			b = e.Append(b)
		} else {
			e := nfs3.Entry{FileID: fileid, Name: name, Cookie: cookie}
			if e.Size() > budget {
				return false
			}
			budget -= e.Size()
			b = e.Append(b)
		}
		n++
		return true
	}

	full := false
	// "." and "..", when the listing starts before them.
	if cookie < cookieDotDot {
		if cookie < cookieDot {
			full = !add(".", cookieDot, dir.st.Ino, dirAttr, dirFH)
		}
		if !full {
			// The parent, the root's being the root.
			pattr, pfh, pino := dirAttr, dirFH, dir.st.Ino
			if here, err := dir.path(); err != nil || here != "." {
				pfh = nil // not known: no handle
				if err == nil {
					if up, err := c.dh.objectAt(path.Dir(here)); err == nil {
						pattr, pfh, pino = up.attr(), up.fh, up.st.Ino
						up.close()
					}
				}
			}
			full = !add("..", cookieDotDot, pino, pattr, pfh)
		}
	}
	// The names, from the first past the cookie.
	i := sort.Search(len(ents), func(i int) bool { return ents[i].cookie > cookie })
	if cookie < cookieFirst {
		i = 0
	}
	for !full && i < len(ents) {
		// Names with the same cookie go in one reply, or none: the
		// client resumes after the cookie.
		j := i + 1
		for j < len(ents) && ents[j].cookie == ents[i].cookie {
			j++
		}
		mark, markBudget, markN := len(b), budget, n
		for _, e := range ents[i:j] {
			fileid := e.ino
			var attr nfs3.PostOpAttr
			var fh []byte
			if plus {
				// Fresh attributes: the listing may be a kept one.
				var st unix.Stat_t
				var err error
				fh, err = c.dh.entry(dir, e.name, &st)
				if errors.Is(err, unix.ENOENT) {
					continue // removed since the listing was read
				}
				if err == nil {
					attr = nfs3.PostOpAttr{Set: true, Attr: c.dh.fattr(&st)}
					fileid = st.Ino
				}
			}
			if !add(e.name, e.cookie, fileid, attr, fh) {
				full = true
				break
			}
		}
		if full {
			b, budget, n = b[:mark], markBudget, markN
			break
		}
		i = j
	}
	eof := !full
	if n == 0 && !eof {
		return fail(nfs3.ErrTooSmall, dirAttr)
	}
	return nfs3.AppendReaddirTail(b, eof), true
}

// listing returns the listing of the directory dir in cookie order: the
// kept one when the client resumes a listing (a cookie past the start) of
// a directory that has not changed since it was read, else the directory
// read now, and kept. The client's cookie verifier is not checked:
// cookies name places by name (nameCookie), whatever the listing.
func (h *DirHandler) listing(dir *object, cookie uint64) ([]dirEntry, error) {
	key := listingKeyOf(dir)
	if cookie != 0 {
		if ents := h.keptListing(key); ents != nil {
			return ents, nil
		}
	}
	fd, err := unix.Open(dir.proc(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	// In directory order: byCookie sorts them (listDir's sort by name
	// would be undone).
	contents, err := readDirents(fd)
	_ = unix.Close(fd)
	if err != nil {
		return nil, err
	}
	ents := byCookie(contents)
	h.keepListing(key, ents)
	return ents, nil
}
