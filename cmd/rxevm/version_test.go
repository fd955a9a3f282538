package main

import "testing"

// TestVersion: the version command exits 0.
func TestVersion(t *testing.T) {
	if st := rxevm(t.Context(), []string{"version"}); st != 0 {
		t.Fatalf("status %d", st)
	}
}
