// Package creds runs a file system operation with the identity of the NFS
// caller it serves, as knfsd's nfsd_setuser and NFS-Ganesha's VFS backend
// do: the AUTH_SYS credential of the call (RFC 5531 §A.2), mapped by the
// export's squash rules (Policy), becomes the file system uid, gid and
// supplementary groups of the OS thread that makes the system calls, so
// that the kernel's own permission checks (modes, ACLs, the sticky and
// setgid rules, the owner's privileges) decide. While a thread's fsuid is
// not 0 the kernel also drops its file system capabilities
// (CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, ...: capabilities(7), "Effect
// of user ID changes on capabilities"), and gives them back when it
// returns to 0.
//
// Only the calling thread changes: setfsuid(2), setfsgid(2) and the raw
// setgroups(2) system call act on one thread, unlike the standard
// library's syscall.Setuid family, which changes every thread of the
// process.
package creds

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// MaxGroups is the largest number of supplementary groups an AUTH_SYS
// credential carries (RFC 5531 §A.2: gids<16>).
const MaxGroups = 16

// Nobody is the anonymous uid and gid of a Policy that names none (the
// default of exports(5)'s anonuid and anongid).
const Nobody = 65534

// invalidID is (uid_t)-1, which is never a user or a group: knfsd
// squashes it to the anonymous identity.
const invalidID = 1<<32 - 1

// Cred is the identity a file system operation runs with: a value
// (its groups held in place), so that carrying one through a call
// allocates nothing.
type Cred struct {
	UID, GID uint32
	n        uint8
	groups   [MaxGroups]uint32
}

// NewCred returns the identity uid, gid with the supplementary groups
// (the first MaxGroups of them).
func NewCred(uid, gid uint32, groups []uint32) Cred {
	c := Cred{UID: uid, GID: gid}
	c.n = uint8(copy(c.groups[:], groups))
	return c
}

// Groups returns the supplementary groups, in c.
func (c *Cred) Groups() []uint32 { return c.groups[:c.n] }

// String formats c as "uid=1234 gid=100 groups=[10 20]".
func (c Cred) String() string {
	return fmt.Sprintf("uid=%d gid=%d groups=%v", c.UID, c.GID, c.Groups())
}

// Equal reports whether c and d are the same identity.
func (c Cred) Equal(d Cred) bool { return c == d }

// InGroup reports whether gid is c's group or one of its supplementary
// groups (the kernel's in_group_p).
func (c *Cred) InGroup(gid uint32) bool {
	if c.GID == gid {
		return true
	}
	for _, g := range c.Groups() {
		if g == gid {
			return true
		}
	}
	return false
}

// Squash says which callers lose their identity (exports(5)).
type Squash uint8

const (
	// RootSquash, the default, maps uid 0 to the anonymous uid and gid 0
	// (primary or supplementary) to the anonymous gid.
	RootSquash Squash = iota
	// NoRootSquash keeps every identity, root's included.
	NoRootSquash
	// AllSquash maps every caller to the anonymous uid and gid, without
	// supplementary groups.
	AllSquash
)

// String returns the exports(5) option: "root_squash", "no_root_squash"
// or "all_squash".
func (s Squash) String() string {
	switch s {
	case RootSquash:
		return "root_squash"
	case NoRootSquash:
		return "no_root_squash"
	case AllSquash:
		return "all_squash"
	}
	return fmt.Sprintf("Squash(%d)", uint8(s))
}

// ParseSquash parses the names String returns.
func ParseSquash(s string) (Squash, error) {
	for _, q := range [...]Squash{RootSquash, NoRootSquash, AllSquash} {
		if q.String() == s {
			return q, nil
		}
	}
	return 0, fmt.Errorf("creds: unknown squash %q (root_squash, no_root_squash or all_squash)", s)
}

// Policy maps the identity a caller claims to the one its operations run
// with, as an export's squash options do in knfsd (fs/nfsd/auth.c).
type Policy struct {
	// Squash says who is squashed; the zero value is RootSquash.
	Squash Squash
	// AnonUID and AnonGID are the anonymous identity that squashed
	// callers and AUTH_NONE calls get; 0 means Nobody (65534).
	AnonUID, AnonGID uint32
}

