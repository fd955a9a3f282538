package nfs

import (
	"crypto/sha256"
	"encoding/binary"
	"io/fs"
	"sync"
	"time"
)

// Listings of a DirHandler: go-nfs reads the whole directory again for
// every READDIR and READDIRPLUS call unless the handler keeps the listing
// (its CachingHandler interface). A client with a 4 KiB reply size needs
// hundreds of calls for a directory of thousands, so DirHandler keeps the
// last few listings for a short while. The verifier is a hash of the
// directory's name and entry names, so a listing read again after expiry
// gets the same verifier if nothing changed, and the client's cookies stay
// good.
const (
	listingsKept = 16
	listingTTL   = 2 * time.Second
)

type listing struct {
	verifier uint64
	path     string
	contents []fs.FileInfo
	at       time.Time
}

type listings struct {
	mu   sync.Mutex
	kept []listing // oldest first
}

// VerifierFor returns the cookie verifier of contents, the listing of the
// directory path, and keeps the listing.
func (h *DirHandler) VerifierFor(path string, contents []fs.FileInfo) uint64 {
	sum := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(path)))
	sum.Write(n[:])
	sum.Write([]byte(path))
	for _, c := range contents {
		binary.BigEndian.PutUint64(n[:], uint64(len(c.Name())))
		sum.Write(n[:])
		sum.Write([]byte(c.Name()))
	}
	v := binary.BigEndian.Uint64(sum.Sum(nil))
	if v == 0 {
		v = 1 // 0 means "no verifier" to go-nfs
	}
	x := &h.listings
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, l := range x.kept {
		if l.verifier == v && l.path == path {
			x.kept = append(x.kept[:i], x.kept[i+1:]...)
			break
		}
	}
	if len(x.kept) == listingsKept {
		x.kept = x.kept[1:]
	}
	x.kept = append(x.kept, listing{verifier: v, path: path, contents: contents, at: time.Now()})
	return v
}

// DataForVerifier returns the kept listing of path with verifier, or nil.
func (h *DirHandler) DataForVerifier(path string, verifier uint64) []fs.FileInfo {
	x := &h.listings
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, l := range x.kept {
		if l.verifier == verifier && l.path == path && time.Since(l.at) < listingTTL {
			return l.contents
		}
	}
	return nil
}
