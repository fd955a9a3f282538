package vmtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		env         string
		short, qemu bool
		timeout     time.Duration
		want        action
	}{
		{"1", false, true, 0, run},
		{"1", true, true, 0, run},
		{"1", false, true, 10 * time.Minute, run}, // required: the caller chose
		{"1", false, false, 0, fail},
		{"0", false, true, 0, skip},
		{"0", false, false, 0, skip},
		{"", false, true, 0, run},
		{"", false, true, 90 * time.Minute, run},
		{"", false, true, 30 * time.Minute, skip}, // under MinAutoTimeout
		{"", false, true, MinAutoTimeout, run},
		{"", false, true, 10 * time.Minute, skip}, // go test's default
		{"", true, true, 0, skip},
		{"", false, false, 0, skip},
	} {
		got, msg := decide(c.env, c.short, c.qemu, c.timeout)
		if got != c.want {
			t.Errorf("decide(%q, short=%v, qemu=%v, timeout=%v) = %v (%s), want %v", c.env, c.short, c.qemu, c.timeout, got, msg, c.want)
		}
		if got != run && msg == "" {
			t.Errorf("decide(%q, short=%v, qemu=%v, timeout=%v): no message", c.env, c.short, c.qemu, c.timeout)
		}
	}
	if _, msg := decide("", false, true, 10*time.Minute); !strings.Contains(msg, "-timeout 10m0s") || !strings.Contains(msg, "RPCRDMA_VM=1") {
		t.Errorf("skip message for a short -timeout = %q", msg)
	}
	if _, msg := decide("", false, false, 0); msg != SkipMessage {
		t.Errorf("skip message without qemu = %q", msg)
	}
}

func TestResultLines(t *testing.T) {
	r := &Result{Console: []byte("a\r\nb\r\n[ 1.0] c\r\n")}
	if got := r.Lines(); !reflect.DeepEqual(got, []string{"a", "b", "[ 1.0] c"}) {
		t.Errorf("Lines = %q", got)
	}
	if got := r.Tail(2); got != "b\n[ 1.0] c" {
		t.Errorf("Tail(2) = %q", got)
	}
	if got := r.Tail(10); got != "a\nb\n[ 1.0] c" {
		t.Errorf("Tail(10) = %q", got)
	}
	r = &Result{Console: []byte("FLOOD one\r\n    x_test.go:9: FLOOD two 2\r\nFLOODED\r\nFLOOD\r\n")}
	if got := r.Tagged("FLOOD"); !reflect.DeepEqual(got, []string{"one", "two 2"}) {
		t.Errorf("Tagged = %q", got)
	}
}

// udpFrame builds an Ethernet/IPv4/UDP frame.
func udpFrame(src, dst string, sport, dport uint16, payload []byte) []byte {
	f := make([]byte, 14+20+8+len(payload))
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(payload)))
	ip[8], ip[9] = 64, 17
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(ip[12:], s[:])
	copy(ip[16:], d[:])
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	copy(udp[8:], payload)
	return f
}

// pcapFile builds a little-endian microsecond pcap file of Ethernet frames.
func pcapFile(frames ...[]byte) []byte {
	var b bytes.Buffer
	for _, v := range []uint32{0xa1b2c3d4, 0x00040002, 0, 0, 262144, 1} {
		binary.Write(&b, binary.LittleEndian, v)
	}
	for _, f := range frames {
		for _, v := range []uint32{1, 2, uint32(len(f)), uint32(len(f))} {
			binary.Write(&b, binary.LittleEndian, v)
		}
		b.Write(f)
	}
	return b.Bytes()
}

