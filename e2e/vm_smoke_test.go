package e2e

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// smokeScript runs in the guest. Each check prints "SMOKE <name> PASS" or
// "SMOKE <name> FAIL"; at the end the script execs the host-built static
// probe, whose exit status (3) must come back to the host.
const smokeScript = `
check() { # check NAME FUNCTION
	echo "=== SMOKE $1"
	if "$2"; then echo "SMOKE $1 PASS"; else echo "SMOKE $1 FAIL"; fi
}

t_rdma_link() {
	rdma link show | tee /tmp/link
	grep -q 'rxe0/1 state ACTIVE physical_state LINK_UP netdev veth0' /tmp/link &&
		grep -q 'rxe1/1 state ACTIVE physical_state LINK_UP netdev veth1' /tmp/link
}

# rping from the client address (10.0.0.2, rxe1) to the server (10.0.0.1,
# rxe0) while tcpdump captures RoCEv2 (UDP 4791) on veth0 into the share.
t_rping() {
	tcpdump -Z root -i veth0 -n --immediate-mode -U -w /host/roce.pcap udp port 4791 2> /tmp/tcpdump.err &
	local tpid=$!
	for _ in $(seq 50); do grep -q 'listening on' /tmp/tcpdump.err && break; sleep 0.1; done
	timeout 30 rping -s -a 10.0.0.1 -C 5 > /tmp/rping.srv 2>&1 &
	local spid=$!
	sleep 1
	timeout 30 rping -c -a 10.0.0.1 -I 10.0.0.2 -C 5 -v > /tmp/rping.out 2>&1
	local rc=$?
	wait $spid
	local src=$?
	sleep 0.2
	kill -INT $tpid
	wait $tpid
	cat /tmp/rping.out /tmp/tcpdump.err
	[ $rc = 0 ] && [ $src = 0 ] && [ "$(grep -c '^ping data' /tmp/rping.out)" = 5 ]
}

t_tcpdump() {
	local n
	n=$(tcpdump -r /host/roce.pcap -n 2> /dev/null | grep -c 'UDP')
	echo "captured $n RoCEv2 packets on veth0"
	[ "$n" -gt 0 ]
}

# ibv_rc_pingpong: plain verbs (no RDMA CM) between rxe1 and rxe0, with the
# RoCE v2 GID indexes of the two addresses.
t_rc_pingpong() {
	local g0 g1
	g0=$(rxevm-gid-index rxe0 10.0.0.1) && g1=$(rxevm-gid-index rxe1 10.0.0.2) || return 1
	timeout 60 ibv_rc_pingpong -d rxe0 -g "$g0" -n 50 > /tmp/pp.srv 2>&1 &
	local spid=$!
	sleep 1
	timeout 60 ibv_rc_pingpong -d rxe1 -g "$g1" -n 50 10.0.0.1
	local rc=$?
	wait $spid
	local src=$?
	cat /tmp/pp.srv
	[ $rc = 0 ] && [ $src = 0 ]
}

# perftest is there for benchmarks; its reports need a TSC calibration that
# fails under TCG on a busy host ("Correlation coefficient r^2 < 0.9"), so
# the smoke test only checks that the programs start and find their libraries.
t_perftest() {
	local p
	for p in ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat ib_read_bw; do
		"$p" --version | grep -q '^Version:' || return 1 # --version exits 1
	done
}

# NFSv3 over RDMA with the kernel client against knfsd: 1 MiB written (the
# client sends WRITE data in read chunks) and read back after a remount (the
# server returns READ data through write chunks).
t_nfs_rdma() {
	rxevm-nfsd-start || return 1
	rxevm-nfs-mount /mnt/rdma || return 1
	grep ' /mnt/rdma ' /proc/mounts
	grep -q ' /mnt/rdma nfs .*vers=3.*proto=rdma.*port=20049.*timeo=50' /proc/mounts || return 1
	dd if=/dev/urandom of=/tmp/data bs=64k count=16 2> /dev/null
	cp /tmp/data /mnt/rdma/data && sync || return 1
	chunks read || return 1
	umount /mnt/rdma && rxevm-nfs-mount /mnt/rdma || return 1
	cmp /tmp/data /mnt/rdma/data && cmp /tmp/data /export/data || return 1
	chunks write || return 1
	umount /mnt/rdma
}

# chunks read|write: print the chunk counters of the RDMA mount and check
# that the given kind was used. The "xprt: rdma" line of mountstats has, from
# field 13 on, the read, write and reply chunk counts.
chunks() {
	awk -v want="$1" '$1 == "xprt:" && $2 == "rdma" {
		print "xprt rdma: read_chunks=" $13 " write_chunks=" $14 " reply_chunks=" $15
		if ((want == "read" && $13 > 0) || (want == "write" && $14 > 0)) ok = 1
	} END { exit !ok }' /proc/self/mountstats
}

t_strace() {
	strace -f -e trace=execve -o /tmp/strace.out true && grep -q execve /tmp/strace.out
}

check rdma_link t_rdma_link
check rping t_rping
check tcpdump t_tcpdump
check rc_pingpong t_rc_pingpong
check perftest t_perftest
check nfs_rdma t_nfs_rdma
check strace t_strace
exec /host/guestprobe -exit 3
`

