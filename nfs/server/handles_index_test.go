package server

import (
	"path"
	"testing"
)

// TestIndexChildName: childName is path.Join's name of an entry for every
// directory the index names ("." the root), and isChildName recognizes
// exactly it.
func TestIndexChildName(t *testing.T) {
	for _, tc := range []struct{ dir, base string }{
		{".", "a"}, {".", "..a"}, {"d", "a"}, {"d/e", "f"}, {"d/e", "e"}, {"dd", "d"},
	} {
		want := path.Join(tc.dir, tc.base)
		if got := childName(tc.dir, tc.base); got != want {
			t.Errorf("childName(%q, %q) = %q, want %q", tc.dir, tc.base, got, want)
		}
		if !isChildName(want, tc.dir, tc.base) {
			t.Errorf("isChildName(%q, %q, %q) = false", want, tc.dir, tc.base)
		}
		for _, other := range []string{"", tc.base, tc.dir, want + "x", "x" + want, tc.dir + "x" + tc.base, tc.dir + "/" + tc.base + "/"} {
			if other != want && isChildName(other, tc.dir, tc.base) {
				t.Errorf("isChildName(%q, %q, %q) = true", other, tc.dir, tc.base)
			}
		}
	}
}

// TestIndexAddChild: addChild leaves the index as add of the joined name
// does, whether the index held that name for the inode (nothing to
// change), another name, another type, no name, or the inode as gone, and
// when another inode held the name.
func TestIndexAddChild(t *testing.T) {
	check := func(t *testing.T, x *handleIndex, ino uint64, p string, dir bool) {
		t.Helper()
		if e, ok := x.byIno[ino]; !ok || e.path != p || e.dir != dir {
			t.Errorf("byIno[%d] = %+v, %v; want %q, dir %v", ino, e, ok, p, dir)
		}
		if got, ok := x.byPath[p]; !ok || got != ino {
			t.Errorf("byPath[%q] = %d, %v; want %d", p, got, ok, ino)
		}
		if x.isGone(ino) {
			t.Errorf("inode %d still gone", ino)
		}
	}
	t.Run("same", func(t *testing.T) {
		x := newHandleIndex()
		x.add(7, "d/a", false)
		x.addChild(7, "d", "a", false)
		check(t, x, 7, "d/a", false)
		if len(x.byIno) != 1 || len(x.byPath) != 1 {
			t.Errorf("index holds %d inodes, %d names; want 1, 1", len(x.byIno), len(x.byPath))
		}
	})
	t.Run("renamed", func(t *testing.T) {
		x := newHandleIndex()
		x.add(7, "d/a", false)
		x.addChild(7, "d", "b", false)
		check(t, x, 7, "d/b", false)
		if _, ok := x.byPath["d/a"]; ok {
			t.Error("the old name is still indexed")
		}
	})
	t.Run("retyped", func(t *testing.T) {
		x := newHandleIndex()
		x.add(7, "a", false)
		x.addChild(7, ".", "a", true)
		check(t, x, 7, "a", true)
	})
	t.Run("new", func(t *testing.T) {
		x := newHandleIndex()
		x.addChild(7, "d/e", "a", false)
		check(t, x, 7, "d/e/a", false)
	})
	t.Run("gone", func(t *testing.T) {
		x := newHandleIndex()
		x.add(7, "a", false)
		x.gone[7] = struct{}{}
		x.addChild(7, ".", "a", false)
		check(t, x, 7, "a", false)
	})
	t.Run("taken", func(t *testing.T) {
		x := newHandleIndex()
		x.add(7, "a", false)
		x.byPath["a"] = 8 // another inode took the name
		x.byIno[8] = indexEntry{path: "a"}
		x.addChild(7, ".", "a", false)
		check(t, x, 7, "a", false)
		if _, ok := x.byIno[8]; ok {
			t.Error("the inode that held the name is still indexed under it")
		}
	})
}
