package creds

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestPolicyMap(t *testing.T) {
	user := NewCred(1234, 100, []uint32{0, 10, 20})
	root := NewCred(0, 0, []uint32{0, 5})
	for _, tc := range []struct {
		name string
		p    Policy
		in   Cred
		want Cred
	}{
		{"root_squash user", Policy{}, user, NewCred(1234, 100, []uint32{Nobody, 10, 20})},
		{"root_squash root", Policy{}, root, NewCred(Nobody, Nobody, []uint32{Nobody, 5})},
		{"root_squash anon ids", Policy{AnonUID: 99, AnonGID: 98}, root, NewCred(99, 98, []uint32{98, 5})},
		{"no_root_squash root", Policy{Squash: NoRootSquash}, root, root},
		{"no_root_squash invalid ids", Policy{Squash: NoRootSquash}, Cred{UID: invalidID, GID: invalidID}, Cred{UID: Nobody, GID: Nobody}},
		{"all_squash user", Policy{Squash: AllSquash}, user, Cred{UID: Nobody, GID: Nobody}},
		{"all_squash anon ids", Policy{Squash: AllSquash, AnonUID: 7, AnonGID: 8}, user, Cred{UID: 7, GID: 8}},
		{"groups capped", Policy{}, NewCred(1, 1, make([]uint32, 20)),
			NewCred(1, 1, []uint32{Nobody, Nobody, Nobody, Nobody, Nobody, Nobody, Nobody, Nobody,
				Nobody, Nobody, Nobody, Nobody, Nobody, Nobody, Nobody, Nobody})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.Map(tc.in)
			assert.True(t, got.Equal(tc.want), "got %v, want %v", got, tc.want)
		})
	}
	// A credential is a value: changing the slice it was made from
	// changes nothing.
	g := []uint32{7}
	in := NewCred(5, 5, g)
	g[0] = 8
	assert.Equal(t, []uint32{7}, groupsOf(Policy{Squash: NoRootSquash}.Map(in)))
}

func TestParseSquash(t *testing.T) {
	for _, s := range []Squash{RootSquash, NoRootSquash, AllSquash} {
		got, err := ParseSquash(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	_, err := ParseSquash("root")
	assert.ErrorContains(t, err, "root_squash, no_root_squash or all_squash")
}

// requireRoot skips unless the test may switch identities (it runs as
// root in make test and CI).
func requireRoot(t *testing.T) *Switcher {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("switching identities needs root")
	}
	s := NewSwitcher()
	require.True(t, s.Enabled(), "root cannot switch identities: %v", s.Reason())
	return s
}

// sharedDir is a directory everyone may create in, whose files belong
// to whoever created them.
func sharedDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	require.NoError(t, os.Chmod(d, 0o777))
	require.NoError(t, os.Chmod(filepath.Dir(d), 0o755))
	return d
}

func owner(t *testing.T, name string) (uid, gid uint32) {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(name, &st))
	return st.Uid, st.Gid
}

func TestRunAsCaller(t *testing.T) {
	s := requireRoot(t)
	d := sharedDir(t)
	secret := filepath.Join(d, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("x"), 0o600))

	var readErr, createErr error
	err := s.Run(NewCred(1234, 1234, []uint32{1000}), func() {
		_, readErr = os.ReadFile(secret)
		createErr = os.WriteFile(filepath.Join(d, "mine"), nil, 0o644)
	})
	require.NoError(t, err)
	assert.ErrorIs(t, readErr, os.ErrPermission, "uid 1234 read root's 0600 file")
	require.NoError(t, createErr)
	uid, gid := owner(t, filepath.Join(d, "mine"))
	assert.Equal(t, [2]uint32{1234, 1234}, [2]uint32{uid, gid}, "owner of a file created as uid 1234")

	// The caller's own thread never changed: root reads the file.
	_, err = os.ReadFile(secret)
	require.NoError(t, err)
	assert.True(t, current().Equal(s.Self()), "identity after Run: %v, want %v", current(), s.Self())
}

func TestRunGroups(t *testing.T) {
	s := requireRoot(t)
	d := sharedDir(t)
	grp := filepath.Join(d, "grp")
	require.NoError(t, os.WriteFile(grp, []byte("x"), 0o640))
	require.NoError(t, os.Chown(grp, 0, 1000))
	read := func(c Cred) error {
		var rerr error
		require.NoError(t, s.Run(c, func() { _, rerr = os.ReadFile(grp) }))
		return rerr
	}
	assert.NoError(t, read(NewCred(1234, 1234, []uint32{1000})), "a supplementary group grants access")
	assert.NoError(t, read(Cred{UID: 1234, GID: 1000}), "the primary group grants access")
	assert.ErrorIs(t, read(NewCred(1234, 1234, []uint32{999})), os.ErrPermission)
}

