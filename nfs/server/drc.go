package server

import (
	"hash/crc32"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/monotime"
	"github.com/go-rpcrdma/rpcrdma/nfs"
)

// Defaults of the duplicate request cache.
const (
	// DefaultDRCSize is the number of replies the cache keeps.
	DefaultDRCSize = 4096
	// DefaultDRCMaxAge is how long a reply is kept: knfsd's RC_EXPIRE
	// (120 s), well beyond the Linux client's retransmission timeout over
	// RDMA (timeo=600 deciseconds, after which it reconnects and resends).
	DefaultDRCMaxAge = 2 * time.Minute
	// drcChecksumLen is how much of a call's arguments the key's checksum
	// covers, as knfsd's RC_CSUMLEN.
	drcChecksumLen = 256
)

// nonIdempotent reports whether an NFSv3 procedure changes state so that
// executing it twice may give another reply than executing it once (RFC 1813
// §4.10 "Duplicate request cache" lists them): the replies of those are
// cached.
func nonIdempotent(proc uint32) bool {
	switch proc {
	case nfs.ProcSetattr, nfs.ProcWrite, nfs.ProcCreate, nfs.ProcMkdir, nfs.ProcSymlink, nfs.ProcMknod,
		nfs.ProcRemove, nfs.ProcRmdir, nfs.ProcRename, nfs.ProcLink:
		return true
	}
	return false
}

// drcKey identifies a call as knfsd's reply cache does: XID, client,
// program, version and procedure, the length of the arguments and a
// checksum of their first bytes (an XID reused by another call with other
// arguments is not a retransmission). The client is its host address
// without the port: a Linux client that reconnects after a timeout
// retransmits from another port (always over RPC-over-RDMA).
type drcKey struct {
	xid              uint32
	client           string
	prog, vers, proc uint32
	argLen           int
	sum              uint32
}

// newDRCKey returns the key of a call whose arguments are args.
func newDRCKey(client string, xid, prog, vers, proc uint32, args []byte) drcKey {
	return drcKey{xid: xid, client: client, prog: prog, vers: vers, proc: proc, argLen: len(args),
		sum: crc32.ChecksumIEEE(args[:min(len(args), drcChecksumLen)])}
}

// drcEntry is one cached call: in progress until done is closed, then
// reply is its reply. Every call the cache records is answered: its reply
// is recorded (complete) before it is sent, whether or not its
// connection is still there.
type drcEntry struct {
	key drcKey
	// ended: the call was answered (complete: reply holds the reply) or
	// abandoned (reply nil). done, made only when a retransmission waits
	// for the call (drc.wait), is closed then. Both under drc.mu.
	ended bool
	done  chan struct{}
	reply []byte
	at    time.Time // when the reply was recorded (complete)
	// prev and next link the entry into the cache's LRU list (an
	// intrusive list: no allocation of its own per call).
	prev, next *drcEntry
}

// DRCStats are the counters of the duplicate request cache.
type DRCStats struct {
	// Hits counts retransmissions answered from the cache (after waiting
	// for the original when it was still in progress); Misses the
	// non-idempotent calls executed; Evictions the entries dropped to
	// bound the cache.
	Hits, Misses, Evictions uint64
	// Entries is the number of entries held.
	Entries int
}

// drc is a duplicate request cache (RFC 1813 §4.10; "Improving the
// Performance and Correctness of an NFS Server", Juszczak 1989, as knfsd
// implements it): the replies of recent non-idempotent calls, bounded in
// number and age, least recently used first out.
type drc struct {
	size   int
	maxAge time.Duration
	now    func() time.Time

	mu      sync.Mutex
	entries map[drcKey]*drcEntry
	lru     drcEntry // the LRU list's sentinel: lru.next is the most recent
	n       DRCStats
}

func newDRC(size int, maxAge time.Duration) *drc {
	if size <= 0 {
		size = DefaultDRCSize
	}
	if maxAge <= 0 {
		maxAge = DefaultDRCMaxAge
	}
	d := &drc{size: size, maxAge: maxAge, now: monotime.Now, entries: map[drcKey]*drcEntry{}}
	d.lru.prev, d.lru.next = &d.lru, &d.lru
	return d
}

// pushFrontLocked links e at the front of the LRU list.
func (d *drc) pushFrontLocked(e *drcEntry) {
	e.prev, e.next = &d.lru, d.lru.next
	e.prev.next, e.next.prev = e, e
}

// unlinkLocked takes e out of the LRU list.
func (d *drc) unlinkLocked(e *drcEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// lookup returns the entry of k and true if the call is a retransmission
// (the entry may still be in progress: wait on its done channel); else it
// records k as in progress and returns its new entry and false.
func (d *drc) lookup(k drcKey) (*drcEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.entries[k]; ok {
		// Only a completed entry has an age (complete stamps it): the
		// clock is read for a retransmission, not for every call (under
		// an emulator a clock read is a system call).
		if !e.ended || d.now().Sub(e.at) <= d.maxAge {
			d.n.Hits++
			d.unlinkLocked(e)
			d.pushFrontLocked(e)
			return e, true
		}
		d.removeLocked(e)
	}
	d.n.Misses++
	e := &drcEntry{key: k}
	d.pushFrontLocked(e)
	d.entries[k] = e
	// Evict the least recently used completed entries beyond the bound;
	// calls in progress stay (there are at most as many as calls being
	// executed).
	for old := d.lru.prev; len(d.entries) > d.size && old != &d.lru; {
		prev := old.prev
		if old.ended {
			d.removeLocked(old)
			d.n.Evictions++
		}
		old = prev
	}
	return e, false
}

// complete records the reply of e's call (a copy of it), made at now (the
// caller's reading of the clock, which the reply's metrics share), and
// wakes the retransmissions waiting for it.
func (d *drc) complete(e *drcEntry, reply []byte, now time.Time) {
	cp := append([]byte(nil), reply...)
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.ended {
		return
	}
	e.reply, e.at = cp, now
	d.endLocked(e)
}

// endLocked marks e's call answered or abandoned, and wakes the
// retransmissions waiting for it.
func (d *drc) endLocked(e *drcEntry) {
	e.ended = true
	if e.done != nil {
		close(e.done)
	}
}

// wait returns a channel closed once e's call is answered or abandoned, or
// nil if it is already: its reply (nil if abandoned) may then be read.
// The channel is made on the first wait, so that a call nobody
// retransmits costs none.
func (d *drc) wait(e *drcEntry) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.ended {
		return nil
	}
	if e.done == nil {
		e.done = make(chan struct{})
	}
	return e.done
}

// abandon forgets e, a call in progress that was not answered and is to be
// executed again (errWouldBlock), which makes an entry of its own then. A
// retransmission that found e and waits for its reply is woken with none
// (replay sends nothing: the execution again answers the XID).
func (d *drc) abandon(e *drcEntry) {
	if e == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.ended {
		return
	}
	if d.entries[e.key] == e {
		d.removeLocked(e)
	}
	d.endLocked(e)
}

func (d *drc) removeLocked(e *drcEntry) {
	delete(d.entries, e.key)
	d.unlinkLocked(e)
}

func (d *drc) stats() DRCStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.n
	s.Entries = len(d.entries)
	return s
}