// Anonymous returns the anonymous identity of p.
func (p Policy) Anonymous() Cred {
	c := Cred{UID: p.AnonUID, GID: p.AnonGID}
	if c.UID == 0 {
		c.UID = Nobody
	}
	if c.GID == 0 {
		c.GID = Nobody
	}
	return c
}

// Map returns the identity a caller claiming c runs with; uid and gid
// (uid_t)-1 become the anonymous ones.
func (p Policy) Map(c Cred) Cred {
	anon := p.Anonymous()
	if p.Squash == AllSquash {
		return anon
	}
	root := p.Squash == RootSquash
	squashUID := func(id uint32) uint32 {
		if id == invalidID || (root && id == 0) {
			return anon.UID
		}
		return id
	}
	squashGID := func(id uint32) uint32 {
		if id == invalidID || (root && id == 0) {
			return anon.GID
		}
		return id
	}
	out := Cred{UID: squashUID(c.UID), GID: squashGID(c.GID), n: c.n}
	for i, g := range c.Groups() {
		out.groups[i] = squashGID(g)
	}
	return out
}

// ErrNotApplied means the kernel did not give a thread the identity asked
// for (the process lacks CAP_SETUID or CAP_SETGID, or the id is not
// mapped in its user namespace); the function did not run.
var ErrNotApplied = errors.New("creds: the kernel did not apply the caller's identity")

// Switcher runs functions with a caller's identity. It is safe for
// concurrent use.
//
// The functions run on threads of the Switcher's own, never on the
// caller's: a thread whose identity was ever changed is never given back
// to the Go scheduler, because its credentials are no longer the ones the
// process opened its files with, and the kernel refuses RDMA commands
// (uverbs, rdma_ucm) on descriptors opened with other credentials than
// the caller's ("changed security contexts after opening file
// descriptor"), even once the ids are restored. Each worker goroutine is
// locked to its thread for life and keeps the last identity it took, so
// that a run of calls by one user switches once; an idle worker ends
// after IdleTimeout, and its thread with it.
type Switcher struct {
	self    Cred  // the process's own file system identity
	enabled bool  // identities can be switched
	why     error // why not, when !enabled

	jobs     chan *job
	idle     atomic.Int32  // workers waiting for a job
	handOffs atomic.Uint64 // functions Run gave a worker

	mu      sync.Mutex
	workers int // running
}

// MaxWorkers bounds the threads a Switcher runs functions on: past it,
// Run waits for one to be free (as a call waits for one of knfsd's
// threads).
const MaxWorkers = 256

// IdleTimeout is how long a worker waits for a function before it ends.
const IdleTimeout = time.Minute

// job is one Run: the identity, the function, where the worker says it
// is done.
type job struct {
	c    Cred
	f    func()
	done chan error
}

var jobs = sync.Pool{New: func() any { return &job{done: make(chan error, 1)} }}

// NewSwitcher probes whether this process may take other identities: it
// switches one thread, which then ends, to Nobody. When it may not,
// Enabled is false, Reason says why, and Run runs every function with the
// process's own identity.
func NewSwitcher() *Switcher {
	s := &Switcher{self: current(), jobs: make(chan *job)}
	probe := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		probe <- apply(Cred{UID: Nobody, GID: Nobody})
	}()
	if err := <-probe; err != nil {
		s.why = err
	} else {
		s.enabled = true
	}
	return s
}

// current returns the calling thread's file system identity.
func current() Cred {
	uid, _ := unix.SetfsuidRetUid(-1) // -1 is no uid: the call only reports
	gid, _ := unix.SetfsgidRetGid(-1)
	c := Cred{UID: uint32(uid), GID: uint32(gid)}
	if gs, err := unix.Getgroups(); err == nil {
		for _, g := range gs[:min(len(gs), MaxGroups)] {
			c.groups[c.n] = uint32(g)
			c.n++
		}
	}
	return c
}

