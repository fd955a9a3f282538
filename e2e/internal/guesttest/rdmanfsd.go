package guesttest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RdmaNfsdBinary is where the host test puts cmd/rdma-nfsd in the VM
// (vmtest.GuestTests.Binaries).
const RdmaNfsdBinary = "/host/rdma-nfsd"

// RdmaNfsd is rdma-nfsd run as a child process of the test, its output
// appended to the file Log. The test goroutine owns it.
type RdmaNfsd struct {
	Binary string   // "" is RdmaNfsdBinary
	Args   []string // its flags
	Log    string   // the log file

	cmd    *exec.Cmd
	starts int // how many "serving" lines Log should have
}

// StartRdmaNfsd starts s with a fresh Log (Start) and stops it at the end
// of the test (Stop), logging the end of its log if the test failed.
func StartRdmaNfsd(t testing.TB, s *RdmaNfsd) *RdmaNfsd {
	t.Helper()
	_ = os.Remove(s.Log)
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			log, _ := os.ReadFile(s.Log)
			t.Logf("rdma-nfsd log (%s, last lines):\n%s", s.Log, Tail(string(log), 150))
		}
	})
	s.Start(t)
	return s
}

// Start runs the server and waits up to 30 s for its "rdma-nfsd: serving"
// line (one more than Log had: a restart appends to it); it fails t if the
// server exits or does not serve by then.
func (s *RdmaNfsd) Start(t testing.TB) {
	t.Helper()
	if !s.Launch(t) {
		log, _ := os.ReadFile(s.Log)
		t.Fatalf("rdma-nfsd exited at start:\n%s", log)
	}
}

// Launch runs the server as Start does, but reports false, the server
// waited for and Log saying why, if it exits before it serves; it fails t
// only if the server neither serves nor exits within 30 s.
func (s *RdmaNfsd) Launch(t testing.TB) bool {
	t.Helper()
	bin := s.Binary
	if bin == "" {
		bin = RdmaNfsdBinary
	}
	logf, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	s.cmd = exec.Command(bin, s.Args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		t.Fatalf("starting %s: %v", bin, err)
	}
	s.starts++
	for deadline := time.Now().Add(30 * time.Second); ; {
		log, _ := os.ReadFile(s.Log)
		if strings.Count(string(log), "rdma-nfsd: serving") >= s.starts {
			t.Logf("rdma-nfsd %s (pid %d) serves", strings.Join(s.Args, " "), s.cmd.Process.Pid)
			return true
		}
		if exited(s.cmd.Process.Pid) {
			_ = s.cmd.Wait()
			s.cmd = nil
			return false
		}
		if time.Now().After(deadline) {
			t.Fatalf("rdma-nfsd does not serve after 30 s:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exited reports whether the child pid has exited (a zombie, not yet
// waited for).
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err != nil || strings.Contains(string(b), ") Z ")
}

// Pid is the running server's process id, 0 if it is not running.
func (s *RdmaNfsd) Pid() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Signal sends sig to the running server.
func (s *RdmaNfsd) Signal(sig os.Signal) error {
	if s.cmd == nil {
		return os.ErrProcessDone
	}
	return s.cmd.Process.Signal(sig)
}

// Stop ends the server with SIGTERM (a clean shutdown: its registrations
// with rpcbind undone, its CPU profile written), SIGKILL after 10 s. A
// server not running is left alone.
func (s *RdmaNfsd) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// Kill ends the server with SIGKILL: no clean shutdown.
func (s *RdmaNfsd) Kill() error {
	if s.cmd == nil {
		return os.ErrProcessDone
	}
	err := s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
	return err
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