func TestParsePCAP(t *testing.T) {
	roce := udpFrame("10.0.0.2", "10.0.0.1", 49152, 4791, []byte{0x04, 0x40})
	other := make([]byte, 60) // not IPv4
	frames, err := ParsePCAP(pcapFile(roce, other))
	if err != nil || len(frames) != 2 {
		t.Fatalf("ParsePCAP: %d frames, %v", len(frames), err)
	}
	u, ok := frames[0].UDPv4()
	want := UDP{Src: netip.MustParseAddrPort("10.0.0.2:49152"), Dst: netip.MustParseAddrPort("10.0.0.1:4791"), Payload: []byte{0x04, 0x40}}
	if !ok || !reflect.DeepEqual(u, want) {
		t.Errorf("UDPv4 = %+v, %v; want %+v", u, ok, want)
	}
	if _, ok := frames[1].UDPv4(); ok {
		t.Error("a non-IPv4 frame decoded as UDP")
	}
}

// TestParsePCAPTruncated checks that every truncated prefix of a valid file
// fails cleanly or yields only complete frames, and that every truncated
// frame is refused by UDPv4.
func TestParsePCAPTruncated(t *testing.T) {
	frame := udpFrame("10.0.0.1", "10.0.0.2", 4791, 4791, []byte("payload"))
	file := pcapFile(frame)
	for n := 0; n < len(file); n++ {
		frames, err := ParsePCAP(file[:n])
		if n > 24 && !errors.Is(err, ErrPCAP) {
			t.Errorf("prefix %d: err %v, want ErrPCAP", n, err)
		}
		if len(frames) != 0 {
			t.Errorf("prefix %d: %d frames from a truncated record", n, len(frames))
		}
	}
	for n := 0; n < len(frame); n++ {
		if _, ok := (Frame{Data: frame[:n]}).UDPv4(); ok {
			t.Errorf("frame prefix %d decoded as UDP", n)
		}
	}
	bad := pcapFile(frame)
	binary.LittleEndian.PutUint32(bad[20:], 101) // raw IP link type
	if _, err := ParsePCAP(bad); !errors.Is(err, ErrPCAP) {
		t.Errorf("link type 101: %v, want ErrPCAP", err)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"-test.run=TestX": "-test.run=TestX", "": "''", "a b": "'a b'", "it's": `'it'\''s'`, "$(x)": "'$(x)'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGuestOutput(t *testing.T) {
	r := &Result{Console: []byte("[    1.234] rdma_rxe: loaded\r\n=== RUN   TestX\r\n--- PASS: TestX (0.00s)\r\n[x]\r\n" +
		"[rxevm 0.1s] y\r\n[12345.000001] z\r\nrxevm: exit status 0\r\n[    9.5] reboot: Power down\r\nafter\r\n")}
	if got := guestOutput(r); got != "=== RUN   TestX\n--- PASS: TestX (0.00s)\n[x]\n[rxevm 0.1s] y\nrxevm: exit status 0" {
		t.Errorf("guestOutput = %q", got)
	}
}

// logTB records what a test logs.
type logTB struct {
	testing.TB
	name string
	logs []string
}

func (l *logTB) Name() string                 { return l.name }
func (l *logTB) Logf(format string, a ...any) { l.logs = append(l.logs, fmt.Sprintf(format, a...)) }

// TestSaveConsole: a failed VM test logs the tail of what the guest
// printed, not of the console: the guest kernel's messages after the
// test's output (here an RCU stall report, as a busy host causes, with
// the kernel's Debian version in it) and the power-off are left out of
// the log, and the whole console is in the file.
func TestSaveConsole(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RPCRDMA_VM_LOGDIR", dir)
	var c strings.Builder
	c.WriteString("[    0.512345] Linux version 6.1.0-56-amd64 (debian-kernel@lists.debian.org)\r\n")
	c.WriteString("rxevm: WARNING: modprobe rdma_rxe failed\r\n")
	c.WriteString("=== RUN   TestFlood\r\n")
	for i := range 100 {
		fmt.Fprintf(&c, "    flood_test.go:%d: guest line %d\r\n", i, i)
	}
	c.WriteString("--- FAIL: TestFlood (12.00s)\r\nFAIL\r\n")
	for i := range 80 {
		fmt.Fprintf(&c, "[   %d.%06d] rcu: INFO: rcu_preempt self-detected stall; CPU: 1 PID: 7 Not tainted 6.1.0-56-amd64 #1 Debian 6.1.192-2\r\n", 40+i, i)
	}
	c.WriteString("rxevm: exit status 1\r\n[  130.000001] reboot: Power down\r\n")
	r := &Result{Console: []byte(c.String())}
	tb := &logTB{TB: t, name: "TestX/sub"}
	saveConsole(tb, r)
	if len(tb.logs) != 1 {
		t.Fatalf("logged %q, want one message", tb.logs)
	}
	got := tb.logs[0]
	for _, want := range []string{"guest line 99", "--- FAIL: TestFlood", "FAIL\nrxevm: exit status 1", "guest line 43\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("logged console lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"rcu", "Debian", "Power down", "guest line 42\n", "\r"} {
		if strings.Contains(got, not) {
			t.Errorf("logged console has %q:\n%s", not, got)
		}
	}
	saved, err := os.ReadFile(filepath.Join(dir, "rxevm-TestX_sub-console.log"))
	if err != nil || !bytes.Equal(saved, r.Console) {
		t.Errorf("saved console: %v, %d bytes of %d", err, len(saved), len(r.Console))
	}
	if !strings.Contains(got, filepath.Join(dir, "rxevm-TestX_sub-console.log")) {
		t.Errorf("the log does not name the saved file:\n%s", got)
	}
}

// TestTestTimeout reads the test binary's -timeout flag.
func TestTestTimeout(t *testing.T) {
	f := flag.Lookup("test.timeout")
	if f == nil {
		t.Fatal("no test.timeout flag in a test binary")
	}
	old := f.Value.String()
	t.Cleanup(func() { _ = flag.Set("test.timeout", old) })
	for _, v := range []string{"17m", "0s", "45m"} {
		if err := flag.Set("test.timeout", v); err != nil {
			t.Fatal(err)
		}
		want, _ := time.ParseDuration(v)
		if got := testTimeout(); got != want {
			t.Errorf("-timeout %s: testTimeout() = %v", v, got)
		}
	}
}

// TestGuestFailures: each failed test comes with its own output, a parent
// of a failed subtest on its own line, a panic with what follows it.
func TestGuestFailures(t *testing.T) {
	out := strings.Join([]string{
		"=== RUN   TestOK",
		"    ok_test.go:1: fine",
		"--- PASS: TestOK (0.00s)",
		"=== RUN   TestBad",
		"    bad_test.go:7: got 1, want 2",
		"--- FAIL: TestBad (0.01s)",
		"=== RUN   TestParent",
		"=== RUN   TestParent/sub",
		"    sub_test.go:9: broken",
		"--- FAIL: TestParent (0.02s)",
		"    --- FAIL: TestParent/sub (0.01s)",
		"        sub_test.go:3: after the line",
		"=== RUN   TestPanics",
		"panic: boom",
		"goroutine 1 [running]:",
	}, "\n")
	got := guestFailures(out)
	want := []string{
		"--- FAIL: TestBad (0.01s)\n=== RUN   TestBad\n    bad_test.go:7: got 1, want 2\n--- FAIL: TestBad (0.01s)",
		"--- FAIL: TestParent (0.02s)",
		"--- FAIL: TestParent/sub (0.01s)\n=== RUN   TestParent/sub\n    sub_test.go:9: broken\n--- FAIL: TestParent (0.02s)\n" +
			"    --- FAIL: TestParent/sub (0.01s)\n        sub_test.go:3: after the line",
		"panic: boom\ngoroutine 1 [running]:",
	}
	if len(got) != len(want) {
		t.Fatalf("guestFailures = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("failure %d = %q, want %q", i, got[i], want[i])
		}
	}
}
