package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRdmaNfsdRefusedFlags: an rdma-nfsd that exits 2 at start (its flags
// refused) gives errServerUsage with the first line it wrote, which ends
// the run; any other exit at start is a failure of the cells only.
func TestRdmaNfsdRefusedFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		code  string
		usage bool
	}{{"2", true}, {"1", false}} {
		bin := filepath.Join(dir, "rdma-nfsd-"+tc.code)
		script := "#!/bin/sh\necho 'invalid value \"-1\" for flag -poll-before-wait-max: parse error' >&2\necho 'Usage of rdma-nfsd:' >&2\nexit " + tc.code + "\n"
		require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
		s := newRdmaNfsd(bin, "soft", "127.0.0.1", filepath.Join(dir, "export"))
		s.logPath = filepath.Join(dir, "log-"+tc.code)
		err := s.start(context.Background(), 4096, false)
		require.Error(t, err)
		require.Equal(t, tc.usage, errors.Is(err, errServerUsage), "exit %s: %v", tc.code, err)
		if tc.usage {
			require.EqualError(t, err, `rdma-nfsd refused its flags: invalid value "-1" for flag -poll-before-wait-max: parse error`)
		}
	}
}