// Enabled reports whether Run switches identities.
func (s *Switcher) Enabled() bool { return s.enabled }

// HandOffs returns how many functions Run has handed to a worker.
func (s *Switcher) HandOffs() uint64 { return s.handOffs.Load() }

// Reason is why Run cannot switch identities (nil when it can).
func (s *Switcher) Reason() error { return s.why }

// Self is the process's own file system identity, which Run uses for
// every function when identities cannot be switched.
func (s *Switcher) Self() Cred { return s.self }

// Run calls f with c as the file system identity of the thread it runs
// on, and returns once f has returned. When c acts as the process's own
// identity (inPlace: the same, or root's with other groups), or
// identities cannot be switched (Enabled), f runs on the calling
// goroutine; otherwise on one of the Switcher's workers, so f
// must not use the caller's thread-bound state (no RDMA verbs). If the
// kernel does not apply c, f does not run and Run returns ErrNotApplied.
func (s *Switcher) Run(c Cred, f func()) error {
	if !s.HandsOff(c) {
		f()
		return nil
	}
	if s.idle.Load() == 0 {
		s.mu.Lock()
		if s.workers < MaxWorkers {
			s.workers++
			go s.work()
		}
		s.mu.Unlock()
	}
	s.handOffs.Add(1)
	j := jobs.Get().(*job)
	j.c, j.f = c, f
	s.jobs <- j
	err := <-j.done
	j.f = nil
	jobs.Put(j)
	return err
}

// HandsOff reports whether Run(c, f) would run f on one of the
// Switcher's threads and wait for it, rather than on the caller's.
func (s *Switcher) HandsOff(c Cred) bool { return s.enabled && !s.inPlace(c) }

// inPlace reports whether c acts as the process's own identity: it is
// that identity, or root with the process's uid 0 and gid, whose groups
// decide nothing (root's file system capabilities pass every permission
// check the groups would, and new files take the gid or a setgid
// directory's group either way).
func (s *Switcher) inPlace(c Cred) bool {
	if c.UID == s.self.UID && c.GID == s.self.GID {
		return c.UID == 0 || c.Equal(s.self)
	}
	return false
}

// work runs jobs on a thread of its own until it has been idle for
// IdleTimeout, or its thread's identity is in doubt.
func (s *Switcher) work() {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	defer func() {
		s.mu.Lock()
		s.workers--
		s.mu.Unlock()
	}()
	cur := s.self
	idle := time.NewTimer(IdleTimeout)
	defer idle.Stop()
	for {
		s.idle.Add(1)
		select {
		case j := <-s.jobs:
			s.idle.Add(-1)
			if !cur.Equal(j.c) {
				if err := apply(j.c); err != nil {
					j.done <- err
					return
				}
				cur = j.c
			}
			j.f()
			j.done <- nil
			idle.Reset(IdleTimeout)
		case <-idle.C:
			s.idle.Add(-1)
			return
		}
	}
}

// apply makes c the calling thread's file system identity: the groups
// first, then fsgid and fsuid (setting fsuid last, while the thread still
// has CAP_SETGID), each checked by reading it back.
func apply(c Cred) error {
	var groups [MaxGroups]int
	for i, g := range c.Groups() {
		groups[i] = int(g)
	}
	if err := unix.Setgroups(groups[:c.n]); err != nil {
		return fmt.Errorf("%w: setgroups: %w", ErrNotApplied, err)
	}
	_, _ = unix.SetfsgidRetGid(int(c.GID))
	if got, _ := unix.SetfsgidRetGid(-1); uint32(got) != c.GID {
		return fmt.Errorf("%w: fsgid %d, not %d", ErrNotApplied, got, c.GID)
	}
	_, _ = unix.SetfsuidRetUid(int(c.UID))
	if got, _ := unix.SetfsuidRetUid(-1); uint32(got) != c.UID {
		return fmt.Errorf("%w: fsuid %d, not %d", ErrNotApplied, got, c.UID)
	}
	return nil
}
