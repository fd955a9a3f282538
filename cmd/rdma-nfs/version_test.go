package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestVersion: -version prints the build on one line and exits 0, with
// no -server needed.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if st := mainStatus(t.Context(), []string{"-version"}, &out, io.Discard); st != 0 {
		t.Fatalf("status %d", st)
	}
	if s := out.String(); !strings.HasPrefix(s, "rdma-nfs ") || strings.Count(s, "\n") != 1 {
		t.Errorf("-version printed %q", s)
	}
}