// smokeChecks are the checks of smokeScript, in order.
var smokeChecks = []string{"rdma_link", "rping", "tcpdump", "rc_pingpong", "perftest", "nfs_rdma", "strace"}

// TestVMSmoke boots the VM once and checks what every end-to-end test relies
// on: both rxe devices ACTIVE on their veths, RDMA CM and RC traffic from
// 10.0.0.2 to 10.0.0.1 (rping, ibv_rc_pingpong) that really crosses veth0 (the
// RoCEv2 capture, read on the host), knfsd and the kernel client over RDMA,
// strace, a static Go binary built on the host and run from the 9p share,
// and the exit status of the guest command coming back.
func TestVMSmoke(t *testing.T) {
	img := vmtest.Require(t)
	t.Logf("image: kernel %s, %d packages", img.KernelRelease, len(img.Packages))
	share := vmtest.ShareDir(t)
	vmtest.BuildStatic(t, share, "./internal/guestprobe", "guestprobe")

	r := vmtest.Run(t, vm.Options{Share: share, Timeout: 10 * time.Minute}, smokeScript)

	results := map[string]string{}
	for _, l := range r.Lines() {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "SMOKE" {
			results[f[1]] = f[2]
		}
		if strings.HasPrefix(l, "xprt rdma:") || strings.HasPrefix(l, "guestprobe:") {
			t.Log("guest:", l)
		}
	}
	for _, name := range smokeChecks {
		t.Run(name, func(t *testing.T) {
			if got := results[name]; got != "PASS" {
				t.Errorf("guest check %s: %q, want PASS", name, got)
			}
		})
	}
	t.Run("exit_status", func(t *testing.T) {
		if r.Status != 3 {
			t.Errorf("guest exit status = %d, want 3 (from /host/guestprobe -exit 3)", r.Status)
		}
		if !strings.Contains(string(r.Console), `in-vm="1" rdma=rxe0:veth0,rxe1:veth1`) {
			t.Errorf("guestprobe output missing from the console")
		}
	})
	t.Run("pcap", func(t *testing.T) {
		frames, err := vmtest.ReadPCAP(filepath.Join(share, "roce.pcap"))
		if err != nil {
			t.Fatal(err)
		}
		server, client := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
		var toServer, toClient int
		for _, f := range frames {
			u, ok := f.UDPv4()
			if !ok || u.Dst.Port() != 4791 {
				continue
			}
			switch {
			case u.Src.Addr() == client && u.Dst.Addr() == server:
				toServer++
			case u.Src.Addr() == server && u.Dst.Addr() == client:
				toClient++
			}
		}
		t.Logf("RoCEv2 on veth0: %d packets client->server, %d server->client (%d frames)", toServer, toClient, len(frames))
		if toServer == 0 || toClient == 0 {
			t.Errorf("want RoCEv2 packets both ways between 10.0.0.2 and 10.0.0.1 on veth0")
		}
	})
}

// TestGuestTests runs the guest-only tests of internal/guestprobe (build tag
// e2eguest) inside the VM: the way end-to-end tests run Go code against the
// kernel's RDMA stack, knfsd and the kernel NFS client.
func TestGuestTests(t *testing.T) {
	r := vmtest.RunGuestTests(t, vmtest.GuestTests{Pkg: "./internal/guestprobe"})
	if !strings.Contains(string(r.Console), "--- PASS: TestGuestEnvironment") {
		t.Error("TestGuestEnvironment did not pass in the VM")
	}
}
