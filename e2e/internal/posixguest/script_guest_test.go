//go:build e2eguest

package posixguest

import (
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The identities: root, uid 1234 (gid 1234, supplementary group 1000),
// uid 1235 (gid 1235, no supplementary group), uid 1236 (gid 1000, the
// group of the setgid directory as its primary group).
var (
	root  = ident{"root", 0, 0, nil}
	u1234 = ident{"1234", 1234, 1234, []uint32{1000}}
	u1235 = ident{"1235", 1235, 1235, nil}
	u1236 = ident{"1236", 1236, 1000, nil}
)

func s(name string, as ident, o op) step { return step{name: name, as: as, op: o} }

// setupFile creates p as root with data, then gives it to uid:gid and sets
// its mode (after the chown, which may clear set-id bits).
func setupFile(p string, mode uint32, uid, gid int, data string) op {
	return seq(createWrite(p, 0o600, data), chown(p, uid, gid), chmod(p, mode))
}

var (
	// Times set explicitly (nanoseconds: NFSv3 carries them).
	given1 = [2]unix.Timespec{{Sec: 1000000000, Nsec: 123456789}, {Sec: 1100000000, Nsec: 987654321}}
	given2 = [2]unix.Timespec{{Sec: 1200000000, Nsec: 5}, {Sec: 1300000000, Nsec: 6}}
	// only the mtime: the atime left alone
	givenM = [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: 1400000000, Nsec: 7}}

	name255 = strings.Repeat("a", 255)
	name256 = strings.Repeat("b", 256)
	dir255  = strings.Repeat("m", 255)
	link255 = strings.Repeat("l", 255)
	ren256  = strings.Repeat("r", 256)
	long1k  = strings.Repeat("x", 1000)
	long4k  = strings.Repeat("y", 4095)
)

