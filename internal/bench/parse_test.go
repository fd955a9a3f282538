package bench

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"512": 512, "512B": 512, "2k": 2048, "2KiB": 2048, "16KiB": 16384,
		"1M": 1 << 20, "1MiB": 1 << 20, " 64k ": 65536} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-1", "2x", "1.5k", "0"} {
		if n, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, n)
		}
	}
}

func TestSizeName(t *testing.T) {
	for n, want := range map[int]string{0: "-", 512: "512 B", 1024: "1 KiB", 3000: "3000 B", 65536: "64 KiB", 1 << 20: "1 MiB", 65537: "65537 B"} {
		if got := SizeName(n); got != want {
			t.Errorf("SizeName(%d) = %q, want %q", n, got, want)
		}
	}
}

// mountstatsSample is /proc/self/mountstats of the VM (Linux 6.1) with an
// RDMA mount, abridged.
const mountstatsSample = `device rootfs mounted on / with fstype rootfs
device 10.0.0.1:/export mounted on /mnt with fstype nfs statvers=1.1
	opts:	rw,vers=3,rsize=1048576
	xprt:	rdma 0 0 1 0 0 12 12 0 12 0 1 0 3 28932 136 0 0 0 0 0 0 0 0 11 3 0 0
device 10.0.0.1:/ mounted on /mnt/other with fstype nfs statvers=1.1
	xprt:	rdma 0 0 2 0 0 99 98 0 12 0 1 0 3 28932 136 0 0 0 0 0 0 0 0 11 7 0 0
`

func TestParseXprt(t *testing.T) {
	x, line, err := parseXprt(mountstatsSample, "/mnt")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"connect_count": 1, "sends": 12, "recvs": 12, "read_chunk_count": 1,
		"write_chunk_count": 0, "reply_chunk_count": 3, "total_rdma_request": 28932, "local_inv_needed": 3}
	for k, v := range want {
		if x[k] != v {
			t.Errorf("%s = %d, want %d", k, x[k], v)
		}
	}
	if !strings.HasPrefix(line, "xprt:") {
		t.Errorf("line %q", line)
	}
	if x, _, _ := parseXprt(mountstatsSample, "/mnt/other"); x["sends"] != 99 || x["local_inv_needed"] != 7 {
		t.Errorf("/mnt/other: %v", x)
	}
	if _, _, err := parseXprt(mountstatsSample, "/nowhere"); err == nil {
		t.Error("no error for a missing mount")
	}
	short := strings.Replace(mountstatsSample, " 11 3 0 0\n", " 11 3\n", 1)
	if _, _, err := parseXprt(short, "/mnt"); err == nil {
		t.Error("no error for a line of 25 numbers")
	}
}

func TestParseXprtTCP(t *testing.T) {
	ms := "device 10.0.0.1:/export mounted on /mnt/tcp with fstype nfs statvers=1.1\n" +
		"\txprt:\ttcp 871 1 1 0 0 5230 5230 0 6120 0 2 0 12\n"
	x, err := parseXprtTCP(ms, "/mnt/tcp")
	if err != nil || x["sends"] != 5230 || x["max_slots"] != 2 || x["pending_u"] != 12 {
		t.Errorf("%v %v", x, err)
	}
	if _, err := parseXprtTCP(mountstatsSample, "/mnt"); err == nil {
		t.Error("an RDMA mount parsed as TCP")
	}
}

func TestParseRxeStats(t *testing.T) {
	out := "link rxe1/1 sent_pkts 35 rcvd_pkts 27 duplicate_request 0 rdma_sends 14 rdma_recvs 13"
	m, err := parseRxeStats(out)
	if err != nil {
		t.Fatal(err)
	}
	if m["sent_pkts"] != 35 || m["rcvd_pkts"] != 27 || m["rdma_recvs"] != 13 {
		t.Errorf("%v", m)
	}
	for _, bad := range []string{"", "error: no device", "link rxe1/1 sent_pkts x"} {
		if _, err := parseRxeStats(bad); err == nil {
			t.Errorf("parseRxeStats(%q): no error", bad)
		}
	}
}

