package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"hash"
	"sync"
)

// exportID is what a handle of an export is made with: the export's id,
// which the handle holds, and the key its MAC is made with.
type exportID struct {
	id  [8]byte
	key *handleKey
}

// minHandleKey is the shortest DirHandlerOptions.HandleKey taken.
const minHandleKey = 16

// handleKey makes and checks the MACs of handles: the first fhMACLen
// bytes of HMAC-SHA256 under the key. It is safe for concurrent use.
type handleKey struct {
	macs sync.Pool // of *handleMAC
}

// handleMAC is one keyed HMAC state with room for its sum, so that a
// MAC costs no allocation.
type handleMAC struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

// processKey is the key of DirHandlers given none: random, made once per
// process.
var processKey = sync.OnceValue(func() []byte {
	k := make([]byte, HandleKeySize)
	_, _ = rand.Read(k) // crypto/rand.Read does not fail (Go 1.24)
	return k
})

// newHandleKey returns the handleKey of key (DirHandlerOptions.HandleKey;
// nil: processKey).
func newHandleKey(key []byte) (*handleKey, error) {
	if key == nil {
		key = processKey()
	}
	if len(key) < minHandleKey {
		return nil, fmt.Errorf("nfs: DirHandlerOptions.HandleKey: %d bytes, want at least %d", len(key), minHandleKey)
	}
	key = append([]byte(nil), key...)
	k := &handleKey{}
	k.macs.New = func() any { return &handleMAC{h: hmac.New(sha256.New, key)} }
	return k, nil
}

// sum returns the MAC of b.
func (k *handleKey) sum(b []byte) (mac [fhMACLen]byte) {
	m := k.macs.Get().(*handleMAC)
	m.h.Reset()
	m.h.Write(b)
	copy(mac[:], m.h.Sum(m.sum[:0]))
	k.macs.Put(m)
	return mac
}

// verify reports whether mac is the MAC of b, in constant time.
func (k *handleKey) verify(b, mac []byte) bool {
	want := k.sum(b)
	return hmac.Equal(want[:], mac)
}
