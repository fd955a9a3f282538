package exports

import (
	"strings"
	"testing"
)

// TestNestings: an export inside another (at any depth, "/" holding
// everything) with rules that differ is a nesting, named with both lines;
// the same rules in another order, a sibling, or a path that merely
// starts with another's name are not.
func TestNestings(t *testing.T) {
	tab, err := Parse("exports", []byte(`/srv          10.0.0.0/24(rw) *(ro)
/srv/private  10.0.0.5(rw)
/srv/pub      *(ro) 10.0.0.0/24(rw)
/srv2         10.0.0.0/24(rw) *(ro)
/srv/private/deeper  10.0.0.0/24(rw) *(ro)
/             10.0.0.9(ro)
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range Nestings(tab.Exports) {
		got = append(got, n.Outer.Path+">"+n.Inner.Path)
	}
	want := []string{
		"/srv>/srv/private",
		"/srv/private>/srv/private/deeper",
		"/>/srv", "/>/srv/private", "/>/srv/pub", "/>/srv2", "/>/srv/private/deeper",
	}
	if len(got) != len(want) {
		t.Fatalf("nestings %v, want %v", got, want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("nestings %v lack %s", got, w)
		}
	}
	n := Nestings(tab.Exports)[0]
	msg := n.String()
	for _, part := range []string{"export /srv/private (line 2) lies inside export /srv (line 1)", "reaches the inner one through it, with the outer export's rules"} {
		if !strings.Contains(msg, part) {
			t.Errorf("%q lacks %q", msg, part)
		}
	}
}

// TestSameRules: the same clients with the same options, in any order and
// on any line; nil only as nil.
func TestSameRules(t *testing.T) {
	parse := func(line string) []Rule {
		t.Helper()
		tab, err := Parse("exports", []byte(line))
		if err != nil {
			t.Fatal(err)
		}
		return tab.Exports[0].Rules
	}
	a := parse("/a 10.0.0.0/24(rw) *(ro)")
	for _, tc := range []struct {
		b    []Rule
		same bool
	}{
		{parse("\n\n/b *(ro) 10.0.0.0/24(rw)"), true},
		{parse("/b *(ro) 10.0.0.0/24(ro)"), false},
		{parse("/b *(ro) 10.0.0.0/24(rw,no_root_squash)"), false},
		{parse("/b *(ro)"), false},
		{parse("/b *(ro) 10.0.0.0/24(rw) 10.0.1.1(rw)"), false},
		{nil, false},
	} {
		if got := SameRules(a, tc.b); got != tc.same {
			t.Errorf("SameRules(%v, %v) = %v", a, tc.b, got)
		}
	}
	if !SameRules(nil, nil) || SameRules(nil, []Rule{}) {
		t.Error("nil")
	}
}
