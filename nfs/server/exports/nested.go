package exports

import (
	"fmt"
	"slices"
)

// Nesting is an export that lies inside another export whose client rules
// differ (see the package doc, "Nested exports"): a client the outer
// export admits reaches the inner directory through it, with the outer
// export's rules, as it would on knfsd.
type Nesting struct {
	Outer, Inner *Export
}

// String says what the nesting means, naming both exports and, when they
// come from a file, their lines.
func (n Nesting) String() string {
	return fmt.Sprintf("export %s%s lies inside export %s%s with other client rules: a client of the outer export reaches the inner one through it, with the outer export's rules (as with knfsd)",
		n.Inner.Path, lineOf(n.Inner), n.Outer.Path, lineOf(n.Outer))
}

func lineOf(e *Export) string {
	if e.Line == 0 {
		return ""
	}
	return fmt.Sprintf(" (line %d)", e.Line)
}

// Nestings returns every pair of exps in which one export's path lies
// inside another's (Holds) and their client rules differ (SameRules), in
// the order of the outer exports in exps. It compares the paths as
// written; the server compares the directories themselves (symbolic
// links resolved) and leaves out an inner export on another file system,
// which the outer one's clients cannot reach.
func Nestings(exps []Export) []Nesting {
	var ns []Nesting
	for i := range exps {
		for j := range exps {
			outer, inner := &exps[i], &exps[j]
			if i != j && outer.Path != inner.Path && Holds(outer.Path, inner.Path) && !SameRules(outer.Rules, inner.Rules) {
				ns = append(ns, Nesting{Outer: outer, Inner: inner})
			}
		}
	}
	return ns
}

// SameRules reports whether a and b admit the same clients with the same
// options, whatever their order and lines. nil (every client, as
// server.Export reads it) is the same only as nil.
func SameRules(a, b []Rule) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for _, r := range a {
		if !slices.ContainsFunc(b, func(s Rule) bool { return r.Any == s.Any && r.Net == s.Net && r.Options == s.Options }) {
			return false
		}
	}
	return true
}
