// Package posixguest holds the guest side of TestPosixVsKnfsd
// (e2e/posix_test.go), the differential POSIX test of issue 28: one
// script of file system operations runs, in one boot of the Soft-RoCE VM,
// on the Linux kernel client's mount of knfsd and on its mount of
// cmd/rdma-nfsd (both over RDMA, both exporting a tmpfs, the same mount
// options), and every result is compared.
//
// Each step of the script runs as its own identity (uid, gid,
// supplementary groups) in a child process, the test binary run again
// with the step's index in $POSIXGUEST_STEP and the identity set by
// syscall.Credential, so that the kernel client sends that identity with
// AUTH_SYS. A step records the operation's errno ("ok" or "EACCES", ...),
// what it read (a file's bytes, a link's target, a directory's names),
// and, stat'ed as root after it, each affected path's type, mode (with
// the set-id and sticky bits), owner, group, size and link count, and of
// the timestamps only relations: whether ctime and mtime changed in the
// step (c+, m+; c=, m= if not), ctime against mtime where the step asks
// (c>m, after a sleep), and whether times set explicitly were stored as
// given. Paths are resolved one component at a time with O_PATH
// descriptors and the operations are the *at system calls, so that a path
// longer than PATH_MAX works.
//
// The comparison prints one line per step, "POSIXCMP step | knfsd |
// rdma-nfsd | verdict", which the host test relays. A difference fails
// the test unless knownDifferences lists the step with its reason; a
// listed step that matches again is reported ("now matches"), not failed.
//
// The tests carry the build tag e2eguest; this file builds everywhere, so
// that the package exists on the host.
package posixguest