// TestRunConcurrent switches many goroutines to different identities at
// once: each file must belong to the identity that created it, so no
// thread's identity leaks into another goroutine's call.
func TestRunConcurrent(t *testing.T) {
	s := requireRoot(t)
	d := sharedDir(t)
	const workers, each = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				uid := uint32(2000 + (w*each+i)%5)
				name := filepath.Join(d, fmt.Sprintf("f%d-%d", w, i))
				var werr error
				if err := s.Run(Cred{UID: uid, GID: uid}, func() { werr = os.WriteFile(name, nil, 0o600) }); err != nil {
					errs <- err
					return
				}
				if werr != nil {
					errs <- werr
					return
				}
				var st unix.Stat_t
				if err := unix.Lstat(name, &st); err != nil || st.Uid != uid || st.Gid != uid {
					errs <- fmt.Errorf("%s: owner %d:%d, want %d (%v)", name, st.Uid, st.Gid, uid, err)
					return
				}
				// Between calls the goroutine is the server again.
				if c := current(); !c.Equal(s.Self()) {
					errs <- fmt.Errorf("identity between calls: %v", c)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRunCapabilitiesDropped: a caller's operations have no file system
// capabilities even though the server is root; root's (no_root_squash)
// keep them.
func TestRunCapabilitiesDropped(t *testing.T) {
	s := requireRoot(t)
	d := sharedDir(t)
	f := filepath.Join(d, "f")
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	var chownErr error
	require.NoError(t, s.Run(Cred{UID: 1234, GID: 1234}, func() { chownErr = os.Chown(f, 1234, 1234) }))
	assert.ErrorIs(t, chownErr, os.ErrPermission, "uid 1234 chowned root's file")
	require.NoError(t, s.Run(NewCred(0, 0, []uint32{5}), func() { chownErr = os.Chown(f, 1234, 1234) }))
	assert.NoError(t, chownErr, "root (unsquashed) may chown")
}

// TestUnprivileged runs NewSwitcher in a child process without
// privilege: it reports that it cannot switch and why, and Run runs
// functions with the process's own identity.
func TestUnprivileged(t *testing.T) {
	if os.Getenv("CREDS_CHILD") == "1" {
		s := NewSwitcher()
		ran := false
		err := s.Run(Cred{UID: 4321, GID: 4321}, func() { ran = true })
		fmt.Printf("enabled=%v reason=%v ran=%v err=%v self=%v\n", s.Enabled(), s.Reason(), ran, err, s.Self())
		os.Exit(0)
	}
	out := runUnprivileged(t, "^TestUnprivileged$", "1")
	assert.Contains(t, out, "enabled=false reason=creds: the kernel did not apply")
	assert.Contains(t, out, "ran=true err=<nil> self=uid=1234 gid=1234")
}

// TestRunCallerThreadUntouched: Run never changes the credentials of the
// calling goroutine's thread, not even for a moment, since the kernel
// refuses RDMA commands from a thread whose credentials changed after the
// device was opened (it compares the credentials themselves, which no
// restore of the ids gives back). Each Run here sees, on its own locked
// thread, the same credentials before and after, and the function runs on
// another thread.
func TestRunCallerThreadUntouched(t *testing.T) {
	s := requireRoot(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := unix.Gettid()
	var ran int
	for i := range 20 {
		require.NoError(t, s.Run(NewCred(uint32(3000+i%3), 3000, nil), func() { ran = unix.Gettid() }))
		assert.NotEqual(t, self, ran, "the function ran on the caller's thread")
		assert.True(t, current().Equal(s.Self()), "the caller's thread took %v", current())
	}
}

// TestRunErrorNotApplied: an identity the kernel refuses leaves the
// function unrun. Only an unprivileged process sees it (TestUnprivileged
// covers a Switcher that knows it cannot switch); here a Switcher that
// believes it can is run in a child without privilege.
func TestRunErrorNotApplied(t *testing.T) {
	if os.Getenv("CREDS_CHILD") == "2" {
		s := &Switcher{self: current(), jobs: make(chan *job), enabled: true}
		ran := false
		err := s.Run(NewCred(4321, 4321, nil), func() { ran = true })
		fmt.Printf("ran=%v notApplied=%v\n", ran, errors.Is(err, ErrNotApplied))
		os.Exit(0)
	}
	out := runUnprivileged(t, "^TestRunErrorNotApplied$", "2")
	assert.Contains(t, out, "ran=false notApplied=true")
}

// BenchmarkRun is the cost of running a call as a caller: the switch to
// its identity and back.
func BenchmarkRun(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	s := NewSwitcher()
	c := NewCred(1234, 1234, []uint32{1000, 1001})
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Run(c, func() {}); err != nil {
			b.Fatal(err)
		}
	}
}

func groupsOf(c Cred) []uint32 { return c.Groups() }

// runUnprivileged runs the test run (a -test.run pattern) in a child
// process as uid and gid 1234, with CREDS_CHILD=child, and returns its
// output.
func runUnprivileged(t *testing.T, run, child string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a child as another user")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	// The go tool's build directory is closed to other users: run a copy.
	exe := filepath.Join(sharedDir(t), "creds.test")
	b, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, b, 0o755))
	cmd := exec.Command(exe, "-test.run="+run)
	cmd.Env = append(os.Environ(), "CREDS_CHILD="+child)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1234, Gid: 1234}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// TestRunRootInPlace: root's calls with the server's gid run on the
// calling goroutine whatever their groups (the kernel client's root sends
// its own); any other identity runs on a worker.
func TestRunRootInPlace(t *testing.T) {
	s := requireRoot(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := unix.Gettid()
	for _, tc := range []struct {
		c       Cred
		inPlace bool
	}{
		{NewCred(0, s.Self().GID, []uint32{0, 1, 2, 3}), true},
		{NewCred(0, s.Self().GID, nil), true},
		{NewCred(0, 4000, nil), false},
		{NewCred(1234, 1234, nil), false},
	} {
		var ran int
		require.NoError(t, s.Run(tc.c, func() { ran = unix.Gettid() }))
		assert.Equal(t, tc.inPlace, ran == self, "%v in place", tc.c)
	}
}
