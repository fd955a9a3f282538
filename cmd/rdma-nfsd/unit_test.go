package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const unitFile = "../../contrib/systemd/rdma-nfsd.service"

// TestUnitFile: the systemd unit is Type=notify, checks the configuration
// (-check) before it starts and before each reload's SIGHUP, bounds the
// capabilities to the ones the server uses, and lets it reach the RDMA
// devices.
func TestUnitFile(t *testing.T) {
	f, err := os.Open(unitFile)
	require.NoError(t, err)
	defer f.Close()
	keys := map[string][]string{} // "Section.Key": values in order
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			require.True(t, ok, "not a key=value line: %q", line)
			keys[section+"."+k] = append(keys[section+"."+k], v)
		}
	}
	require.NoError(t, sc.Err())

	require.Equal(t, []string{"notify"}, keys["Service.Type"])
	require.Equal(t, []string{"/usr/local/sbin/rdma-nfsd $RDMA_NFSD_OPTS"}, keys["Service.ExecStart"])
	require.Equal(t, []string{"/usr/local/sbin/rdma-nfsd -check $RDMA_NFSD_OPTS", "/bin/kill -HUP $MAINPID"},
		keys["Service.ExecReload"], "the check, then SIGHUP")
	require.Equal(t, []string{"/usr/local/sbin/rdma-nfsd -check $RDMA_NFSD_OPTS"}, keys["Service.ExecStartPre"])
	caps := strings.Fields(strings.Join(keys["Service.CapabilityBoundingSet"], " "))
	require.ElementsMatch(t, []string{"CAP_SETUID", "CAP_SETGID", "CAP_DAC_READ_SEARCH", "CAP_CHOWN", "CAP_FOWNER",
		"CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_MKNOD", "CAP_NET_BIND_SERVICE"}, caps)
	require.Subset(t, keys["Service.DeviceAllow"], []string{"/dev/infiniband/rdma_cm rw", "char-infiniband_verbs rw"})
	require.Equal(t, []string{"closed"}, keys["Service.DevicePolicy"])
	require.Equal(t, []string{"infinity"}, keys["Service.LimitMEMLOCK"])
	require.Equal(t, []string{"strict"}, keys["Service.ProtectSystem"])
	require.NotEmpty(t, keys["Service.ReadWritePaths"])
	families := strings.Fields(strings.Join(keys["Service.RestrictAddressFamilies"], " "))
	require.Subset(t, families, []string{"AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK", "AF_IB"})
	for _, k := range []string{"RestrictSUIDSGID", "PrivateDevices", "PrivateUsers"} {
		require.NotContains(t, keys, "Service."+k, "NFS needs what %s= takes away", k)
	}
}

// TestUnitSecurity: systemd-analyze rates the unit's exposure under 5 (of
// 10). systemd-analyze is an external tool: the test is skipped, saying
// so, where it is not installed (apt-get install systemd); it needs
// --offline, which systemd 252 (Debian 12) has.
func TestUnitSecurity(t *testing.T) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (apt-get install systemd): the unit's exposure is not rated")
	}
	out, err := exec.Command(bin, "security", "--offline=yes", unitFile).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for rdma-nfsd\.service: ([0-9.]+)`).FindSubmatch(out)
	require.NotNil(t, m, "systemd-analyze: %v\n%s", err, out)
	score, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	require.Less(t, score, 5.0, "%s", out)
	t.Logf("exposure %.1f", score)
}