// script is the one list of steps both servers run, in order; a step
// may depend on earlier ones. A step expected to be refused works on a
// file or directory of its own ("v-..."), so that a server that wrongly
// lets it through changes nothing the later steps look at. The names are
// the keys of knownDifferences.
var script = []step{
	// The tree, as root.
	s("setup/mkdir pub 0755", root, mkdir("pub", 0o755)).expect("ok").stats("pub", "."),
	s("setup/mkdir ro 0755", root, mkdir("ro", 0o755)).expect("ok").stats("ro"),
	s("setup/mkdir priv 0700", root, mkdir("priv", 0o700)).expect("ok").stats("priv"),
	s("setup/mkdir sticky 1777", root, seq(mkdir("sticky", 0o777), chmod("sticky", 0o1777))).expect("ok").stats("sticky"),
	s("setup/mkdir sgid 2775 group 1000", root, seq(mkdir("sgid", 0o775), chown("sgid", -1, 1000), chmod("sgid", 0o2775))).expect("ok").stats("sgid"),
	s("setup/mkdir home1234", root, seq(mkdir("home1234", 0o755), chown("home1234", 1234, 1234))).expect("ok").stats("home1234"),
	s("setup/mkdir home1235", root, seq(mkdir("home1235", 0o755), chown("home1235", 1235, 1235))).expect("ok").stats("home1235"),
	s("setup/root's 0600 file", root, setupFile("pub/root600", 0o600, 0, 0, "root secret\n")).expect("ok").stats("pub/root600"),
	s("setup/root's 0644 files", root, seq(setupFile("pub/root644", 0o644, 0, 0, "root public\n"),
		setupFile("pub/v-link", 0o644, 0, 0, "root link\n"))).expect("ok").stats("pub/root644", "pub/v-link"),
	s("setup/file in the 0700 dir", root, setupFile("priv/secret", 0o644, 0, 0, "hidden\n")).expect("ok").stats("priv/secret"),
	s("setup/1234's files", root, seq(setupFile("home1234/f600", 0o600, 1234, 1234, "f600\n"),
		setupFile("home1234/f644", 0o644, 1234, 1234, "f644\n"),
		setupFile("home1234/f444", 0o444, 1234, 1234, "f444\n"),
		setupFile("home1234/v-rename", 0o644, 1234, 1234, "v\n"),
		setupFile("home1234/v-unlink", 0o644, 1234, 1234, "v\n"),
		setupFile("home1234/v-chmod", 0o600, 1234, 1234, "v\n"),
		setupFile("home1234/v-chown", 0o644, 1234, 1234, "v\n"),
		setupFile("home1234/v-link", 0o644, 1234, 1234, "v\n"))).expect("ok").stats("home1234/f600", "home1234/f644", "home1234/f444"),
	s("setup/1235's files", root, seq(setupFile("home1235/g600", 0o600, 1235, 1235, "g600\n"),
		setupFile("home1235/g644", 0o644, 1235, 1235, "g644\n"),
		setupFile("home1235/g666", 0o666, 1235, 1235, "g666\n"),
		setupFile("home1235/v-link", 0o644, 1235, 1235, "v\n"),
		setupFile("home1235/v-utimes", 0o644, 1235, 1235, "v\n"),
		setupFile("home1235/v-trunc", 0o644, 1235, 1235, "v\n"))).expect("ok").stats("home1235/g600", "home1235/g644", "home1235/g666"),
	s("setup/files in sticky", root, seq(setupFile("sticky/s1234", 0o644, 1234, 1234, "s1234\n"),
		setupFile("sticky/v1234", 0o644, 1234, 1234, "v\n"),
		setupFile("sticky/v1235", 0o666, 1235, 1235, "v\n"))).expect("ok").stats("sticky/s1234", "sticky/v1235"),

	// Reading and access checks.
	s(sentinel, u1234, read("pub/root600")).expect("EACCES"),
	s("read/1234 root's 0644 file", u1234, read("pub/root644")).expect("ok"),
	s("read/1235 1234's 0600 file", u1235, read("home1234/f600")).expect("EACCES"),
	s("read/1234 own 0600 file", u1234, read("home1234/f600")).expect("ok"),
	s("read/root 1234's 0600 file", root, read("home1234/f600")).expect("ok"),
	s("write/1234 own 0444 file", u1234, write("home1234/f444", "X")).expect("EACCES").stats("home1234/f444"),
	s("write/root 1234's 0444 file", root, write("home1234/f444", "R")).expect("ok").stats("home1234/f444"),
	s("read/1234 own 0444 file", u1234, read("home1234/f444")).expect("ok"),
	s("readdir/1234 root's 0700 dir", u1234, readdir("priv")).expect("EACCES"),
	s("lookup/1234 in root's 0700 dir", u1234, lookup("priv/secret")).expect("EACCES"),
	s("access/1234 W_OK root's 0644", u1234, access("pub/root644", unix.W_OK)).expect("EACCES"),
	s("access/1234 R_OK root's 0644", u1234, access("pub/root644", unix.R_OK)).expect("ok"),
	s("access/1235 X_OK 1234's dir", u1235, access("home1234", unix.X_OK)).expect("ok"),

	// Creating, in own, others', sticky and setgid directories.
	s("create/1234 in own dir", u1234, create("home1234/new", 0o644)).expect("ok").stats("home1234/new", "home1234"),
	s("create/1234 in 1235's dir", u1234, create("home1235/new", 0o644)).expect("EACCES").stats("home1235/new"),
	s("create/1234 in root's 0755 dir", u1234, create("ro/new", 0o644)).expect("EACCES").stats("ro/new"),
	s("mkdir/1234 in root's 0755 dir", u1234, mkdir("ro/d1234", 0o755)).expect("EACCES").stats("ro/d1234"),
	s("create/1234 in sticky", u1234, create("sticky/n1234", 0o644)).expect("ok").stats("sticky/n1234"),
	s("create/1235 in sticky", u1235, create("sticky/n1235", 0o644)).expect("ok").stats("sticky/n1235"),
	s("create/1234 in sgid (member)", u1234, create("sgid/n1234", 0o644)).expect("ok").stats("sgid/n1234"),
	s("create/1235 in sgid (not member)", u1235, create("sgid/n1235", 0o644)).expect("EACCES").stats("sgid/n1235"),
	s("create/1236 in sgid (primary gid)", u1236, create("sgid/n1236", 0o644)).expect("ok").stats("sgid/n1236"),
	s("create/root in sgid", root, create("sgid/nroot", 0o644)).expect("ok").stats("sgid/nroot"),
	s("create/1234 mode 2755 in sgid", u1234, create("sgid/sg1234", 0o2755)).expect("ok").stats("sgid/sg1234"),
	s("create/1235 mode 2755 in own dir", u1235, create("home1235/sg1235", 0o2755)).expect("ok").stats("home1235/sg1235"),
	s("mkdir/1234 in sgid", u1234, mkdir("sgid/d1234", 0o755)).expect("ok").stats("sgid/d1234", "sgid"),
	s("mkdir/root in sgid", root, mkdir("sgid/droot", 0o755)).expect("ok").stats("sgid/droot"),
	s("mkdir/1234 0700 in own dir", u1234, mkdir("home1234/sub", 0o700)).expect("ok").stats("home1234/sub", "home1234"),
	s("create/1234 in own 0700 subdir", u1234, create("home1234/sub/inner", 0o600)).expect("ok").stats("home1234/sub/inner"),

	// Special files.
	s("mkfifo/1234 in own dir", u1234, mkfifo("home1234/fifo", 0o644)).expect("ok").stats("home1234/fifo"),
	s("mkfifo/1234 in root's dir", u1234, mkfifo("ro/fifo", 0o644)).expect("EACCES").stats("ro/fifo"),
	s("mknod/root char 1,3", root, mknod("pub/null", unix.S_IFCHR|0o644, 1, 3)).expect("ok").stats("pub/null"),
	s("mknod/root block 7,0", root, mknod("pub/loop", unix.S_IFBLK|0o600, 7, 0)).expect("ok").stats("pub/loop"),
	s("mknod/1234 char 1,3", u1234, mknod("home1234/null", unix.S_IFCHR|0o644, 1, 3)).expect("EPERM").stats("home1234/null"),
	s("mknod/1234 regular file", u1234, mknod("home1234/mkreg", unix.S_IFREG|0o640, 0, 0)).expect("ok").stats("home1234/mkreg"),
	s("bind/1234 unix socket", u1234, bind("home1234/sock")).expect("ok").stats("home1234/sock"),

	// Symbolic links.
	s("symlink/1234 in own dir", u1234, symlink("f644", "home1234/sl")).expect("ok").stats("home1234/sl"),
	s("readlink/1235 1234's link", u1235, readlink("home1234/sl")).expect("ok"),
	s("read/1235 through 1234's link", u1235, read("home1234/sl")).expect("ok"),
	s("symlink/1234 in root's dir", u1234, symlink("f644", "ro/sl")).expect("EACCES").stats("ro/sl"),
	s("symlink/1234 1000-byte target", u1234, symlink(long1k, "home1234/sl1000")).expect("ok").stats("home1234/sl1000"),
	s("readlink/1234 1000-byte target", u1234, readlink("home1234/sl1000")).expect("ok"),
	s("symlink/1234 4095-byte target", u1234, symlink(long4k, "home1234/sl4095")).expect("ok").stats("home1234/sl4095"),
	s("readlink/1234 4095-byte target", u1234, readlink("home1234/sl4095")).expect("ok"),

	// Hard links.
	s("link/1234 own file", u1234, link("home1234/f644", "home1234/f644.ln")).expect("ok").stats("home1234/f644", "home1234/f644.ln"),
	s("link/1234 root's file into own dir", u1234, link("pub/v-link", "home1234/rootln")).stats("pub/v-link"),
	s("link/1235 1234's file into own dir", u1235, link("home1234/v-link", "home1235/ln1234")).stats("home1234/v-link"),
	s("link/1235 into 1234's dir", u1235, link("home1235/v-link", "home1234/g644")).expect("EACCES").stats("home1235/v-link", "home1234/g644"),
	s("link/1234 a directory", u1234, link("home1234/sub", "home1234/sub.ln")).expect("EPERM").stats("home1234/sub.ln"),
	s("link/root into sgid", root, link("pub/root644", "sgid/rootln")).expect("ok").stats("sgid/rootln"),

	// Renames.
	s("rename/1234 within own dir", u1234, rename("home1234/new", "home1234/new2")).expect("ok").stats("home1234/new", "home1234/new2"),
	s("rename/1234 across dirs", u1234, rename("home1234/new2", "sticky/moved")).expect("ok").stats("sticky/moved", "home1234"),
	s("rename/1234 over own file", u1234, rename("home1234/f644.ln", "home1234/mkreg")).expect("ok").stats("home1234/mkreg", "home1234/f644"),
	s("rename/1234 over 1235's in sticky", u1234, rename("sticky/moved", "sticky/v1235")).expect("EPERM").stats("sticky/v1235"),
	s("rename/1235 out of 1234's dir", u1235, rename("home1234/v-rename", "home1235/stolen")).expect("EACCES").stats("home1235/stolen"),
	s("setup/dirs for rename", root, seq(mkdir("pub/da", 0o755), mkdir("pub/db", 0o755), create("pub/db/x", 0o644))).expect("ok").stats("pub"),
	s("rename/root dir onto non-empty dir", root, rename("pub/da", "pub/db")).expect("ENOTEMPTY").stats("pub/db"),
	s("rename/root dir", root, rename("pub/da", "pub/dc")).expect("ok").stats("pub", "pub/dc"),
	s("rename/root dir onto file", root, rename("pub/dc", "pub/root644")).expect("ENOTDIR"),
	s("rename/root file onto dir", root, rename("pub/root644", "pub/dc")).expect("EISDIR"),
	s("rename/1234 dir into itself", u1234, rename("home1234/sub", "home1234/sub/sub2")).expect("EINVAL"),
	s("rename/1234 dir out of sgid", u1234, rename("sgid/d1234", "home1234/d1234")).expect("ok").stats("home1234/d1234", "sgid", "home1234"),

	// Removals.
	s("rmdir/root non-empty dir", root, rmdir("pub/db")).expect("ENOTEMPTY").stats("pub/db"),
	s("unlink/1235 1234's file in sticky", u1235, unlink("sticky/v1234")).expect("EPERM").stats("sticky/v1234"),
	s("unlink/1234 own file in sticky", u1234, unlink("sticky/s1234")).expect("ok").stats("sticky/s1234", "sticky"),
	s("unlink/root 1235's file in sticky", root, unlink("sticky/n1235")).expect("ok").stats("sticky/n1235"),
	s("unlink/1235 in 1234's dir", u1235, unlink("home1234/v-unlink")).expect("EACCES").stats("home1234/v-unlink"),
	s("unlink/1234 own 0444 file", u1234, unlink("home1234/f444")).expect("ok").stats("home1234/f444"),
	s("unlink/1234 a directory", u1234, unlink("home1234/sub")).expect("EISDIR"),
	s("rmdir/1234 a file", u1234, rmdir("home1234/f644")).expect("ENOTDIR"),
	s("rmdir/1234 own non-empty dir", u1234, rmdir("home1234/sub")).expect("ENOTEMPTY"),
	s("rmdir/1234 own dir emptied", u1234, seq(unlink("home1234/sub/inner"), rmdir("home1234/sub"))).expect("ok").stats("home1234/sub", "home1234"),

	// Modes and owners.
	s("chmod/1235 1234's file", u1235, chmod("home1234/v-chmod", 0o666)).expect("EPERM").stats("home1234/v-chmod"),
	s("chmod/1234 own file setuid", u1234, chmod("home1234/f600", 0o4755)).expect("ok").stats("home1234/f600"),
	s("write/1234 own setuid file", u1234, write("home1234/f600", "F")).expect("ok").stats("home1234/f600"),
	s("chmod/1234 own file 6777", u1234, chmod("home1234/f600", 0o6777)).expect("ok").stats("home1234/f600"),
	s("write/1235 1234's 6777 file", u1235, write("home1234/f600", "G")).expect("ok").stats("home1234/f600"),
	s("chown/1234 give away", u1234, chown("home1234/v-chown", 1235, -1)).expect("EPERM").stats("home1234/v-chown"),
	s("chgrp/1234 to a foreign group", u1234, chown("home1234/f600", -1, 1235)).expect("EPERM").stats("home1234/f600"),
	s("chgrp/1234 to own supplementary group", u1234, chown("home1234/f600", -1, 1000)).expect("ok").stats("home1234/f600"),
	s("chown/1234 to itself", u1234, chown("home1234/f644", 1234, 1234)).expect("ok").stats("home1234/f644"),
	s("chmod/1234 2640 group 1000 (member)", u1234, chmod("home1234/f600", 0o2640)).expect("ok").stats("home1234/f600"),
	s("chgrp/root 1234's file to 1235", root, chown("home1234/f644", -1, 1235)).expect("ok").stats("home1234/f644"),
	s("chmod/1234 2644 group 1235 (not member)", u1234, chmod("home1234/f644", 0o2644)).expect("ok").stats("home1234/f644"),
	s("chmod/root 4755 1234's file", root, chmod("home1234/f600", 0o4755)).expect("ok").stats("home1234/f600"),
	s("chown/root setuid file to 1235", root, chown("home1234/f600", 1235, 1235)).expect("ok").stats("home1234/f600"),
	s("chmod/1234 own dir sticky", u1234, chmod("home1234", 0o1755)).expect("ok").stats("home1234"),
	s("ctime/1234 create and write", u1234, createWrite("home1234/ct", 0o644, "ct\n")).expect("ok").stats("home1234/ct"),
	s("ctime/1234 chmod 1.1 s later", u1234, chmod("home1234/ct", 0o600)).after(1100 * time.Millisecond).timeRel().expect("ok").stats("home1234/ct"),

	// Times.
	s("utimes/1234 own file explicit", u1234, utimes("home1234/f644", &given1)).setTimes(given1).expect("ok").stats("home1234/f644"),
	s("utimes/1234 1235's 0666 explicit", u1234, utimes("home1235/g666", &given2)).setTimes(given2).expect("EPERM").stats("home1235/g666"),
	s("utimes/1234 1235's 0666 now", u1234, utimes("home1235/g666", nil)).expect("ok").stats("home1235/g666"),
	s("utimes/1234 1235's 0644 now", u1234, utimes("home1235/v-utimes", nil)).expect("EACCES").stats("home1235/v-utimes"),
	s("utimes/1235 own file explicit", u1235, utimes("home1235/g666", &given2)).setTimes(given2).expect("ok").stats("home1235/g666"),
	s("utimes/1234 own file mtime only", u1234, utimes("home1234/f644", &givenM)).setTimes(givenM).expect("ok").stats("home1234/f644"),
	s("utimes/root 1235's file explicit", root, utimes("home1235/g644", &given1)).setTimes(given1).expect("ok").stats("home1235/g644"),

	// Truncation and the owner's override.
	s("truncate/1234 1235's 0644 file", u1234, truncate("home1235/v-trunc", 1)).expect("EACCES").stats("home1235/v-trunc"),
	s("truncate/1234 1235's 0666 file", u1234, truncate("home1235/g666", 3)).expect("ok").stats("home1235/g666"),
	s("create-0444/1234 write through fd", u1234, createWrite("home1234/ro", 0o444, "hello\n")).expect("ok").stats("home1234/ro"),
	s("read/1234 own file written via 0444 fd", u1234, read("home1234/ro")).expect("ok"),
	s("create-0444/1234 ftruncate fd", u1234, createTruncate("home1234/ro2", 0o444, 100)).expect("ok").stats("home1234/ro2"),
	s("truncate/1234 own 0444 file", u1234, truncate("home1234/ro2", 1)).expect("EACCES").stats("home1234/ro2"),

	// Long names.
	s("name/1234 create 255 bytes", u1234, create("home1234/"+name255, 0o644)).expect("ok").stats("home1234/" + name255),
	s("name/1234 create 256 bytes", u1234, create("home1234/"+name256, 0o644)).expect("ENAMETOOLONG"),
	s("name/1234 mkdir 255 bytes", u1234, mkdir("home1234/"+dir255, 0o755)).expect("ok").stats("home1234/" + dir255),
	s("name/1234 symlink 255 bytes", u1234, symlink(name255, "home1234/"+link255)).expect("ok").stats("home1234/" + link255),
	s("name/1234 rename to 256 bytes", u1234, rename("home1234/"+name255, "home1234/"+ren256)).expect("ENAMETOOLONG"),
	s("name/1234 lookup 256 bytes", u1234, lookup("home1234/"+name256)).expect("ENAMETOOLONG"),

	// A path longer than PATH_MAX, by directory descriptors.
	s("deep/root mkdir 18 x 250 bytes", root, mkdirChain("pub")).expect("ok").stats("pub/@deep", "pub"),
	s("deep/root chmod bottom 0777", root, chmod("pub/@deep", 0o777)).expect("ok").stats("pub/@deep"),
	s("deep/1234 create at bottom", u1234, seq(createWrite("pub/@deep/f", 0o644, "deep file\n"), createWrite("pub/@deep/v", 0o600, "v\n"))).expect("ok").stats("pub/@deep/f", "pub/@deep"),
	s("deep/1234 chmod 0600", u1234, chmod("pub/@deep/f", 0o600)).expect("ok").stats("pub/@deep/f"),
	s("deep/1235 chmod 1234's", u1235, chmod("pub/@deep/v", 0o666)).expect("EPERM").stats("pub/@deep/v"),
	s("deep/1235 truncate 1234's 0600", u1235, truncate("pub/@deep/v", 1)).expect("EACCES").stats("pub/@deep/v"),
	s("deep/root chown to 1235", root, chown("pub/@deep/f", 1235, 1235)).expect("ok").stats("pub/@deep/f"),
	s("deep/1235 truncate own", u1235, truncate("pub/@deep/f", 2)).expect("ok").stats("pub/@deep/f"),
	s("deep/1235 link at bottom", u1235, link("pub/@deep/f", "pub/@deep/f2")).expect("ok").stats("pub/@deep/f", "pub/@deep/f2"),
	s("deep/1235 link to own top dir", u1235, link("pub/@deep/f", "home1235/fromdeep")).expect("ok").stats("home1235/fromdeep"),
	s("deep/1235 rename at bottom", u1235, rename("pub/@deep/f2", "pub/@deep/f3")).expect("ok").stats("pub/@deep/f2", "pub/@deep/f3"),
	s("deep/1235 unlink at bottom", u1235, unlink("pub/@deep/f3")).expect("ok").stats("pub/@deep/f"),
	s("deep/1235 utimes explicit", u1235, utimes("pub/@deep/f", &given1)).setTimes(given1).expect("ok").stats("pub/@deep/f"),
	s("deep/1234 readdir bottom", u1234, readdir("pub/@deep")).expect("ok"),

	// Exclusive create.
	s("excl/1234 create", u1234, createExcl("home1234/excl", 0o640)).expect("ok").stats("home1234/excl"),
	s("excl/1234 create again", u1234, createExcl("home1234/excl", 0o640)).expect("EEXIST").stats("home1234/excl"),
	s("excl/1235 in 1234's dir", u1235, createExcl("home1234/excl2", 0o640)).expect("EACCES").stats("home1234/excl2"),
	s("excl/1234 on a dangling symlink", u1234, seq(symlink("nowhere", "home1234/dangle"), createExcl("home1234/dangle", 0o644))).expect("EEXIST").stats("home1234/dangle", "home1234/nowhere"),
	s("creat/1234 existing own file", u1234, create("home1234/excl", 0o600)).expect("ok").stats("home1234/excl"),

	// The resulting trees.
	s("list/root .", root, readdir(".")).expect("ok").stats("."),
	s("list/root pub", root, readdir("pub")).expect("ok").stats("pub"),
	s("list/root ro", root, readdir("ro")).expect("ok"),
	s("list/root sticky", root, readdir("sticky")).expect("ok").stats("sticky"),
	s("list/root sgid", root, readdir("sgid")).expect("ok").stats("sgid"),
	s("list/root home1234", root, readdir("home1234")).expect("ok").stats("home1234"),
	s("list/root home1235", root, readdir("home1235")).expect("ok").stats("home1235"),
}

// knownDifferences are the steps whose records differ between knfsd and
// rdma-nfsd, each with its reason. A difference not listed fails the
// test; a listed step that matches is reported, to be removed from here.
// None today: every step of the script gives the same result on both.
var knownDifferences = map[string]string{}
