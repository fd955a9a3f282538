package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestVersion: the version command prints the build on one line.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := dispatch(t.Context(), []string{"version"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.HasPrefix(s, "rpcrdma-bench ") || strings.Count(s, "\n") != 1 {
		t.Errorf("version printed %q", s)
	}
}