func TestParseProcStatCPU(t *testing.T) {
	// pid (comm with spaces) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
	stat := "4242 (rdma nfsd) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0"
	got, err := parseProcStatCPU(stat)
	if err != nil || got != 325 {
		t.Errorf("= %d, %v; want 325", got, err)
	}
	if _, err := parseProcStatCPU("4242 (x) S 1"); err == nil {
		t.Error("no error for a short stat")
	}
}

func TestLastInlineThresh(t *testing.T) {
	trace := `# tracer: nop
     kworker/0:0-7  [000] .....  10.759007: xprtrdma_inline_thresh: 10.0.0.2:35705 -> 10.0.0.1:20049 neg send/recv=4096/4096, calc send/recv=3780/3884
     kworker/1:1-9  [001] .....  12.000000: xprtrdma_inline_thresh: 10.0.0.2:35706 -> 10.0.0.1:20051 neg send/recv=1024/1024, calc send/recv=708/812
`
	s, r, ok := lastInlineThresh(trace)
	if !ok || s != 1024 || r != 1024 {
		t.Errorf("= %d/%d %v, want the last event's 1024/1024", s, r, ok)
	}
	if _, _, ok := lastInlineThresh("# tracer: nop\n"); ok {
		t.Error("found an event in an empty trace")
	}
}

func TestPerftestRow(t *testing.T) {
	out := `---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
 64      2000          41.20          1404.55      52.31               60.12          30.55           120.11                  900.40
---------------------------------------------------------------------------------------
`
	f := perftestRow(out)
	if len(f) < 6 || f[4] != "52.31" || f[5] != "60.12" {
		t.Errorf("%q", f)
	}
	if perftestRow("Correlation coefficient r^2: 0.5 < 0.9") != nil {
		t.Error("a row from a failed run")
	}
}

func TestAcceptedRE(t *testing.T) {
	line := `time=2026-11-23T20:00:00Z level=INFO msg="rpcrdma: accepted" role=responder remote=10.0.0.2:33000 peer_private_data=found peer="v1 send 4096 recv 4096 R" send_inline=4096 recv_inline=4096 send_with_invalidate=true`
	m := acceptedRE.FindStringSubmatch(line)
	if m == nil || m[1] != "found" || m[2] != "4096" || m[3] != "4096" || m[4] != "true" {
		t.Errorf("%q", m)
	}
}

// TestPathMTU: rxe's path MTU for a veth MTU, as rdma_rxe picks it (Linux
// 6.1: 1500 gives 1024, jumbo frames 4096).
func TestPathMTU(t *testing.T) {
	for mtu, want := range map[int]int{0: 1024, 1500: 1024, 9000: 4096, 2200: 2048, 2127: 1024, 2128: 2048, 576: 256, 65535: 4096} {
		if got := (Spec{MTU: mtu}).PathMTU(); got != want {
			t.Errorf("MTU %d: path MTU %d, want %d", mtu, got, want)
		}
	}
}

// TestParseMTU: -mtu reaches the spec, and is refused out of range or
// without the VM.
func TestParseMTU(t *testing.T) {
	s, _, err := parseBench([]string{"-mtu", "9000"}, &strings.Builder{})
	if err != nil || s.MTU != 9000 || s.PathMTU() != 4096 {
		t.Fatalf("-mtu 9000: MTU %d, path MTU %d, %v", s.MTU, s.PathMTU(), err)
	}
	if s, _, err := parseBench(nil, &strings.Builder{}); err != nil || s.MTU != 0 || s.PathMTU() != 1024 {
		t.Fatalf("default: MTU %d, path MTU %d, %v", s.MTU, s.PathMTU(), err)
	}
	for _, args := range [][]string{{"-mtu", "100"}, {"-mtu", "70000"}, {"-provider", "soft", "-mtu", "9000"}} {
		if _, _, err := parseBench(args, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "MTU") {
			t.Errorf("%q: %v, want an MTU error", args, err)
		}
	}
}
